import { CREDIT_TYPE_OF } from '../../catalog.js';
import type { TargetedUpdateInfo } from '../../client/types.js';
import { SluiceError } from '../../errors.js';
import type { Attempt } from '../../load/destination.js';
import type { Logger } from '../../log.js';
import { checkpoint } from '../checkpoints.js';
import { isoAt } from '../clock.js';
import type { RunContext } from '../context.js';
import { passGuard } from '../extract/extract.js';
import { buyRealTime, closeAttempt, earlierRealTime } from '../extract/real-time.js';
import { creditsOfAttempt } from '../guard/budget.js';
import type { JobRun } from '../job-run.js';
import { inStage } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';

/**
 * A `refresh:` step: a targeted update of the records its job is about to download. The credit
 * guard checks it like a download (one credit of the data type a record), it is asked for in the
 * job's place in the file's order, and the step ends when the service says the records are
 * refreshed; its job, which waits for it, then downloads them (schedule.ts).
 */
export async function runRefreshStep(run: JobRun): Promise<void> {
  const { ctx, job, outcome, log } = run;
  // Asked for in the file's order, as downloads are started (RunGuard).
  await ctx.guard.turn(job.name);
  let attempt: Attempt | undefined;
  try {
    outcome.stage = 'extract';
    attempt = await inStage('extract', () =>
      earlierRealTime(run, (a) => adoptUpdate(ctx, job, a, log)),
    );
    if (attempt) {
      outcome.reattached = true;
      outcome.found = attempt.num_found;
      outcome.download_id = attempt.download_id;
      log.info(
        `re-attaching to targeted update ${attempt.download_id} asked for at ${attempt.requested_at}`,
      );
    } else {
      const { estimate } = await passGuard(run, undefined);
      outcome.stage = 'extract';
      if (estimate.found === 0) {
        log.info('no records match the query; nothing to refresh');
        outcome.status = 'empty';
        outcome.stage = 'finish';
        return;
      }
      attempt = await inStage('extract', () =>
        buyRealTime(run, estimate, async (records) => {
          const update = await ctx.client.createTargetedUpdate(
            { query: job.query, numRecords: records, type: job.type },
            { signal: ctx.signal },
          );
          const taken = update.numRecords > 0 ? update.numRecords : records;
          return {
            id: update.id,
            records: taken,
            credits: { [CREDIT_TYPE_OF[job.type]]: update.totalCost ?? taken },
          };
        }),
      );
    }
  } finally {
    ctx.guard.end(job.name);
  }
  const done = await inStage('extract', () => waitForUpdate(ctx, job, attempt, log));
  const now = isoAt(ctx.clock);
  const refreshed = done.numUpdated ?? done.numRecords;
  await ctx.destination.state.updateAttempt(attempt.attempt_id, {
    status: 'refreshed',
    num_records: refreshed,
    finished_at: now,
    updated_at: now,
    stage: 'finish',
  });
  outcome.downloaded = refreshed;
  outcome.download_credits = creditsOfAttempt(attempt.credits);
  outcome.credits = attempt.run_id === ctx.runId ? { ...outcome.download_credits } : {};
  outcome.status = 'refreshed';
  outcome.stage = 'finish';
  outcome.message = `${refreshed} records refreshed by targeted update ${attempt.download_id}, before job '${job.refreshes}' downloads them`;
  log.info(outcome.message);
}

/**
 * Polls the service's list of targeted updates, with the job's backoff, until this one is done.
 * There is no operation to cancel one: on the poll timeout it is left, and a later run
 * re-attaches to it.
 */
async function waitForUpdate(
  ctx: RunContext,
  job: JobSpec,
  attempt: Attempt,
  log: Logger,
): Promise<TargetedUpdateInfo> {
  const { client, clock, signal, progress } = ctx;
  const id = attempt.download_id!;
  const deadline = clock.now() + job.poll.timeout;
  const target = Number(attempt.num_records ?? attempt.num_requested ?? 0) || undefined;
  progress.phase(job.name, 'download', target);
  let interval = job.poll.interval;
  let last = '';
  for (let polls = 1; ; polls++) {
    const update = (await client.listTargetedUpdates({ signal })).find((u) => u.id === id);
    if (polls === 1) await checkpoint(ctx, 'polling', job.name);
    if (update === undefined) {
      throw new SluiceError(
        `targeted update ${id} is not in the service's list of targeted updates; run again to look for it anew, or with --fresh to ask for a new one`,
        { code: 'SLUICE_REFRESH_FAILED' },
      );
    }
    progress.update(job.name, update.numUpdated ?? 0, target);
    if (update.status !== last) {
      log.info(
        { download_id: id, status: update.status, records: update.numUpdated },
        `targeted update ${id} is ${update.status}`,
      );
      last = update.status;
    }
    if (update.state === 'completed') return update;
    if (update.state === 'failed' || update.state === 'cancelled') {
      await closeAttempt(ctx, attempt, 'failed', `the service says it is ${update.status}`);
      throw new SluiceError(
        `targeted update ${id} ended ${update.status} on the service; run again to ask for a new one`,
        { code: 'SLUICE_REFRESH_FAILED' },
      );
    }
    if (clock.now() >= deadline) {
      throw new SluiceError(
        `targeted update ${id} did not finish within the poll timeout; left it, a later run will re-attach to it`,
        { code: 'SLUICE_TIMEOUT' },
      );
    }
    await clock.sleep(Math.min(interval, Math.max(0, deadline - clock.now())), signal);
    interval = Math.round(Math.min(interval * 1.5, job.poll.max_interval));
  }
}

/**
 * An earlier run asked for a targeted update and stopped before it heard the id: the service
 * lists its targeted updates, so the one asked for is found there (same query, no more records
 * than asked, made since the request, known to no attempt) and adopted; none found, none was
 * made, and the request is closed for a new one.
 */
async function adoptUpdate(
  ctx: RunContext,
  job: JobSpec,
  attempt: Attempt,
  log: Logger,
): Promise<Attempt | undefined> {
  const known = await ctx.destination.state.knownDownloadIds();
  // Tolerate clocks that disagree by a few minutes between this machine and the service.
  const since = Date.parse(attempt.requested_at) - 5 * 60_000;
  const asked = Number(attempt.num_requested ?? Number.POSITIVE_INFINITY);
  const found = (await ctx.client.listTargetedUpdates({ signal: ctx.signal }))
    .filter((u) => !known.has(u.id) && u.query === (attempt.query ?? job.query))
    .filter((u) => (u.type === undefined || u.type === job.type) && u.numRecords <= asked)
    .filter((u) => u.createdAt === undefined || Date.parse(u.createdAt) >= since)
    .sort((a, b) => Date.parse(a.createdAt ?? '') - Date.parse(b.createdAt ?? ''))[0];
  if (found === undefined) {
    log.warn(
      'an earlier run asked for a targeted update and stopped before it heard the id; the service lists none that can be that one, so a new one is asked for',
    );
    await closeAttempt(ctx, attempt, 'abandoned', 'the service lists no such targeted update');
    return undefined;
  }
  const now = isoAt(ctx.clock);
  const changes = {
    download_id: found.id,
    status: 'started',
    started_at: now,
    updated_at: now,
    num_records: found.numRecords,
    credits: JSON.stringify({ [CREDIT_TYPE_OF[job.type]]: found.totalCost ?? found.numRecords }),
  };
  await ctx.destination.state.updateAttempt(attempt.attempt_id, changes);
  Object.assign(attempt, changes);
  log.info(`found targeted update ${found.id}, asked for by an interrupted run; re-attaching`);
  return attempt;
}
