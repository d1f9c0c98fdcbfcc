import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import type { ShapePlan } from './tables.js';
import type { FileFormat, PackedBatch } from './types.js';

/**
 * Parsing in worker threads. Parsing and decoding cost several times what writing a row costs:
 * each result file is parsed in a worker while the main thread writes the previous batch.
 * Batches come back in file order; workers never run more than a few batches ahead, so memory
 * stays bounded whatever the file size.
 *
 * Protocol, one worker per file (CSV): main -> worker `start`, then `chunk`s (bytes,
 * transferred, not copied) and `end`; worker -> main `consumed` per chunk (flow control of the
 * input), `batch`es, then `done` or `error`. Main sends `ack` as it takes each batch.
 * Several workers per file (NDJSON, see ParserPool): main -> each worker `blocks`, then `block`s
 * of whole lines (transferred) with their first line number; worker -> main `parsed` per block.
 */
export interface ParseRequest {
  format: FileFormat;
  /** How records become rows: plain data, cloned into the worker. */
  plan: ShapePlan;
  batchSize: number;
  maxBuffered: number;
}

export type ToWorker =
  | { type: 'start'; request: ParseRequest }
  | { type: 'chunk'; data: Uint8Array }
  | { type: 'end' }
  | { type: 'ack' }
  | { type: 'blocks'; request: ParseRequest }
  | { type: 'block'; seq: number; firstLine: number; data: Uint8Array };

export type ToMain =
  | { type: 'consumed' }
  | { type: 'batch'; batch: PackedBatch }
  | { type: 'parsed'; seq: number; batch: PackedBatch }
  | { type: 'done' }
  | { type: 'error'; message: string; name: string };

/**
 * An NDJSON file is cut into blocks of whole lines of at least this size (a block ends with the
 * last newline of the network chunk that reaches it; about 450 property records), each parsed
 * into one batch, and its blocks are handed to the pool's workers in turn.
 */
const BLOCK_BYTES = 1 << 20;

/** Chunks sent to a worker and not yet parsed; reading the source pauses beyond this. */
const MAX_CHUNKS_IN_FLIGHT = 16;

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(
  FROM_SOURCE ? './parse-worker.ts' : './parse-worker.js',
  import.meta.url,
);

/**
 * Built code runs the worker file directly. Run from source (tests, `npm run demo`), the worker
 * first registers tsx's loader in its own thread, as loaders are per thread.
 */
/**
 * A parse worker holds a few batches at a time; a small heap keeps its garbage collected early,
 * so the process stays small whatever the download's size.
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 16 };

function startWorker(): Worker {
  if (!FROM_SOURCE) return new Worker(WORKER_URL, { resourceLimits: WORKER_LIMITS });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}); });`;
  return new Worker(code, { eval: true, resourceLimits: WORKER_LIMITS });
}

/** A file being parsed: its batches, in order, and a way to stop early. */
export interface ParseJob {
  batches: AsyncGenerator<PackedBatch>;
  /** Stops reading the file and frees the worker (terminated, since it was left mid-file). */
  cancel(): void;
}

/** One worker, parsing one file at a time. */
class ParseWorker {
  readonly #worker = startWorker();
  #busy = false;
  #dead = false;

  get available(): boolean {
    return !this.#busy && !this.#dead;
  }

  get dead(): boolean {
    return this.#dead;
  }

  /** Parses `source` in the worker; the batches are read from the returned iterator. */
  parse(source: Readable, request: ParseRequest): ParseJob {
    this.#busy = true;
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
      this.#busy = false;
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
            yield message.batch;
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
   * Takes blocks of one file (see `ParserPool`): `send` hands one over, `onParsed` gets its
   * rows. `release(finished)` frees the worker; a worker released mid-file is terminated.
   */
  blocks(
    request: ParseRequest,
    onParsed: (seq: number, batch: PackedBatch) => void,
    onError: (error: Error) => void,
  ): {
    send(seq: number, firstLine: number, data: Uint8Array): void;
    release(done: boolean): void;
  } {
    this.#busy = true;
    const worker = this.#worker;
    const onMessage = (message: ToMain) => {
      if (message.type === 'parsed') onParsed(message.seq, message.batch);
      else if (message.type === 'error') {
        const error = new Error(message.message);
        error.name = message.name;
        onError(error);
      }
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.postMessage({ type: 'blocks', request } satisfies ToWorker);
    let released = false;
    return {
      send(seq, firstLine, data) {
        worker.postMessage({ type: 'block', seq, firstLine, data } satisfies ToWorker, [
          data.buffer as ArrayBuffer,
        ]);
      },
      release: (done) => {
        if (released) return;
        released = true;
        worker.off('message', onMessage);
        worker.off('error', onError);
        if (!done) {
          this.#dead = true;
          void worker.terminate();
        }
        this.#busy = false;
      },
    };
  }

  /** A worker left mid-file (the load failed) cannot be reused: it is terminated instead. */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }
}

/**
 * A few parse workers for one job's files; closed when the job is loaded.
 *
 * A CSV file is parsed by one worker (where a record ends depends on its quotes, which only a
 * parser can tell). An NDJSON file, whose records are its lines, is parsed by every free worker
 * at once: the main thread cuts it into blocks of whole lines, hands them out in turn, and
 * takes their batches back in file order, never more than `maxBuffered` blocks per worker
 * ahead. So a file is parsed on as many cores as there are workers, and one file at a time
 * still goes to the database in one transaction, in order.
 */
export class ParserPool {
  readonly #workers: ParseWorker[] = [];

