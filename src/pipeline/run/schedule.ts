import { availableParallelism } from 'node:os';
import pLimit from 'p-limit';
import type { JobRow } from '../../load/destination.js';
import { checkpoint } from '../checkpoints.js';
import { isoAt } from '../clock.js';
import { jobRow, type RunContext } from '../context.js';
import { type ErrorInfo, type JobOutcome, newOutcome } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import { runJob } from './job.js';
import { skippable } from './resume.js';

/**
 * Jobs at once. What a run waits for is the service preparing downloads, not the loader: every
 * job that can start does (at most `parallel` at a time, in the file's order), their downloads
 * are started one after another in that order (the credit guard checks each against what the
 * jobs before it reserved: see RunGuard) and then prepared by the service together, and each job
 * is loaded when its download is complete, taking its turn at the destination's writers
 * (`RunContext.loads`). A job that needs another (`people_keys_from`) starts once that one ended.
 *
 * The outcomes come back in the file's order, each job's row saved as it ends. A run that lost
 * its lock (SLUICE_LOCK_LOST) starts no job after that, and one interrupted none either: those
 * are reported as not run, never left out of the summary.
 */
export async function runJobs(
  ctx: RunContext,
  jobs: readonly JobSpec[],
  parallel: number,
): Promise<JobOutcome[]> {
  const limit = pLimit(Math.max(1, parallel));
  const ends = new Map<string, { ended: Promise<void>; end: () => void }>();
  for (const job of jobs) {
    let end: () => void = () => {};
    const ended = new Promise<void>((resolve) => (end = resolve));
    ends.set(job.name, { ended, end });
  }
  let lost: ErrorInfo | undefined;
  const outcomes = new Map<string, JobOutcome>();
  const one = async (job: JobSpec): Promise<JobOutcome> => {
    try {
      const waitsFor = job.people_keys_from ?? job.refreshedBy;
      const needs = waitsFor === undefined ? undefined : ends.get(waitsFor);
      if (needs) {
        ctx.progress.phase(job.name, 'waiting', undefined);
        await needs.ended;
      }
      const outcome = await limit(async () => {
        const notRun = lost ?? (ctx.signal?.aborted ? interrupted : undefined);
        if (notRun) return notStarted(job, notRun);
        const stale = notRefreshed(job, job.refreshedBy && outcomes.get(job.refreshedBy));
        if (stale) return stale;
        const ran = await runOne(ctx, job);
        if (ran.error?.code === 'SLUICE_LOCK_LOST') lost = ran.error;
        return ran;
      });
      outcomes.set(job.name, outcome);
      return outcome;
    } finally {
      ends.get(job.name)!.end();
      ctx.guard.end(job.name);
    }
  };
  return Promise.all(jobs.map(one));
}

const interrupted: ErrorInfo = {
  code: 'SLUICE_INTERRUPTED',
  message: 'interrupted before it started; run again to pick up where it stopped',
  retryable: false,
};

/**
 * Why a job is not run after its refresh step: the step did not refresh the records (it failed,
 * was refused, timed out), and downloading them stale is not what the file asks for. A step
 * that found nothing to refresh (`empty`), or that a resumed run did (`skipped`), lets it run.
 */
function notRefreshed(job: JobSpec, step: JobOutcome | '' | undefined): JobOutcome | undefined {
  if (step === undefined || step === '') return undefined;
  if (['refreshed', 'empty', 'skipped'].includes(step.status)) return undefined;
  if (step.status === 'interrupted') return notStarted(job, interrupted);
  const outcome = newOutcome(job.name);
  const error: ErrorInfo = step.error ?? {
    code: 'SLUICE_REFRESH_FAILED',
    message: step.message ?? step.status,
    retryable: true,
  };
  outcome.status = step.status === 'refused' ? 'refused' : 'failed';
  outcome.message = `not started: its refresh step '${step.job}' ended ${step.status}, so its records were not refreshed (${error.message})`;
  outcome.error = { ...error, message: outcome.message };
  return outcome;
}

/** A job the run never started (it lost its lock, or was interrupted before). */
function notStarted(job: JobSpec, why: ErrorInfo): JobOutcome {
  const outcome = newOutcome(job.name);
  if (why.code === 'SLUICE_INTERRUPTED') {
    outcome.status = 'interrupted';
    outcome.message = why.message;
  } else {
    outcome.status = 'failed';
    outcome.error = why;
    outcome.message = 'not started: the run no longer holds its lock';
  }
  return outcome;
}

/** One job: skipped when an earlier run loaded it, else run; its row saved as it ends. */
async function runOne(ctx: RunContext, job: JobSpec): Promise<JobOutcome> {
  const started = isoAt(ctx.clock);
  const loadedBefore = skippable(ctx.resume, job);
  if (loadedBefore) {
    const how = ctx.resume?.how?.get(loadedBefore.run_id) ?? 'which this run resumes';
    const outcome = skipped(job, loadedBefore, how);
    ctx.logger.info({ job: job.name }, outcome.message);
    await ctx.destination.state.saveJob(jobRow(ctx, job, outcome, started));
    return outcome;
  }
  const outcome = await runJob(ctx, job);
  // A run that lost its lock records nothing more: the run that took it over goes on.
  if (outcome.error?.code === 'SLUICE_LOCK_LOST') return outcome;
  await ctx.destination.state.saveJob(jobRow(ctx, job, outcome, started));
  if (outcome.status !== 'interrupted') {
    try {
      await checkpoint(ctx, 'job-finished', job.name);
    } catch {
      // Interrupted between jobs: the run's status says so.
    }
  }
  return outcome;
}

/** A job an earlier run loaded (`how` it is related to this one): reported, not run. */
function skipped(job: JobSpec, row: JobRow, how: string): JobOutcome {
  const before = row.summary ? (JSON.parse(row.summary) as Partial<JobOutcome>) : {};
  return {
    ...newOutcome(job.name),
    status: 'skipped',
    stage: 'finish',
    download_id: row.download_ids,
    found: before.found ?? null,
    tables: before.tables ?? [],
    message: `loaded by run ${row.run_id} (${row.finished_at ?? row.started_at}), ${how}: not downloaded again (--fresh runs it anew)`,
  };
}

/**
 * Jobs loading at once (each over its own connections): `SLUICE_JOB_LOADS_AT_ONCE` (at most the
 * destination's writers), else one for every two cores, as files at once (see load.ts): on two
 * cores one load's parse workers and the server take both, and each load more holds its own
 * parse workers' memory. Always one where there is one writer.
 */
export function loadsAtOnce(
  env: NodeJS.ProcessEnv,
  writers: number,
  cores = availableParallelism(),
): number {
  if (writers <= 1) return 1;
  const set = env.SLUICE_JOB_LOADS_AT_ONCE;
  if (set !== undefined && set !== '') {
    const n = Number(set);
    return Number.isInteger(n) && n >= 1 ? Math.min(n, writers) : 1;
  }
  return Math.max(1, Math.min(writers, Math.floor(cores / 2)));
}
