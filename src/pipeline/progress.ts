import type { PhaseRow, State } from '../load/destination.js';
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

/**
 * Progress that also records, in `_sluice_phases`, when each job entered and left each phase,
 * for the dashboard's timeline (`sluice ui`), and passes every call on to the progress it wraps.
 * Its writes go one after another, beside the run: a phase that cannot be recorded is logged at
 * debug level, and never fails the run.
 */
export class PhaseRecorder implements Progress {
  readonly #inner: Progress;
  readonly #state: Pick<State, 'startPhase' | 'endPhase'>;
  readonly #run: { runId: string; pipeline: string };
  readonly #now: () => string;
  readonly #logger: Logger;
  readonly #open = new Map<string, PhaseRow>();
  #writes: Promise<void> = Promise.resolve();

  constructor(
    inner: Progress,
    state: Pick<State, 'startPhase' | 'endPhase'>,
    run: { runId: string; pipeline: string },
    now: () => string,
    logger: Logger,
  ) {
    this.#inner = inner;
    this.#state = state;
    this.#run = run;
    this.#now = now;
    this.#logger = logger;
  }

  phase(job: string, phase: Phase, total: number | undefined): void {
    this.#inner.phase(job, phase, total);
    const at = this.#now();
    const before = this.#open.get(job);
    if (before?.phase === phase) return;
    if (before) this.#write(() => this.#state.endPhase(before, at));
    const row: PhaseRow = {
      run_id: this.#run.runId,
      pipeline: this.#run.pipeline,
      job,
      phase,
      started_at: at,
      ended_at: null,
    };
    this.#open.set(job, row);
    this.#write(() => this.#state.startPhase(row));
  }

  update(job: string, value: number, total?: number): void {
    this.#inner.update(job, value, total);
  }

  done(job: string, status: string): void {
    this.#inner.done(job, status);
    const before = this.#open.get(job);
    if (before === undefined) return;
    this.#open.delete(job);
    const at = this.#now();
    this.#write(() => this.#state.endPhase(before, at));
  }

  /** Ends the phases left open (a run stopped) and waits for every write. */
  async flush(): Promise<void> {
    const at = this.#now();
    for (const row of this.#open.values()) this.#write(() => this.#state.endPhase(row, at));
    this.#open.clear();
    await this.#writes;
  }

  #write(work: () => Promise<void>): void {
    this.#writes = this.#writes.then(work).catch((error: unknown) => {
      this.#logger.debug({ err: error }, 'a phase of a job could not be recorded');
    });
  }
}
