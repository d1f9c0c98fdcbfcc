import type { Logger } from '../log.js';

/**
 * Shows how the jobs of a run are doing; several run at once, each with its own line. The run
 * reports phases and counts per job; the command line decides how they are shown (a line per job
 * on a terminal, log lines elsewhere: see cli/terminal.ts).
 *
 * Phases: `waiting` (for its turn to start a download, or for the job it needs), `download`
 * (the service prepares the download: records done of the total), `queued` (downloaded, waiting
 * for the destination's writer), `load` (records loaded of the total).
 */
export type Phase = 'waiting' | 'download' | 'queued' | 'load';

export interface Progress {
  phase(job: string, phase: Phase, total: number | undefined): void;
  update(job: string, value: number, total?: number): void;
  /** The job ended: how (`loaded`, `failed`, ...). */
  done(job: string, status: string): void;
}

/** Progress that shows nothing (library callers, tests). */
export const noProgress: Progress = { phase() {}, update() {}, done() {} };

const LOG_EVERY_MS = 10_000;

/** A log line now and then, per job: where no terminal shows the jobs' lines. */
export class LogProgress implements Progress {
  readonly #logger: Logger;
  readonly #jobs = new Map<string, { phase: Phase; total: number | undefined; last: number }>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  phase(job: string, phase: Phase, total: number | undefined): void {
    this.#jobs.set(job, { phase, total, last: Date.now() });
  }

  update(job: string, value: number, total?: number): void {
    const state = this.#jobs.get(job);
    if (state === undefined) return;
    if (total !== undefined) state.total = total;
    if (Date.now() - state.last >= LOG_EVERY_MS) {
      state.last = Date.now();
      this.#logger.info(
        { job, phase: state.phase, done: value, total: state.total },
        `${job}: ${state.phase} ${value}${state.total === undefined ? '' : `/${state.total}`}`,
      );
    }
  }

  done(job: string): void {
    this.#jobs.delete(job);
  }
}
