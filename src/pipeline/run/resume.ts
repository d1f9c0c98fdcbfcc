import type { JobRow, RunRow, State } from '../../load/destination.js';
import type { JobSpec, PipelineSpec } from '../spec/spec.js';

/**
 * When a run is a retry of one that did not finish. The rule: if the pipeline's latest run was
 * interrupted or failed, and it ended (or, killed, last did something) less than
 * `resume_window` ago (default 6 h), the next run resumes it: the jobs it (or an earlier run it
 * resumed) loaded are not downloaded again, a job it left mid-download re-attaches, and the rest
 * run as usual. Later than that, the run is the next scheduled one and runs every job. `--fresh`
 * never resumes. A job whose download or load settings changed since is run again. Run keys and
 * `--wait` add runs whose loaded jobs are not bought again (see prior-work.ts).
 */
export interface Resumable extends LoadedBefore {
  /** The interrupted or failed run being finished. */
  run: RunRow;
  /** The first run of the chain of resumes (what `_sluice_runs.resumes` names). */
  root: string;
  /** When it ended, or last did something (killed runs record no end). */
  endedAt: string;
  /** The runs of the chain, by id. */
  chain: string[];
}

/** Jobs earlier runs loaded, which this run does not download again when they are unchanged. */
export interface LoadedBefore {
  /** Jobs already loaded, by name: the latest row of each. */
  done: Map<string, JobRow>;
  /**
   * How each run that loaded one is related to this one, by run id, for the skipped job's
   * message ("which this run resumes", "under run key 'K'").
   */
  how?: Map<string, string>;
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
  const root = run.resumes ?? run.run_id;
  const chain = (await state.runChain(root)).map((r) => r.run_id);
  const done = await loadedJobs(state, chain);
  const how = new Map(chain.map((id) => [id, 'which this run resumes']));
  return { run, root, endedAt: await endedAt(state, run), chain, done, how };
}

/** The jobs (and refresh steps) these runs did, by name: the latest row of each. */
export async function loadedJobs(
  state: State,
  runIds: readonly string[],
): Promise<Map<string, JobRow>> {
  // Oldest first (jobsOfRuns' order): a later row of a job takes the place of an earlier one.
  const rows = (await state.jobsOfRuns(runIds)).filter((row) => DONE.has(row.status));
  return new Map(rows.map((row) => [row.job, row]));
}

/** The loaded job of an earlier run this job may skip: unchanged since it was loaded. */
export function skippable(loaded: LoadedBefore | undefined, job: JobSpec): JobRow | undefined {
  const row = loaded?.done.get(job.name);
  if (!row) return undefined;
  if (row.spec_hash !== job.downloadHash || row.load_hash !== job.loadHash) return undefined;
  return row;
}

/** When a run ended, or, killed (no end recorded), when it last did something. */
export async function endedAt(state: State, run: RunRow): Promise<string> {
  if (run.finished_at) return run.finished_at;
  let last = run.started_at;
  for (const job of await state.jobsOfRuns([run.run_id])) {
    if (job.finished_at && job.finished_at > last) last = job.finished_at;
  }
  for (const attempt of await state.attemptsOfRuns([run.run_id])) {
    if (attempt.updated_at > last) last = attempt.updated_at;
  }
  return last;
}
