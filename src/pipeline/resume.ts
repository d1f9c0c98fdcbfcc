import type { JobRow, RunRow, State } from '../load/destination.js';
import type { JobSpec, PipelineSpec } from './spec.js';

/**
 * When a run is a retry of one that did not finish. The rule: if the pipeline's latest run was
 * interrupted or failed, and it ended (or, killed, last did something) less than
 * `resume_window` ago (default 6 h), the next run resumes it: the jobs it (or an earlier run it
 * resumed) loaded are not downloaded again, a job it left mid-download re-attaches, and the rest
 * run as usual. Later than that, the run is the next scheduled one and runs every job. `--fresh`
 * never resumes. A job whose download or load settings changed since is run again.
 */
export interface Resumable {
  /** The interrupted or failed run being finished. */
  run: RunRow;
  /** The first run of the chain of resumes (what `_sluice_runs.resumes` names). */
  root: string;
  /** When it ended, or last did something (killed runs record no end). */
  endedAt: string;
  /** Jobs already loaded by a run of the chain, by name. */
  done: Map<string, JobRow>;
}

/** Statuses of a job (or a refresh step) a resumed run does not do again. */
const DONE = new Set(['loaded', 'empty', 'refreshed']);

export async function findResumable(
  state: State,
  spec: PipelineSpec,
  now: number,
  exclude?: string,
): Promise<Resumable | undefined> {
  if (spec.resumeWindow <= 0) return undefined;
  const run = await state.latestRun(spec.name, exclude);
  if (!run || (run.status !== 'interrupted' && run.status !== 'failed')) return undefined;
  const resumable = await resumableRun(state, run);
  if (now - Date.parse(resumable.endedAt) > spec.resumeWindow) return undefined;
  return resumable;
}

/**
 * What resuming `run` means, whenever it ended: the jobs its chain of resumes loaded. A run of an
 * orchestrator's key (`--run-key`) that did not succeed is resumed whatever the resume window.
 */
export async function resumableRun(state: State, run: RunRow): Promise<Resumable> {
  const endedAt = run.finished_at ?? (await lastActivity(state, run));
  const root = run.resumes ?? run.run_id;
  const chain = await state.runChain(root);
  const done = new Map<string, JobRow>();
  for (const row of await state.jobsOfRuns(chain.map((r) => r.run_id))) {
    if (DONE.has(row.status)) done.set(row.job, row);
  }
  return { run, root, endedAt, done };
}

/** The loaded job of a resumable run this job may skip: unchanged since it was loaded. */
export function skippable(resume: Resumable | undefined, job: JobSpec): JobRow | undefined {
  const row = resume?.done.get(job.name);
  if (!row) return undefined;
  if (row.spec_hash !== job.downloadHash || row.load_hash !== job.loadHash) return undefined;
  return row;
}

async function lastActivity(state: State, run: RunRow): Promise<string> {
  let last = run.started_at;
  for (const job of await state.jobsOfRuns([run.run_id])) {
    if (job.finished_at && job.finished_at > last) last = job.finished_at;
  }
  for (const attempt of await state.attemptsOfRuns([run.run_id])) {
    if (attempt.updated_at > last) last = attempt.updated_at;
  }
  return last;
}
