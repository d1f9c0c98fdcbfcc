import type { Logger } from '../log.js';

/**
 * Shows how a job is doing. The run reports phases and counts; the command line decides how
 * they are shown (a bar on a terminal, log lines elsewhere: see cli/terminal.ts).
 */
export interface Progress {
  phase(job: string, phase: string, total: number | undefined): void;
  update(value: number, total?: number): void;
  done(): void;
}

/** Progress that shows nothing (library callers, tests). */
export const noProgress: Progress = { phase() {}, update() {}, done() {} };

const LOG_EVERY_MS = 10_000;

/** A log line now and then: where no terminal shows a bar. */
export class LogProgress implements Progress {
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
