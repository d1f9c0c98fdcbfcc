import type { Worker } from 'node:worker_threads';
import { startWorker, workerUrl } from '../../util/worker.js';
import type { RangeChecked, RangeToCheck } from './check-lines.js';

/** A check worker's answer to a range (check-worker.ts). */
export type CheckFromWorker = { id: number; checked: RangeChecked } | { id: number; error: string };

const WORKER_URL = workerUrl(import.meta.url, 'check-worker');

/**
 * A worker thread that checks ranges of spooled files' lines (read-file.ts: half of a file while
 * this thread checks the other, or a whole file fetched ahead), started before its first range
 * (`start`) or at it, and kept until `close`.
 */
export class CheckThread {
  #worker: Worker | undefined;
  #closed = false;
  #next = 0;
  readonly #waiting = new Map<
    number,
    { resolve: (c: RangeChecked) => void; reject: (e: Error) => void }
  >();

  /**
   * Starts the worker before its first range (`Destination.prepareReads`): with the worker
   * started at it, a job's first file took 0.58-0.64 s to load, against 0.49-0.55 s with one
   * started while the download was prepared (docs/speed.md).
   */
  start(): void {
    if (!this.#closed) this.#start();
  }

  /** Whether its worker runs. */
  get started(): boolean {
    return this.#worker !== undefined;
  }

  check(range: RangeToCheck): Promise<RangeChecked> {
    if (this.#closed) return Promise.reject(new Error('the check worker is closed'));
    const worker = this.#start();
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      worker.postMessage({ id, range });
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = startWorker(WORKER_URL);
    worker.on('message', (message: CheckFromWorker) => {
      const waiting = this.#waiting.get(message.id);
      this.#waiting.delete(message.id);
      if ('error' in message) waiting?.reject(new Error(message.error));
      else waiting?.resolve(message.checked);
    });
    const fail = (error: Error) => {
      for (const waiting of this.#waiting.values()) waiting.reject(error);
      this.#waiting.clear();
      if (this.#worker === worker) this.#worker = undefined;
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the check worker stopped (exit code ${code})`)));
    this.#worker = worker;
    return worker;
  }

  /** Ends the worker; a check asked for afterwards fails (no worker starts again). */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }
}
