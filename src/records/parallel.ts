import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import type { RowEncoding } from '../schema/copy-text.js';
import { boundedLines, isLongLine, type LongLine, MAX_RECORD_BYTES } from './record-size.js';
import type { ShapePlan } from './tables.js';
import type { FileFormat, PackedBatch } from './types.js';
import { fromWire, type WireBatch } from './wire.js';

/**
 * Parsing in worker threads. Parsing and decoding cost several times what writing a row costs:
 * each result file is parsed in a worker while the main thread writes the previous batch.
 * Batches come back in file order; workers never run more than a bounded number of batches
 * ahead, so memory stays bounded whatever the file size.
 *
 * Protocol, a file streamed to one worker (a pool of one): main -> worker `start`, then `chunk`s
 * (bytes, transferred, not copied) and `end`; worker -> main `consumed` per chunk (flow control
 * of the input), `batch`es, then `done` or `error`. Main sends `ack` as it takes each batch.
 * A file shared by several workers (see ParserPool): main -> each worker `blocks` with the
 * file's job number, then `block`s of whole records (transferred) with the job number and their
 * first line number, and `drop` when the file is done with (read to its end or given up);
 * worker -> main `parsed` per block (or `error`), with the job number, where its block's use
 * ended if not at its end (`usedLines`) and, for CSV, the header it read. A worker may hold
 * blocks of several files at once (files loaded at once, each over its own connection): the
 * job number tells them apart, and keeps a dropped block's late answer away from other files.
 */
export interface ParseRequest {
  format: FileFormat;
  /** How records become rows: plain data, cloned into the worker. */
  plan: ShapePlan;
  batchSize: number;
  /**
   * How far a worker may run ahead of the batches taken: batches of `batchSize` rows for a file
   * streamed to it; blocks for a file cut into blocks, besides one per worker.
   */
  maxBuffered: number;
  /**
   * A file parsed by several workers: bytes a block holds at least (tests make them small, to
   * cut a small file often).
   */
  blockBytes?: number;
  /**
   * Records longer than this are rejected, never gathered whole (record-size.ts); CSV text this
   * long with no record end is read as one record (an unclosed quote, see csv.ts).
   */
  maxRecordBytes?: number;
  /**
   * The job's rows in the destination's encoding (see schema/copy-text.ts) where it has one,
   * with only the columns `keep` names also as values (those the writing thread reads: keys).
   */
  encoding?: { name: RowEncoding; keep: string[] };
}

export type ToWorker =
  | { type: 'start'; request: ParseRequest }
  | { type: 'chunk'; data: Uint8Array }
  | { type: 'end' }
  | { type: 'ack' }
  | { type: 'blocks'; request: ParseRequest; job: number }
  | { type: 'drop'; job: number }
  | {
      type: 'block';
      job: number;
      seq: number;
      firstLine: number;
      data: Uint8Array;
      /**
       * The file's last block, or the last before a line beyond the limit: its last record ends
       * with it, closed or not.
       */
      final: boolean;
      /** A CSV block with no record end in it (an unclosed quote), read as one record. */
      forced: boolean;
      /**
       * Set for a line longer than the limit, skipped unread: its size in bytes. The block is
       * its first bytes, to be kept as a reject.
       */
      tooLong?: number;
      /** The CSV file's header, once a block has read it. */
      columns: string[] | undefined;
    };

/** A block's rows, in a message of its own (see `ToMain`). */
export interface ParsedBlock {
  type: 'parsed';
  job: number;
  seq: number;
  batch: WireBatch;
  /**
   * Set when the block's end was not used: a broken CSV record moved where the records after it
   * end, so they are cut again, with the blocks that follow, from just past this many newlines
   * of the block (a line boundary: counted in bytes, whatever the text's encoding errors).
   */
  usedLines?: number;
  /** The CSV header, when this block read it (it was sent none). */
  columns?: string[];
}

