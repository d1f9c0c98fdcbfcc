import type { Readable } from 'node:stream';
import type { Worker } from 'node:worker_threads';
import type { PackedBatch } from '../types.js';
import {
  type ParseJob,
  type ParseRequest,
  type ToMain,
  type ToWorker,
  workerError,
} from './parse-protocol.js';
import { fromWire } from './posted-batch.js';

/** Chunks sent to a worker and not yet parsed; reading the source pauses beyond this. */
const MAX_CHUNKS_IN_FLIGHT = 16;

/**
 * Parses `source` in `worker` alone (a pool of one): the file is streamed to it as it arrives,
 * pausing while the worker is behind, and its batches are read from the returned iterator.
 * `onRelease` is told once, when the file is done with, whether the worker finished it (if not,
 * it was left mid-file).
 */
export function streamToWorker(
  worker: Worker,
  source: Readable,
  request: ParseRequest,
  onRelease: (finished: boolean) => void,
): ParseJob {
  const file = new StreamedFile(worker, source, onRelease);
  file.start(request);
  return { batches: file.batches(), cancel: file.release };
}

class StreamedFile {
  readonly #worker: Worker;
  readonly #source: Readable;
  readonly #onRelease: (finished: boolean) => void;
  readonly #queue: ToMain[] = [];
  #wake: (() => void) | undefined;
  #chunksInFlight = 0;
  #chunkWake: (() => void) | undefined;
  #failed: Error | undefined;
  #stopped = false;
  #finished = false;
  #pump: Promise<void> = Promise.resolve();

  constructor(worker: Worker, source: Readable, onRelease: (finished: boolean) => void) {
    this.#worker = worker;
    this.#source = source;
    this.#onRelease = onRelease;
  }

  start(request: ParseRequest): void {
    this.#worker.on('message', this.#onMessage);
    this.#worker.on('error', this.#onError);
    this.#worker.postMessage({ type: 'start', request } satisfies ToWorker);
    this.#pump = this.#feed();
  }

  #signal(): void {
    this.#wake?.();
    this.#wake = undefined;
  }

  readonly #onMessage = (message: ToMain): void => {
    if (message.type === 'consumed') {
      this.#chunksInFlight--;
      this.#chunkWake?.();
      this.#chunkWake = undefined;
      return;
    }
    this.#queue.push(message);
    this.#signal();
  };

  readonly #onError = (error: Error): void => {
    this.#failed = error;
    this.#signal();
    this.#chunkWake?.();
  };

  /** Feeds the file to the worker as it arrives, pausing while the worker is behind. */
  async #feed(): Promise<void> {
    try {
      for await (const chunk of this.#source as AsyncIterable<Buffer>) {
        if (this.#stopped) break;
        const data = new Uint8Array(chunk.byteLength);
        data.set(chunk);
        this.#chunksInFlight++;
        this.#worker.postMessage({ type: 'chunk', data } satisfies ToWorker, [data.buffer]);
        while (this.#chunksInFlight >= MAX_CHUNKS_IN_FLIGHT && !this.#failed && !this.#stopped) {
          await new Promise<void>((r) => (this.#chunkWake = r));
        }
      }
      if (!this.#stopped) this.#worker.postMessage({ type: 'end' } satisfies ToWorker);
    } catch (error) {
      this.#failed ??= error as Error;
      this.#signal();
    }
  }

  /** Stops reading the file, once: the worker's listeners go, and the source is destroyed. */
  readonly release = (): void => {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#worker.off('message', this.#onMessage);
    this.#worker.off('error', this.#onError);
    this.#source.destroy();
    this.#chunkWake?.();
    this.#onRelease(this.#finished);
  };

  /** The file's batches in order, each acknowledged to the worker as it is taken. */
  async *batches(): AsyncGenerator<PackedBatch> {
    try {
      for (;;) {
        if (this.#failed) throw this.#failed;
        if (this.#stopped) return; // cancelled
        const message = this.#queue.shift();
        if (message === undefined) {
          await new Promise<void>((r) => (this.#wake = r));
          continue;
        }
        if (message.type === 'done') {
          this.#finished = true;
          break;
        }
        if (message.type === 'error') throw workerError(message);
        if (message.type === 'batch') {
          this.#worker.postMessage({ type: 'ack' } satisfies ToWorker);
          yield fromWire(message.batch);
        }
      }
      await this.#pump;
      if (this.#failed) throw this.#failed;
    } finally {
      this.release();
    }
  }
}
