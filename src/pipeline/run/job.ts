import { CreditGuardError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { JobTables } from '../../records/tables.js';
import { type RunContext, shapePlanOf } from '../context.js';
import type { JobRun } from '../job-run.js';
import type { JobLoad } from '../load/job-load.js';
import { errorInfo, isCommitted, type JobOutcome, newOutcome } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import { inSpan } from '../trace.js';
import { runDownloadJob } from './download.js';
import { runOwnerLookup } from './owner-lookup.js';
import { runRefreshStep } from './refresh-step.js';
import { runScrapeJob } from './scrape-job.js';
import { traceJob } from './trace-run.js';

/**
 * One job of a run, composed of the stages: extract (guard, start or re-attach, poll),
 * normalize and load (each result file in one transaction), finish (swap, status). It never
 * throws: whatever happens ends in a typed outcome that says the stage it happened in. What it
 * buys is a download, a scrape (scrape-job.ts) or, for a refresh step, a targeted update
 * (refresh-step.ts); an owner lookup buys downloads of the owners (owner-lookup.ts).
 */
export function runJob(ctx: RunContext, job: JobSpec): Promise<JobOutcome> {
  const attributes = { 'sluice.job': job.name, 'sluice.data_type': job.type };
  return inSpan('sluice job', attributes, async (span) => {
    const outcome = await runUntraced(ctx, job);
    traceJob(span, outcome);
    return outcome;
  });
}

async function runUntraced(ctx: RunContext, job: JobSpec): Promise<JobOutcome> {
  const started = ctx.clock.now();
  const log = ctx.logger.child({ job: job.name });
  const outcome = newOutcome(job.name);
  const run: JobRun = { ctx, job, outcome, log };
  try {
    if (job.people_keys_from) await runOwnerLookup(run);
    else if (job.kind === 'targeted_update') await runRefreshStep(run);
    else {
      const load: JobLoad = { ...run, tables: new JobTables(shapePlanOf(job, ctx.spec)) };
      if (job.kind === 'scrape') await runScrapeJob(load);
      else await runDownloadJob(load);
    }
  } catch (error) {
    settle(ctx, outcome, error, log);
  } finally {
    ctx.progress.done(job.name, outcome.status);
    outcome.seconds = Math.round((ctx.clock.now() - started) / 10) / 100;
  }
  return outcome;
}

function settle(ctx: RunContext, outcome: JobOutcome, error: unknown, log: Logger): void {
  // Loaded and committed: an interruption after that does not make the job unloaded.
  if (isCommitted(outcome) && ctx.signal?.aborted) return;
  const info = errorInfo(error, outcome.stage);
  if (info.stage) outcome.stage = info.stage;
  if (ctx.signal?.aborted) {
    outcome.status = 'interrupted';
    outcome.message = 'interrupted; run again to pick up where it stopped';
    return;
  }
  outcome.error = info;
  // The service's own refusal (402, credits exhausted) stops a job before it spends, as the
  // guard does: on a legacy plan, where the guard cannot know what is left, it is the refusal.
  if (error instanceof CreditGuardError || info.code === 'SLUICE_API_402') {
    outcome.status = 'refused';
  } else if (info.code === 'SLUICE_TIMEOUT') outcome.status = 'timed_out';
  else outcome.status = 'failed';
  if (info.code === 'SLUICE_INTERNAL') log.error({ err: error }, info.message);
  else log.error(info.message);
}