export type ToMain =
  | { type: 'consumed' }
  | { type: 'batch'; batch: WireBatch }
  | ParsedBlock
  | { type: 'done' }
  | { type: 'error'; message: string; name: string; job?: number };

/**
 * A file is cut into blocks of whole records of at least this size (a block ends with the last
 * record end of the network chunk that reaches it), each parsed into one batch, and its blocks
 * are handed to the pool's workers in turn. This is the default; a run takes its destination's
 * `batchBytes`. Small blocks (30 to 40 property records) keep each batch's objects in the young
 * generation, collected cheaply: faster and smaller than 1 MB blocks (docs/speed.md).
 */
export const BLOCK_BYTES = 64 << 10;

/** Chunks sent to a worker and not yet parsed; reading the source pauses beyond this. */
const MAX_CHUNKS_IN_FLIGHT = 16;

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(
  FROM_SOURCE ? './parse-worker.ts' : './parse-worker.js',
  import.meta.url,
);

/**
 * A parse worker holds a few batches at a time; a small heap keeps its garbage collected early,
 * so the process stays small whatever the download's size. (A process started with V8's
 * `--max-semi-space-size`, as bin/sluice.js is, has that bound on every young generation.)
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 16 };

/**
 * Built code runs the worker file directly. Run from source (tests, `npm run demo`), the worker
 * first registers tsx's loader in its own thread, as loaders are per thread.
 */
