import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import type { ShapePlan } from './tables.js';
import type { FileFormat, RecordBatch } from './types.js';

/**
 * Parsing in worker threads. CSV parsing and decoding cost several times what writing a row
 * costs, and these machines have two cores: each result file is parsed by a worker while the
 * main thread writes the previous batch, and the next file starts parsing (and downloading)
 * while the current one is written. Batches come back in file order; a worker never runs more
 * than `maxBuffered` batches ahead, so memory stays bounded whatever the file size.
 *
 * Protocol: main -> worker `start`, then `chunk`s (bytes, transferred, not copied) and `end`;
 * worker -> main `consumed` per chunk (flow control of the input), `batch`es, then `done` or
 * `error`. Main sends `ack` as it takes each batch.
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
  | { type: 'ack' };

export type ToMain =
  | { type: 'consumed' }
  | { type: 'batch'; batch: RecordBatch }
  | { type: 'done' }
  | { type: 'error'; message: string; name: string };

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
const WORKER_LIMITS = { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 8 };

function startWorker(): Worker {
  if (!FROM_SOURCE) return new Worker(WORKER_URL, { resourceLimits: WORKER_LIMITS });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}); });`;
  return new Worker(code, { eval: true, resourceLimits: WORKER_LIMITS });
}

/** A file being parsed: its batches, in order, and a way to stop early. */
export interface ParseJob {
  batches: AsyncGenerator<RecordBatch>;
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
            yield withNullPrototypes(message.batch);
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

  /** A worker left mid-file (the load failed) cannot be reused: it is terminated instead. */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
  }
}

/** A few parse workers for one job's files; closed when the job is loaded. */
export class ParserPool {
  readonly #workers: ParseWorker[] = [];

  constructor(readonly size: number) {}

  parse(source: Readable, request: ParseRequest): ParseJob {
    for (let i = this.#workers.length - 1; i >= 0; i--) {
      if (this.#workers[i]!.dead) this.#workers.splice(i, 1);
    }
    let worker = this.#workers.find((w) => w.available);
    if (worker === undefined) {
      if (this.#workers.length >= this.size) throw new Error('every parse worker is busy');
      worker = new ParseWorker();
      this.#workers.push(worker);
    }
    return worker.parse(source, request);
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
    this.#workers.length = 0;
  }
}

/**
 * Rows cross the thread boundary as ordinary objects: made null-prototype again, so that a
 * column named `constructor` or `toString` reads as absent in a row that lacks it, never as
 * something inherited.
 */
function withNullPrototypes(batch: RecordBatch): RecordBatch {
  for (const parsed of batch.rows) {
    Object.setPrototypeOf(parsed.row, null);
    if (parsed.related) {
      for (const rows of parsed.related.values())
        for (const row of rows) Object.setPrototypeOf(row, null);
    }
  }
  return batch;
}