  constructor(readonly size: number) {}

  #free(count: number): ParseWorker[] {
    for (let i = this.#workers.length - 1; i >= 0; i--) {
      if (this.#workers[i]!.dead) this.#workers.splice(i, 1);
    }
    const free = this.#workers.filter((w) => w.available).slice(0, count);
    while (free.length < count && this.#workers.length < this.size) {
      const worker = new ParseWorker();
      this.#workers.push(worker);
      free.push(worker);
    }
    if (free.length === 0) throw new Error('every parse worker is busy');
    return free;
  }

  parse(source: Readable, request: ParseRequest): ParseJob {
    if (request.format === 'json' && this.size > 1) {
      return parseInBlocks(source, request, this.#free(this.size));
    }
    return this.#free(1)[0]!.parse(source, request);
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
    this.#workers.length = 0;
  }
}

/** Parses an NDJSON file on several workers at once, in blocks of whole lines (see ParserPool). */
function parseInBlocks(source: Readable, request: ParseRequest, workers: ParseWorker[]): ParseJob {
  const parsed = new Map<number, PackedBatch>();
  /** Bytes of the file up to the end of each block, for `bytesRead`. */
  const endsAt = new Map<number, number>();
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
  const lanes = workers.map((w) =>
    w.blocks(
      request,
      (seq, batch) => {
        parsed.set(seq, batch);
        signal();
      },
      fail,
    ),
  );
  // Enough blocks for every worker to have one, and a few parsed ones waiting, whatever the count.
  const maxInFlight = Math.max(1, request.maxBuffered) + workers.length;
  let sent = 0;
  let taken = 0;
  let line = 1;
  let bytes = 0;
  let stopped = false;
  let pumped = false;

  const send = (block: Buffer) => {
    // A block of its own memory is handed over, not copied.
    const data =
      block.byteOffset === 0 && block.byteLength === block.buffer.byteLength
        ? new Uint8Array(block.buffer, 0, block.byteLength)
        : Uint8Array.from(block);
    const seq = sent++;
    const firstLine = line;
    line += countNewlines(block);
    bytes += block.byteLength;
    endsAt.set(seq, bytes);
    // After this, `block` is empty: its memory belongs to the worker.
    lanes[seq % lanes.length]!.send(seq, firstLine, data);
  };

  const pump = (async () => {
    try {
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      for await (const chunk of source as AsyncIterable<Buffer>) {
        // After a failure nothing more is read: the rest of the file is not wanted.
        if (stopped || failed) return;
        pending.push(chunk);
        pendingBytes += chunk.byteLength;
        if (pendingBytes < BLOCK_BYTES) continue;
        const last = chunk.lastIndexOf(10);
        if (last < 0) continue;
        // The block ends with the chunk's last newline; what follows starts the next one.
        const tail = chunk.subarray(last + 1);
        pending[pending.length - 1] = chunk.subarray(0, last + 1);
        send(Buffer.concat(pending));
        pending = tail.byteLength > 0 ? [tail] : [];
        pendingBytes = tail.byteLength;
        while (sent - taken >= maxInFlight && !failed && !stopped) {
          await new Promise<void>((r) => (wakeReader = r));
        }
        if (stopped || failed) return;
      }
      if (pendingBytes > 0 && !stopped && !failed) send(Buffer.concat(pending));
    } catch (error) {
      fail(error as Error);
    } finally {
      pumped = true;
      signal();
    }
  })();

  let finished = false;
  const release = () => {
    if (stopped) return;
    stopped = true;
    source.destroy();
    signal();
    for (const lane of lanes) lane.release(finished);
  };

  const batches = (async function* () {
    try {
      for (;;) {
        if (failed) throw failed;
        if (stopped) return; // cancelled
        const batch = parsed.get(taken);
        if (batch !== undefined) {
          parsed.delete(taken);
          batch.bytesRead = endsAt.get(taken)!;
          endsAt.delete(taken);
          taken++;
          signal();
          yield batch;
          continue;
        }
        if (pumped && taken === sent) break;
        await new Promise<void>((r) => (wakeTaker = r));
      }
      await pump;
      if (failed) throw failed;
      finished = true;
    } finally {
      release();
    }
  })();
  return { batches, cancel: release };
}

function countNewlines(block: Buffer): number {
  let count = 0;
  for (let i = block.indexOf(10); i >= 0; i = block.indexOf(10, i + 1)) count++;
  return count;
}
