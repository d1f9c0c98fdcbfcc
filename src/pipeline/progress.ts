import type { Writable } from 'node:stream';
import cliProgress from 'cli-progress';
import type { Logger } from '../log.js';

/**
 * Shows how a job is doing: a progress bar when stderr is a terminal, otherwise a log line now
 * and then (cron mails and orchestrator logs do not want carriage returns).
 */
export interface Progress {
  phase(job: string, phase: string, total: number | undefined): void;
  update(value: number, total?: number): void;
  done(): void;
}

/** Progress that shows nothing (library callers, tests). */
export const noProgress: Progress = { phase() {}, update() {}, done() {} };

export function createProgress(options: {
  stream: Writable & { isTTY?: boolean };
  logger: Logger;
  enabled: boolean;
}): Progress {
  if (!options.enabled) return noProgress;
  return options.stream.isTTY ? new BarProgress(options.stream) : new LogProgress(options.logger);
}

class BarProgress implements Progress {
  readonly #stream: Writable;
  #bar: cliProgress.SingleBar | undefined;

  constructor(stream: Writable) {
    this.#stream = stream;
  }

  phase(job: string, phase: string, total: number | undefined): void {
    this.done();
    this.#bar = new cliProgress.SingleBar(
      {
        stream: this.#stream as NodeJS.WritableStream,
        format: `${job.padEnd(16)} ${phase.padEnd(9)} [{bar}] {percentage}% | {value}/{total} | {duration_formatted}`,
        hideCursor: true,
        clearOnComplete: false,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    this.#bar.start(total ?? 0, 0);
  }

  update(value: number, total?: number): void {
    if (total !== undefined) this.#bar?.setTotal(total);
    this.#bar?.update(value);
  }

  done(): void {
    this.#bar?.stop();
    this.#bar = undefined;
  }
}

const LOG_EVERY_MS = 10_000;

class LogProgress implements Progress {
  readonly #logger: Logger;
  #job = '';
  #phase = '';
  #total: number | undefined;
  #last = 0;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  phase(job: string, phase: string, total: number | undefined): void {
    this.#job = job;
    this.#phase = phase;
    this.#total = total;
    this.#last = Date.now();
  }

  update(value: number, total?: number): void {
    if (total !== undefined) this.#total = total;
    if (Date.now() - this.#last >= LOG_EVERY_MS) {
      this.#last = Date.now();
      this.#logger.info(
        { job: this.#job, phase: this.#phase, done: value, total: this.#total },
        `${this.#job}: ${this.#phase} ${value}${this.#total === undefined ? '' : `/${this.#total}`}`,
      );
    }
  }

  done(): void {}
}
