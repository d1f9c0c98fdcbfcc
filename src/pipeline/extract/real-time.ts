import { ApiError } from '../../errors.js';
import type { Attempt } from '../../load/destination.js';
import { checkpoint } from '../checkpoints.js';
import { isoAt } from '../clock.js';
import type { RunContext } from '../context.js';
import type { CreditEstimate } from '../guard/estimate.js';
import type { JobRun } from '../job-run.js';
import type { Credits } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import { requestedAttempt } from './start-download.js';

/**
 * The service's real-time operations as a run buys them: a targeted update (a `refresh:` step)
 * and a scrape (a `scrape: true` job). Each is paid when it is asked for, so each keeps the
 * downloads' discipline: its attempt row is written BEFORE the request that pays, its answer
 * (the id; a scrape's records too) as soon as it comes, and a later run picks up an open
 * attempt instead of paying again. What an unanswered request became is for its kind to find
 * out (`unanswered`): a targeted update is listed by the service, a scrape is not.
 */

/** What a real-time request bought, as its attempt row keeps it. */
export interface RealTimeAnswer {
  id: string;
  /** Records the service took on: to refresh, or scraped. */
  records: number;
  credits: Credits;
  /** A scrape's records, as NDJSON. */
  payload?: string;
}

/**
 * The job's open attempt from an earlier run: left by --fresh or a changed job (closed here), or
 * one whose answer was never heard, which `unanswered` settles (adopted, closed, or refused).
 */
export async function earlierRealTime(
  run: JobRun,
  unanswered: (attempt: Attempt) => Promise<Attempt | undefined>,
): Promise<Attempt | undefined> {
  const { ctx, job, log } = run;
  const state = ctx.destination.state;
  const attempt = await state.openAttempt(ctx.spec.name, job.name);
  if (!attempt) return undefined;
  const what = describeKind(job);
  if (ctx.fresh || attempt.spec_hash !== job.downloadHash) {
    const why = ctx.fresh ? '--fresh' : 'the job changed in the pipeline file';
    log.warn(
      `${why}: leaving ${what} ${attempt.download_id ?? '(no answer heard)'} of an earlier run`,
    );
    await closeAttempt(ctx, attempt, ctx.fresh ? 'abandoned' : 'superseded', `left: ${why}`);
    return undefined;
  }
  if (attempt.status === 'requested') return unanswered(attempt);
  return attempt;
}

/** Closes an attempt no run picks up again. */
export async function closeAttempt(
  ctx: RunContext,
  attempt: Attempt,
  status: string,
  message: string,
): Promise<void> {
  await ctx.destination.state.updateAttempt(attempt.attempt_id, {
    status,
    message,
    updated_at: isoAt(ctx.clock),
  });
}

/**
 * Asks for (and pays for) the job's real-time operation: its attempt recorded first, then the
 * request with the number of records the guard approved, then its answer recorded.
 * `usedBefore`: the account's credits used just before (see `Attempt.used_before`).
 */
export async function buyRealTime(
  run: JobRun,
  estimate: CreditEstimate,
  ask: (records: number) => Promise<RealTimeAnswer>,
  usedBefore?: number,
): Promise<Attempt> {
  const { ctx, job, outcome, log } = run;
  const state = ctx.destination.state;
  const attempt = newAttempt(ctx, job, estimate, usedBefore);
  // Written BEFORE the request that pays: a crash from here on is found by the next run.
  await state.insertAttempt(attempt);
  await checkpoint(ctx, 'request-recorded', job.name);
  const answer = await ask(estimate.records).catch(async (error: unknown) => {
    // Refused (402): nothing was bought, and nothing is left for a later run to settle.
    if (error instanceof ApiError && error.status === 402) {
      await closeAttempt(ctx, attempt, 'abandoned', `the service refused it: ${error.message}`);
    }
    throw error;
  });
  const now = isoAt(ctx.clock);
  const changes = {
    download_id: answer.id,
    status: 'started',
    started_at: now,
    updated_at: now,
    num_records: answer.records,
    credits: JSON.stringify(answer.credits),
    payload: answer.payload ?? null,
  };
  await state.updateAttempt(attempt.attempt_id, changes);
  Object.assign(attempt, changes);
  outcome.download_id = answer.id;
  log.info(
    { download_id: answer.id },
    `${describeKind(job)} ${answer.id} asked for ${answer.records} records`,
  );
  await checkpoint(ctx, 'download-started', job.name);
  return attempt;
}

/** `targeted update`, `scrape` or `download`, for messages. */
export function describeKind(job: Pick<JobSpec, 'kind'>): string {
  return job.kind === 'targeted_update' ? 'targeted update' : job.kind;
}

/** The attempt row of a scrape or a targeted update (which loads nothing: no load settings). */
function newAttempt(
  ctx: RunContext,
  job: JobSpec,
  estimate: CreditEstimate,
  usedBefore: number | undefined,
): Attempt {
  const loads = job.kind !== 'targeted_update';
  return requestedAttempt(ctx, job, estimate, isoAt(ctx.clock), {
    load_hash: loads ? job.loadHash : null,
    load_settings: loads ? JSON.stringify(job.loadSettings) : null,
    write_mode: loads ? job.write : null,
    format: loads ? job.format : null,
    kind: job.kind,
    payload: null,
    used_before: usedBefore ?? null,
  });
}
