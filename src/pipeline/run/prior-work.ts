import type { RunRow, State } from '../../load/destination.js';
import type { ReplayReason } from '../outcome.js';
import type { JobSpec, PipelineSpec } from '../spec/spec.js';
import { hasEnded, replayable, unitOf } from './replay.js';
import {
  findResumable,
  type LoadedBefore,
  loadedJobs,
  type Resumable,
  resumableRun,
} from './resume.js';

/**
 * What earlier runs already did of the unit of work a run is asked for (its selected jobs).
 * A run continues three kinds of earlier runs:
 *
 * - the run it resumes: the latest run, interrupted or failed within `resume_window`
 *   (resume.ts); with a run key, the key's latest run when it did not end, whenever it stopped;
 * - the runs of its run key (`--run-key K`): K names one unit of work;
 * - with `--wait`, the runs that ended while it waited for the pipeline.
 *
 * Among the runs of its key (or, without one, those it waited for), a run asked for the same
 * jobs that ended (succeeded, incomplete), none of them changed since, is replayed: nothing is
 * run or bought. Otherwise the run goes ahead: a job that any run it continues loaded, unchanged
 * since, is skipped, never bought again, and every other selected job runs. So a key's retry
 * never buys again and never skips what it was asked for, and `--wait` never buys what the run
 * it waited for has just loaded. `--fresh` continues nothing.
 */
export interface PriorWork {
  /** An earlier run that did this unit of work: replayed. */
  replay?: { run: RunRow; reason: ReplayReason };
  /** The interrupted or failed run this one finishes (`resumed_from`), when it does. */
  resumes?: Resumable;
  /** Jobs earlier runs loaded, not bought again when unchanged. */
  loaded?: LoadedBefore;
}

export interface PriorWorkOptions {
  runKey?: string | undefined;
  fresh: boolean;
  /** The run waited for the pipeline (its lock, its database) since this time (ISO 8601). */
  waitedSince?: string | undefined;
  now: number;
}

export async function priorWork(
  state: State,
  spec: PipelineSpec,
  selected: readonly JobSpec[],
  options: PriorWorkOptions,
): Promise<PriorWork> {
  if (options.fresh) return {};
  const { runKey } = options;
  const keyed = runKey === undefined ? [] : await state.runsByKey(spec.name, runKey);
  const waited =
    options.waitedSince === undefined
      ? []
      : await state.runsEndedSince(spec.name, options.waitedSince);
  // A key's unit is replayed from the key's runs only: a run under another key (or none) that
  // did the same work would leave this key without a run of its own, and its retries would buy.
  const [candidates, reason]: [RunRow[], ReplayReason] =
    runKey === undefined ? [waited, 'waited'] : [keyed, 'run_key'];
  const replay = await latestOfUnit(state, candidates, selected);
  if (replay) return { replay: { run: replay, reason } };

  const latestKeyed = keyed[0];
  const resumes =
    runKey === undefined
      ? await findResumable(state, spec, options.now)
      : latestKeyed && !hasEnded(latestKeyed)
        ? await resumableRun(state, latestKeyed)
        : undefined;
  if (keyed.length === 0 && waited.length === 0) return resumes ? { resumes, loaded: resumes } : {};
  const how = new Map(resumes?.how);
  for (const run of keyed) {
    if (!how.has(run.run_id)) how.set(run.run_id, `under run key '${runKey}'`);
  }
  for (const run of waited) {
    if (!how.has(run.run_id)) how.set(run.run_id, 'which ended while this run waited for it');
  }
  const done = await loadedJobs(state, [...how.keys()]);
  return { ...(resumes ? { resumes } : {}), loaded: { done, how } };
}

/**
 * The latest of `runs` asked for the same jobs, when it did them as they stand now. A run whose
 * jobs are not recorded (an older sluice's) is judged by the jobs it ran.
 */
async function latestOfUnit(
  state: State,
  runs: readonly RunRow[],
  selected: readonly JobSpec[],
): Promise<RunRow | undefined> {
  const unit = unitOf(selected);
  for (const run of runs) {
    if (run.selected_jobs !== null && run.selected_jobs !== unit) continue;
    if (await replayable(state, run, selected)) return run;
    if (run.selected_jobs === unit) return undefined;
  }
  return undefined;
}

/** What a run continues, for the log; undefined when it continues nothing. */
export function priorWorkText(prior: PriorWork, runKey: string | undefined): string | undefined {
  const { resumes, loaded } = prior;
  if (!loaded) return undefined;
  const jobs = [...loaded.done.keys()];
  const skip =
    jobs.length > 0
      ? `jobs loaded before are not downloaded again unless changed since: ${jobs.join(', ')}`
      : 'no job was loaded before';
  if (resumes) {
    const why = runKey === undefined ? 'within resume_window' : `key '${runKey}'`;
    return `resuming run ${resumes.run.run_id} (${resumes.run.status} at ${resumes.endedAt}, ${why}): ${skip}`;
  }
  const what = runKey === undefined ? 'the runs it waited for' : `the runs of key '${runKey}'`;
  return `continuing ${what}: ${skip}`;
}
