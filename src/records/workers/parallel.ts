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