function startWorker(): Worker {
  if (!FROM_SOURCE) return new Worker(WORKER_URL, { resourceLimits: WORKER_LIMITS });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}); });`;
  return new Worker(code, { eval: true, resourceLimits: WORKER_LIMITS });
}

/** A file being parsed: its batches, in order, and a way to stop early. */
export interface ParseJob {
  batches: AsyncGenerator<PackedBatch>;
  /**
   * Stops reading the file. A worker it was streamed to is terminated (it was left mid-file);
   * workers given it in blocks are told to drop it, and go on with other files.
   */
  cancel(): void;
}

/** Files handed to workers in blocks so far: each one's number tells its answers apart. */
let blockJobs = 0;

/**
 * One worker: a file streamed to it alone, or blocks of one or more files shared with other
 * workers.
 */
class ParseWorker {
  readonly #worker = startWorker();
  /** A file is streamed to it. */
  #streaming = false;
  #dead = false;

  constructor() {
    // A worker that stopped (out of memory, say) fails what it held and takes no more.
    this.#worker.once('exit', () => {
      this.#dead = true;
    });
  }

  /** Free for a file streamed to it (a pool streams files or hands out blocks, never both). */
  get available(): boolean {
    return !this.#streaming && !this.#dead;
  }

  get dead(): boolean {
    return this.#dead;
  }

  /** Parses `source` in the worker; the batches are read from the returned iterator. */
  parse(source: Readable, request: ParseRequest): ParseJob {
    this.#streaming = true;
    const worker = this.#worker;
    const queue: ToMain[] = [];
    let wake: (() => void) | undefined;
    let chunksInFlight = 0;
    let chunkWake: (() => void) | undefined;
    let failed: Error | undefined;
    let stopped = false;
    const signal = () => {
      wake?.();
      wake = undefined;
    };
    const onMessage = (message: ToMain) => {
      if (message.type === 'consumed') {
        chunksInFlight--;
        chunkWake?.();
        chunkWake = undefined;
        return;
      }
      queue.push(message);
      signal();
    };
    const onError = (error: Error) => {
      failed = error;
      signal();
      chunkWake?.();
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.postMessage({ type: 'start', request } satisfies ToWorker);

    // Feeds the file to the worker as it arrives, pausing while the worker is behind.
    const pump = (async () => {
      try {
        for await (const chunk of source as AsyncIterable<Buffer>) {
          if (stopped) break;
          const data = new Uint8Array(chunk.byteLength);
          data.set(chunk);
          chunksInFlight++;
          worker.postMessage({ type: 'chunk', data } satisfies ToWorker, [data.buffer]);
          while (chunksInFlight >= MAX_CHUNKS_IN_FLIGHT && !failed && !stopped) {
            await new Promise<void>((r) => (chunkWake = r));
          }
        }
        if (!stopped) worker.postMessage({ type: 'end' } satisfies ToWorker);
      } catch (error) {
        failed ??= error as Error;
        signal();
      }
    })();

    let finished = false;
    const release = () => {
      if (stopped) return;
      stopped = true;
      worker.off('message', onMessage);
      worker.off('error', onError);
      source.destroy();
      chunkWake?.();
      if (!finished) {
        this.#dead = true;
        void worker.terminate();
      }
      this.#streaming = false;
    };

    const batches = (async function* () {
      try {
        for (;;) {
          if (failed) throw failed;
          if (stopped) return; // cancelled
          const message = queue.shift();
          if (message === undefined) {
            await new Promise<void>((r) => (wake = r));
            continue;
          }
          if (message.type === 'done') {
            finished = true;
            break;
          }
          if (message.type === 'error') {
            const error = new Error(message.message);
            error.name = message.name;
            throw error;
          }
          if (message.type === 'batch') {
            worker.postMessage({ type: 'ack' } satisfies ToWorker);
            yield fromWire(message.batch);
          }
        }
        await pump;
        if (failed) throw failed;
      } finally {
        release();
      }
    })();
    return { batches, cancel: release };
  }

  /**
   * Takes blocks of one file (see `ParserPool`), its job `job`: `send` hands one over,
   * `onParsed` gets its rows. `release()` tells the worker the file is done with: blocks of it
   * still on their way are skipped, and their answers, if any, ignored.
   */
  blocks(
    request: ParseRequest,
    job: number,
    onParsed: (message: ParsedBlock) => void,
    onError: (error: Error) => void,
  ): {
    send(block: Omit<Extract<ToWorker, { type: 'block' }>, 'type' | 'job'>): void;
    release(): void;
  } {
    const worker = this.#worker;
    const onMessage = (message: ToMain) => {
      // A block of an earlier file, dropped and parsed all the same, answers late: not ours.
      if (message.type === 'parsed') {
        if (message.job === job) onParsed(message);
      } else if (message.type === 'error' && (message.job ?? job) === job) {
        const error = new Error(message.message);
        error.name = message.name;
        onError(error);
      }
    };
    const onExit = () => onError(new Error('a parse worker stopped in the middle of a file'));
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    worker.postMessage({ type: 'blocks', request, job } satisfies ToWorker);
    let released = false;
    return {
      send(block) {
        worker.postMessage({ type: 'block', job, ...block } satisfies ToWorker, [
          block.data.buffer as ArrayBuffer,
        ]);
      },
      release: () => {
        if (released) return;
        released = true;
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        if (!this.#dead) worker.postMessage({ type: 'drop', job } satisfies ToWorker);
      },
    };
  }

  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }
}

/**
 * A few parse workers for one job's files; closed when the job is loaded.
 *
 * With one worker, a file is streamed to it. With several, a file is parsed by all of them at
 * once: the main thread cuts it into blocks of whole records (NDJSON lines; CSV records end at
 * a newline outside quotes, which a count of quotes tells), hands them out in turn, and takes
 * their batches back in file order, never more than `maxBuffered` blocks, and one per worker,
 * sent and not taken. So a file is parsed on as many cores as there are workers, and each file
 * still goes to the database in one transaction, its batches in order.
 *
 * A broken CSV record (an unbalanced quote) moves where the records after it end: the worker
 * that reads it says how much of its block it did not use, and the main thread cuts the file
 * again from there, dropping what was parsed of the blocks after it. So the rows and rejects are
 * those of one thread reading the file (test/unit/records/parallel.test.ts).
 *
 * Files parsed at once (`files` > 1: files loaded at once, each over its own connection) share
 * the workers: each worker takes blocks of all of them, in the order they come, so each file
 * goes on at the pace its writer takes its batches.
 */
export class ParserPool {
  readonly #workers: ParseWorker[] = [];

  constructor(
    readonly size: number,
    readonly files = 1,
  ) {}

  /** The live workers, as many as the pool may have. */
  #live(): ParseWorker[] {
    for (let i = this.#workers.length - 1; i >= 0; i--) {
      if (this.#workers[i]!.dead) this.#workers.splice(i, 1);
    }
    while (this.#workers.length < this.size) this.#workers.push(new ParseWorker());
    return this.#workers;
  }

  /** One worker for one file at a time: the file is streamed to it. Otherwise in blocks. */
  get streams(): boolean {
    return this.size === 1 && this.files === 1;
  }

  parse(source: Readable, request: ParseRequest): ParseJob {
    if (this.streams) {
      const free = this.#live().find((w) => w.available);
      if (free === undefined) throw new Error('the parse worker is busy');
      return free.parse(source, request);
    }
    return parseInBlocks(source, request, this.#live());
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
    this.#workers.length = 0;
  }
}

/** Parses a file on several workers at once, in blocks of whole records (see ParserPool). */
function parseInBlocks(source: Readable, request: ParseRequest, workers: ParseWorker[]): ParseJob {
  const csv = request.format === 'csv';
  const blockBytes = request.blockBytes ?? BLOCK_BYTES;
  const maxRecordBytes = request.maxRecordBytes ?? MAX_RECORD_BYTES;
  const parsed = new Map<number, ParsedBlock>();
  /**
   * Blocks sent and not yet taken: where each ends in the file, its first line and, for CSV, its
   * bytes, to be cut again if a broken record before it moves where records end (or the line
   * beyond the limit it stands for, sent again as it was).
   */
  const inFlight = new Map<
    number,
    { endsAt: number; firstLine: number; data?: Buffer; long?: LongLine }
  >();
  let failed: Error | undefined;
  // The reader of the file waits for room, the taker of batches for the next one.
  let wakeReader: (() => void) | undefined;
  let wakeTaker: (() => void) | undefined;
  const signal = () => {
    wakeReader?.();
    wakeTaker?.();
    wakeReader = undefined;
    wakeTaker = undefined;
  };
  const fail = (error: Error) => {
    failed ??= error;
    signal();
  };
  /** The CSV header, once a block has read it: the blocks after wait for it. */
  let columns: string[] | undefined;
  let sent = 0;
  let taken = 0;
  const job = ++blockJobs;
  const lanes = workers.map((w) =>
    w.blocks(
      request,
      job,
      (message) => {
        if (message.seq < taken) return; // cut again after a broken record: not wanted
        if (message.columns !== undefined) columns ??= message.columns;
        parsed.set(message.seq, message);
        signal();
      },
      fail,
    ),
  );
  // Enough blocks for every worker to have one, and a few parsed ones waiting, whatever the count.
  const maxInFlight = Math.max(1, request.maxBuffered) + workers.length;
  let line = 1;
  let bytes = 0;
  let stopped = false;
  let ended = false;
  let pumped = false;
  /** Bytes read and not yet sent, and where records end in them. */
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /**
   * A line beyond the limit that follows the pending bytes: it goes once they have gone (the
   * file is read no further meanwhile), as a block of its own.
   */
  let long: LongLine | undefined;
  const ends = new RecordEnds(csv);
  /** A CSV block is out to read the header: the next ones wait for it. */
  const awaitingHeader = () => csv && columns === undefined && sent > taken;

  const send = (block: Buffer, final: boolean, forced: boolean) => {
    const seq = sent++;
    const firstLine = line;
    line += countNewlines(block);
    bytes += block.byteLength;
    inFlight.set(seq, { endsAt: bytes, firstLine, ...(csv ? { data: block } : {}) });
    let text = block;
    if (seq === 0 && block[0] === 0xef && block[1] === 0xbb && block[2] === 0xbf) {
      text = block.subarray(3); // a byte order mark is not part of the first record
    }
    // An NDJSON block of its own memory is handed over, not copied (after this, `block` is
    // empty: its memory belongs to the worker). A CSV block is copied: it may be cut again.
    const data =
      !csv && text.byteOffset === 0 && text.byteLength === text.buffer.byteLength
        ? new Uint8Array(text.buffer, 0, text.byteLength)
        : Uint8Array.from(text);
    lanes[seq % lanes.length]!.send({
      seq,
      firstLine,
      data,
      final,
      forced,
      columns,
    });
  };

  /** A line beyond the limit, as a block of its first bytes that a worker keeps as a reject. */
  const sendLong = (skipped: LongLine) => {
    const seq = sent++;
    const firstLine = line++;
    bytes += skipped.span;
    inFlight.set(seq, { endsAt: bytes, firstLine, long: skipped });
    lanes[seq % lanes.length]!.send({
      seq,
      firstLine,
      data: Uint8Array.from(skipped.head),
      final: false,
      forced: false,
      columns,
      tooLong: skipped.bytes,
    });
  };

  const add = (chunk: Buffer) => {
    pending.push(chunk);
    pendingBytes += chunk.byteLength;
    ends.add(chunk);
  };

  /** Sends the blocks the pending bytes hold, and at the end of the file what is left. */
  const cut = (atEnd = ended) => {
    while (!stopped && !failed && !awaitingHeader()) {
      if (long !== undefined) {
        // The bytes before a line beyond the limit end where it begins, their last record too.
        if (pendingBytes > 0) {
          const before = Buffer.concat(pending);
          pending = [];
          pendingBytes = 0;
          ends.reset();
          send(before, true, false);
          continue; // the header may be in it: the line waits for it
        }
        sendLong(long);
        long = undefined;
        continue;
      }
      if (atEnd) {
        if (pendingBytes > 0) {
          const rest = Buffer.concat(pending);
          pending = [];
          pendingBytes = 0;
          ends.reset();
          send(rest, true, false);
        }
        return;
      }
      if (pendingBytes < blockBytes) return;
      let end = ends.last;
      let forced = false;
      if (end < 0) {
        if (!csv || pendingBytes < maxRecordBytes) return;
        end = pendingBytes;
        forced = true;
      }
      const all = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
      pending = end < all.byteLength ? [all.subarray(end)] : [];
      pendingBytes = all.byteLength - end;
      // After a record read whole for want of an end, quotes are counted afresh (as csv.ts does).
      if (forced) ends.reset();
      else ends.cutAt(end);
      send(all.subarray(0, end), false, forced);
    }
  };

  /**
   * Block `seq` used only its first `used` bytes: the file is cut again from there, with the
   * blocks sent after it (their batches are dropped) and the bytes not yet sent.
   */
  const cutAgain = (seq: number, used: number) => {
    const block = inFlight.get(seq)!;
    const data = block.data!;
    const again: (Buffer | LongLine)[] = [data.subarray(used)];
    for (let s = seq + 1; s < sent; s++) {
      const later = inFlight.get(s)!;
      again.push(later.long ?? later.data!);
      inFlight.delete(s);
    }
    line = block.firstLine + countNewlines(data.subarray(0, used));
    bytes = block.endsAt - data.byteLength + used;
    taken = sent;
    parsed.clear();
    // Given back piece by piece, so that blocks keep their size (the end of the file waits);
    // a line beyond the limit not yet sent stays after them all.
    again.push(...pending);
    pending = [];
    pendingBytes = 0;
    ends.reset();
    const waiting = long;
    long = undefined;
    for (const piece of again) {
      if (isLongLine(piece)) long = piece;
      else add(piece);
      cut(false);
    }
    long = waiting;
  };

  const pump = (async () => {
    try {
      // A line beyond the limit comes as a LongLine, in place of its bytes.
      for await (const chunk of boundedLines(source as AsyncIterable<Buffer>, maxRecordBytes)) {
        // After a failure nothing more is read: the rest of the file is not wanted.
        if (stopped || failed) return;
        if (isLongLine(chunk)) long = chunk;
        else add(chunk);
        cut();
        while (
          (sent - taken >= maxInFlight ||
            long !== undefined ||
            (awaitingHeader() && pendingBytes >= blockBytes)) &&
          !failed &&
          !stopped
        ) {
          await new Promise<void>((r) => (wakeReader = r));
        }
        if (stopped || failed) return;
      }
      ended = true;
      cut();
    } catch (error) {
      fail(error as Error);
    } finally {
      pumped = true;
      signal();
    }
  })();

  const release = () => {
    if (stopped) return;
    stopped = true;
    source.destroy();
    signal();
    for (const lane of lanes) lane.release();
  };

  const batches = (async function* () {
    try {
      for (;;) {
        if (failed) throw failed;
        if (stopped) return; // cancelled
        const message = parsed.get(taken);
        if (message !== undefined) {
          const seq = taken++;
          parsed.delete(seq);
          const { usedLines } = message;
          const batch = fromWire(message.batch);
          const block = inFlight.get(seq)!;
          if (usedLines === undefined) batch.bytesRead = block.endsAt;
          else {
            const used = afterNewlines(block.data!, usedLines);
            batch.bytesRead = block.endsAt - block.data!.byteLength + used;
            cutAgain(seq, used);
          }
          inFlight.delete(seq);
          cut();
          signal();
          yield batch;
          continue;
        }
        if (pumped && taken === sent) {
          cut(); // what waited for the header
          if (taken === sent) break;
          continue;
        }
        await new Promise<void>((r) => (wakeTaker = r));
      }
      await pump;
      if (failed) throw failed;
    } finally {
      release();
    }
  })();
  return { batches, cancel: release };
}

/**
 * Where records end in a file's bytes as they arrive: just past each newline, outside quotes
 * for CSV (a doubled quote closes and opens again: the same). Bytes of a UTF-8 character are
 * never a quote or a newline, so counting bytes counts characters. `last` is the offset, in
 * the bytes not yet sent, just past the last record end, or -1.
 */
class RecordEnds {
  last = -1;
  #inQuotes = false;
  #scanned = 0;

  constructor(readonly quotes: boolean) {}

  add(chunk: Buffer): void {
    const base = this.#scanned;
    this.#scanned += chunk.byteLength;
    if (!this.quotes) {
      const newline = chunk.lastIndexOf(10);
      if (newline >= 0) this.last = base + newline + 1;
      return;
    }
    // One pass over the bytes: CSV cells of JSON hold many doubled quotes, and a search call
    // per quote cost more than looking at each byte. Through a plain Uint8Array with its length
    // read once: a Buffer's `byteLength` getter in the loop made it 8 times slower (80 MB/s
    // against 650: at a million CSV records, 20 s of the main thread).
    const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const length = bytes.length;
    let quoted = this.#inQuotes ? 1 : 0;
    let last = -1;
    for (let i = 0; i < length; i++) {
      const c = bytes[i]!;
      if (c === 34) quoted ^= 1;
      else if (c === 10 && quoted === 0) last = i;
    }
    if (last >= 0) this.last = base + last + 1;
    this.#inQuotes = quoted === 1;
  }

  /** The bytes before `offset` were sent: offsets now count from there. */
  cutAt(offset: number): void {
    this.#scanned -= offset;
    this.last = -1;
  }

  reset(): void {
    this.last = -1;
    this.#inQuotes = false;
    this.#scanned = 0;
  }
}

/** The offset just past the `count`th newline of `block` (0 for none). */
function afterNewlines(block: Buffer, count: number): number {
  let at = 0;
  for (let n = 0; n < count; n++) at = block.indexOf(10, at) + 1;
  return at;
}

function countNewlines(block: Buffer): number {
  let count = 0;
  for (let i = block.indexOf(10); i >= 0; i = block.indexOf(10, i + 1)) count++;
  return count;
}
