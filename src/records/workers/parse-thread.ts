import type { Readable } from 'node:stream';
import { startWorker, workerUrl } from '../../util/worker.js';
import {
  type BlockToSend,
  type ParsedBlock,
  type ParseJob,
  type ParseRequest,
  type ToMain,
  type ToWorker,
  workerError,
} from './parse-protocol.js';
import { streamToWorker } from './streamed-file.js';

const WORKER_URL = workerUrl(import.meta.url, 'parse-worker');

/** One file's lane to a worker that takes it in blocks (see `ParseWorker.blocks`). */
export interface BlockLane {
  send(block: BlockToSend): void;
  release(): void;
}

/**
 * One worker: a file streamed to it alone, or blocks of one or more files shared with other
 * workers.
 */
export class ParseWorker {
  readonly #worker = startWorker(WORKER_URL);
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
    return streamToWorker(worker, source, request, (finished) => {
      if (!finished) {
        this.#dead = true;
        void worker.terminate();
      }
      this.#streaming = false;
    });
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
  ): BlockLane {
    const worker = this.#worker;
    const onMessage = (message: ToMain) => {
      // A block of an earlier file, dropped and parsed all the same, answers late: not ours.
      if (message.type === 'parsed') {
        if (message.job === job) onParsed(message);
      } else if (message.type === 'error' && (message.job ?? job) === job) {
        onError(workerError(message));
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
