import type { Readable } from 'node:stream';
import { parseInBlocks } from './block-job.js';
import type { ParseJob, ParseRequest } from './parse-protocol.js';
import { ParseWorker } from './parse-thread.js';

export { BLOCK_BYTES } from './block-job.js';
export type { ParseJob } from './parse-protocol.js';

/*
 * Parsing in worker threads, in files of their own:
 *   parse-protocol.ts  the messages between the main thread and a worker (parse-worker.ts)
 *   parse-thread.ts    one worker, as the main thread sees it
 *   streamed-file.ts   a file streamed to one worker alone
 *   block-job.ts       a file shared by several workers: its batches taken back in order
 *   block-cutter.ts    cutting a file into blocks of whole records
 *   record-ends.ts     where records end in bytes as they arrive
 */

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
  /** The files given to its workers: any not done with by `close` is given up then. */
  readonly #jobs: ParseJob[] = [];

  constructor(
    readonly size: number,
    readonly files = 1,
    /** Where its workers come from and go back to between a run's jobs, if anywhere. */
    readonly spares?: SpareWorkers,
  ) {}

  /** The live workers, as many as the pool may have. */
  #live(): ParseWorker[] {
    for (let i = this.#workers.length - 1; i >= 0; i--) {
      if (this.#workers[i]!.dead) this.#workers.splice(i, 1);
    }
    while (this.#workers.length < this.size) {
      this.#workers.push(this.spares?.take() ?? new ParseWorker());
    }
    return this.#workers;
  }

  /** One worker for one file at a time: the file is streamed to it. Otherwise in blocks. */
  get streams(): boolean {
    return this.size === 1 && this.files === 1;
  }

  parse(source: Readable, request: ParseRequest): ParseJob {
    let job: ParseJob;
    if (this.streams) {
      const free = this.#live().find((w) => w.available);
      if (free === undefined) throw new Error('the parse worker is busy');
      job = free.parse(source, request);
    } else job = parseInBlocks(source, request, this.#live());
    this.#jobs.push(job);
    return job;
  }

  async close(): Promise<void> {
    // A file not done with (a load that failed) is given up, so that no worker kept for the
    // run's next load still holds it.
    for (const job of this.#jobs.splice(0)) job.cancel();
    const spares = this.spares;
    await Promise.all(this.#workers.map((w) => (spares ? spares.give(w) : w.terminate())));
    this.#workers.length = 0;
  }
}

/**
 * Parse workers kept between the loads of a run. A worker starts cold: its code is compiled and
 * made fast as it parses, which a job of a few thousand records spends much of its parse on; a
 * run's later loads take the workers an earlier one gave back, already warm. A worker that
 * stopped or is still busy with a file is never kept (its file's blocks, if any are on their
 * way, are dropped by their job number: see parse-worker.ts). At most `max` are kept; `close`
 * ends them when the run ends.
 */
export class SpareWorkers {
  readonly #idle: ParseWorker[] = [];

  constructor(readonly max: number) {}

  /** Workers kept, waiting for a load. */
  get idle(): number {
    return this.#idle.length;
  }

  /**
   * Starts workers until `count` wait (at most `max`): started while the run waits for its
   * downloads, the first loads find them ready, as later loads find those kept.
   */
  warm(count: number): void {
    while (this.#idle.length < Math.min(count, this.max)) this.#idle.push(new ParseWorker());
  }

  take(): ParseWorker | undefined {
    for (let w = this.#idle.pop(); w !== undefined; w = this.#idle.pop()) {
      if (w.available) return w;
      void w.terminate();
    }
    return undefined;
  }

  async give(worker: ParseWorker): Promise<void> {
    if (worker.available && this.#idle.length < this.max) this.#idle.push(worker);
    else await worker.terminate();
  }

  async close(): Promise<void> {
    await Promise.all(this.#idle.splice(0).map((w) => w.terminate()));
  }
}
