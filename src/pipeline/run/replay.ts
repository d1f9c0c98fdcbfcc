import type { RunRow, State } from '../../load/destination.js';
import type { ReplayReason, RunStatus, RunSummary } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';

/**
 * A replay: a command whose unit of work an earlier run already did runs nothing and buys
 * nothing, and says so. Its summary is marked (`replayed: true`), spends nothing (`credits` and
 * `jobs` empty, so that an orchestrator summing `credits` never counts a purchase twice), and
 * carries the earlier run's own figures under `original`.
 */

/** Statuses of a run that ended: the unit of work it was asked for is done. */
const DONE: ReadonlySet<string> = new Set<RunStatus>(['succeeded', 'incomplete']);

/** Whether a run ended, its unit of work done (succeeded, or incomplete). */
export function hasEnded(run: Pick<RunRow, 'status'>): boolean {
  return DONE.has(run.status);
}

/**
 * The unit of work a run is asked for, as `_sluice_runs.selected_jobs` records it: its selected
 * jobs' names, sorted, as a JSON array.
 */
export function unitOf(jobs: readonly JobSpec[]): string {
  return JSON.stringify(jobs.map((j) => j.name).sort());
}

/**
 * Whether `run` did the unit of work `selected` asks for, as the jobs stand now: it ended
 * (succeeded, or incomplete: what a cancelled download held is loaded), it was asked for the
 * same jobs, and none of them has changed how it downloads or loads since (a changed job is
 * work not done yet).
 */
export async function replayable(
  state: State,
  run: RunRow,
  selected: readonly JobSpec[],
): Promise<boolean> {
  if (!DONE.has(run.status) || !run.summary) return false;
  const rows = new Map((await state.jobsOfRuns([run.run_id])).map((r) => [r.job, r]));
  // A run of a sluice before state version 4 did not record its jobs: one that ended has a row
  // for each (and one for each part of an owner lookup, `owners#2`, which no job name can be).
  const unit =
    run.selected_jobs ?? JSON.stringify([...rows.keys()].filter((j) => !j.includes('#')).sort());
  if (unit !== unitOf(selected)) return false;
  return selected.every((job) => {
    const row = rows.get(job.name);
    return row?.spec_hash === job.downloadHash && row?.load_hash === job.loadHash;
  });
}

/** The summary of a command that replays `run`: what this command did (nothing), and that run. */
export function replaySummary(
  run: RunRow,
  reason: ReplayReason,
  now: { destination: string; startedAt: string; seconds: number },
): RunSummary {
  const original = JSON.parse(run.summary!) as RunSummary;
  return {
    pipeline: original.pipeline,
    run_id: run.run_id,
    resumed_from: null,
    status: original.status,
    replayed: true,
    original: {
      run_id: run.run_id,
      reason,
      run_key: run.run_key,
      batch_id: run.batch_id,
      status: original.status,
      started_at: run.started_at,
      finished_at: run.finished_at,
      seconds: original.seconds,
      credits: original.credits,
      views: original.views,
      jobs: original.jobs,
    },
    destination: now.destination,
    started_at: now.startedAt,
    seconds: now.seconds,
    credits: {},
    views: { created: [], updated: [], unchanged: [] },
    jobs: [],
  };
}

/** The line that says which run a replay stands for, and why. */
export function replayText(summary: RunSummary): string {
  const o = summary.original!;
  const why =
    o.reason === 'run_key'
      ? `run key '${o.run_key}'`
      : o.reason === 'waited'
        ? 'the run this command waited for'
        : 'the stopped command this one finishes';
  return `replay of run ${o.run_id} (${why}; ${o.status} at ${o.finished_at ?? o.started_at}): nothing to do, nothing was run or bought now (--fresh runs it anew)`;
}
