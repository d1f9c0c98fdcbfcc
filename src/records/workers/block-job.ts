import type { Readable } from 'node:stream';
import { boundedLines, isLongLine, MAX_RECORD_BYTES } from '../record-size.js';
import type { PackedBatch } from '../types.js';
import { BlockCutter } from './block-cutter.js';
import type { ParsedBlock, ParseJob, ParseRequest } from './parse-protocol.js';
import type { BlockLane, ParseWorker } from './parse-thread.js';
import { fromWire } from './posted-batch.js';
import { afterNewlines } from './record-ends.js';

/**
 * A file is cut into blocks of whole records of at least this size (a block ends with the last
 * record end of the network chunk that reaches it), each parsed into one batch, and its blocks
 * are handed to the pool's workers in turn. This is the default; a run takes its destination's
 * `batchBytes`. Small blocks (30 to 40 property records) keep each batch's objects in the young
 * generation, collected cheaply: faster and smaller than 1 MB blocks (docs/speed.md).
 */
export const BLOCK_BYTES = 64 << 10;

/** Files handed to workers in blocks so far: each one's number tells its answers apart. */
let blockJobs = 0;

/** Parses a file on several workers at once, in blocks of whole records (see ParserPool). */
export function parseInBlocks(
  source: Readable,
  request: ParseRequest,
  workers: ParseWorker[],
): ParseJob {
  const job = new BlockJob(source, request, workers);
  return { batches: job.batches(), cancel: job.release };
}

/**
 * One file shared by the workers: its blocks are cut as the file is read (BlockCutter), handed
 * to the workers in turn, and their batches taken back in file order.
 */
class BlockJob {
  readonly #source: Readable;
  readonly #csv: boolean;
  readonly #blockBytes: number;
  /** Blocks parsed and not yet taken, by number. */
  readonly #parsed = new Map<number, ParsedBlock>();
  #failed: Error | undefined;
  // The reader of the file waits for room, the taker of batches for the next one.
  #wakeReader: (() => void) | undefined;
  #wakeTaker: (() => void) | undefined;
  /** The CSV header, once a block has read it: the blocks after wait for it. */
  #columns: string[] | undefined;
  #taken = 0;
  #stopped = false;
  #pumped = false;
  readonly #lanes: BlockLane[];
  /** Enough blocks for every worker to have one, and a few parsed ones waiting. */
  readonly #maxInFlight: number;
  readonly #cutter: BlockCutter;
  readonly #pump: Promise<void>;

  constructor(source: Readable, request: ParseRequest, workers: ParseWorker[]) {
    this.#source = source;
    this.#csv = request.format === 'csv';
    this.#blockBytes = request.blockBytes ?? BLOCK_BYTES;
    const maxRecordBytes = request.maxRecordBytes ?? MAX_RECORD_BYTES;
    const job = ++blockJobs;
    this.#lanes = workers.map((w) => w.blocks(request, job, this.#onParsed, this.#fail));
    this.#maxInFlight = Math.max(1, request.maxBuffered) + workers.length;
    this.#cutter = new BlockCutter(
      { csv: this.#csv, blockBytes: this.#blockBytes, maxRecordBytes },
      (block) => this.#lanes[block.seq % this.#lanes.length]!.send(block),
      () => this.#columns,
      () => !this.#stopped && !this.#failed && !this.#awaitingHeader(),
    );
    this.#pump = this.#read(maxRecordBytes);
  }

  #signal(): void {
    this.#wakeReader?.();
    this.#wakeTaker?.();
    this.#wakeReader = undefined;
    this.#wakeTaker = undefined;
  }

  readonly #fail = (error: Error): void => {
    this.#failed ??= error;
    this.#signal();
  };

  readonly #onParsed = (message: ParsedBlock): void => {
    if (message.seq < this.#taken) return; // cut again after a broken record: not wanted
    if (message.columns !== undefined) this.#columns ??= message.columns;
    this.#parsed.set(message.seq, message);
    this.#signal();
  };

  /** A CSV block is out to read the header: the next ones wait for it. */
  #awaitingHeader(): boolean {
    return this.#csv && this.#columns === undefined && this.#cutter.sent > this.#taken;
  }

  /** The reader waits: enough blocks are out, or what comes next waits for one to be taken. */
  #full(): boolean {
    const cutter = this.#cutter;
    return (
      cutter.sent - this.#taken >= this.#maxInFlight ||
      cutter.long !== undefined ||
      (this.#awaitingHeader() && cutter.pendingBytes >= this.#blockBytes)
    );
  }

  /** Reads the file and cuts it into blocks, pausing while enough of them are out. */
  async #read(maxRecordBytes: number): Promise<void> {
    const cutter = this.#cutter;
    try {
      // A line beyond the limit comes as a LongLine, in place of its bytes.
      const chunks = boundedLines(this.#source as AsyncIterable<Buffer>, maxRecordBytes);
      for await (const chunk of chunks) {
        // After a failure nothing more is read: the rest of the file is not wanted.
        if (this.#stopped || this.#failed) return;
        if (isLongLine(chunk)) cutter.long = chunk;
        else cutter.add(chunk);
        cutter.cut();
        while (this.#full() && !this.#failed && !this.#stopped) {
          await new Promise<void>((r) => (this.#wakeReader = r));
        }
        if (this.#stopped || this.#failed) return;
      }
      cutter.ended = true;
      cutter.cut();
    } catch (error) {
      this.#fail(error as Error);
    } finally {
      this.#pumped = true;
      this.#signal();
    }
  }

  readonly release = (): void => {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#source.destroy();
    this.#signal();
    for (const lane of this.#lanes) lane.release();
  };

  /** The file's batches, in order. */
  async *batches(): AsyncGenerator<PackedBatch> {
    const cutter = this.#cutter;
    try {
      for (;;) {
        if (this.#failed) throw this.#failed;
        if (this.#stopped) return; // cancelled
        const message = this.#parsed.get(this.#taken);
        if (message !== undefined) {
          yield this.#take(message);
          continue;
        }
        if (this.#pumped && this.#taken === cutter.sent) {
          cutter.cut(); // what waited for the header
          if (this.#taken === cutter.sent) break;
          continue;
        }
        await new Promise<void>((r) => (this.#wakeTaker = r));
      }
      await this.#pump;
      if (this.#failed) throw this.#failed;
    } finally {
      this.release();
    }
  }

  /**
   * The next block's batch, with where its use of the file ended; a block that did not use its
   * end (a broken CSV record) has the file cut again from there.
   */
  #take(message: ParsedBlock): PackedBatch {
    const cutter = this.#cutter;
    const seq = this.#taken++;
    this.#parsed.delete(seq);
    const { usedLines } = message;
    const batch = fromWire(message.batch);
    const block = cutter.inFlight.get(seq)!;
    if (usedLines === undefined) batch.bytesRead = block.endsAt;
    else {
      const used = afterNewlines(block.data!, usedLines);
      batch.bytesRead = block.endsAt - block.data!.byteLength + used;
      // The blocks sent after it are cut again: their batches are not wanted.
      this.#taken = cutter.sent;
      this.#parsed.clear();
      cutter.recut(seq, used);
    }
    cutter.inFlight.delete(seq);
    cutter.cut();
    this.#signal();
    return batch;
  }
}
