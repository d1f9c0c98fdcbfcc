import { CreditGuardError } from '../../errors.js';
import type { Attempt, CursorRow } from '../../load/destination.js';
import type { Logger } from '../../log.js';
import { num } from '../../util/words.js';
import { type BudgetStanding, budgetStandings } from '../guard/budget.js';
import { type CreditEstimate, searchRequestOf } from '../guard/estimate.js';
import type { JobRun } from '../job-run.js';
import { describeRange, rangeOf, rangeQuery, reattachedRange } from '../load/incremental.js';
import { type IncrementalRange, inStage } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import { creditAttributes, inSpan } from '../trace.js';
import { earlierAttempt } from './earlier-attempt.js';
import { startNewDownload } from './start-download.js';

/**
 * The extract stage: the credit guard, then a download to load: re-attached (an earlier run
 * started it), adopted (an earlier run asked for it and died before hearing its id), or started
 * (and paid for) now (start-download.ts); then polling it until it is done (poll-download.ts).
 * What earlier runs left is sorted out in earlier-attempt.ts.
 */

export interface DownloadToLoad {
  attempt: Attempt;
  /** False when an earlier run started it: its tables may hold some of its files already. */
  startedNow: boolean;
}

/**
 * The download the job loads, or undefined when its query matches nothing (nothing is
 * started, nothing spent).
 */
export async function ensureDownload(
  run: JobRun,
  /** Runs once the guard has passed, before a new download is asked for (or none is needed). */
  beforeNew: () => Promise<void>,
): Promise<DownloadToLoad | undefined> {
  const { ctx, job } = run;
  // The jobs of a run start their downloads in the file's order, one after another (RunGuard).
  await ctx.guard.turn(job.name);
  try {
    return await ensureDownloadInTurn(run, beforeNew);
  } finally {
    ctx.guard.end(job.name);
  }
}

async function ensureDownloadInTurn(
  run: JobRun,
  beforeNew: () => Promise<void>,
): Promise<DownloadToLoad | undefined> {
  const { ctx, job, outcome, log } = run;
  const attempt = await earlierAttempt(run);
  const saved = job.incremental
    ? await ctx.destination.state.cursor(ctx.spec.name, job.name)
    : undefined;
  if (attempt) {
    reattach(run, attempt, saved);
    return { attempt, startedNow: false };
  }
  const range = rangeOf(job, saved, ctx.fullRefresh, ctx.client.serviceTime());
  outcome.incremental = range;
  if (range) log.info(describeRange(range));
  const { request, estimate } = await passGuard(run, range);
  outcome.stage = 'extract';
  await beforeNew();
  if (estimate.found === 0) {
    log.info('no records match the query; nothing to download');
    return undefined;
  }
  // Its contract and the guard passed: now, and not before, its view may change the account.
  await inSpan('views', { 'sluice.view': job.view }, () =>
    inStage('views', () => ctx.views.ready(job.view)),
  );
  outcome.stage = 'extract';
  const fresh = await inSpan('start', {}, async (span) => {
    const started = await startNewDownload(run, request, estimate, range);
    span.setAttributes({ 'sluice.download_id': started.download_id ?? undefined });
    return started;
  });
  return { attempt: fresh, startedNow: true };
}

/** The job goes on with the download an earlier run started (`saved`: the job's cursor). */
function reattach(run: JobRun, attempt: Attempt, saved: CursorRow | undefined): void {
  const { ctx, job, outcome, log } = run;
  outcome.reattached = true;
  outcome.found = attempt.num_found;
  outcome.download_id = attempt.download_id;
  outcome.incremental = reattachedRange(job, attempt, saved);
  log.info(`re-attaching to download ${attempt.download_id} started at ${attempt.started_at}`);
  if (ctx.fullRefresh && attempt.cursor_from !== null) {
    log.warn(
      `--full-refresh: download ${attempt.download_id} (records since ${attempt.cursor_from}) is paid for and is loaded first; the full refresh is the next new download (run with --fresh as well to leave this one)`,
    );
  }
}

/**
 * The credit guard's check of a new purchase (a download; a scrape or a targeted update, which
 * cost as many credits as their records): throws its refusal, else its estimate.
 */
export function passGuard(run: JobRun, range: IncrementalRange | undefined) {
  return inSpan('guard', {}, async (span) => {
    const passed = await guard(run, range);
    span.setAttributes({
      'sluice.records.found': passed.estimate.found,
      'sluice.records': passed.estimate.records,
      ...creditAttributes(passed.estimate.needed, 'credits_needed'),
    });
    return passed;
  });
}

async function guard(run: JobRun, range: IncrementalRange | undefined) {
  const { ctx, job, outcome, log } = run;
  outcome.stage = 'guard';
  const request = searchRequestOf(job, rangeQuery(job.query, range));
  // A declared view may not be on the service yet (it is synced after the guard passes): the
  // count goes without it, as a view decides the fields, never which records match.
  const counted = { ...request };
  if (ctx.views.declares(counted.view)) delete counted.view;
  // What the jobs before this one bought is in the state tables already: it counts.
  const state = ctx.destination.state;
  const budgets = await inStage('guard', () => budgetStandings(ctx.spec, state, ctx.clock.now()));
  const estimate = await inStage('guard', () => ctx.guard.check(job, counted, ctx.signal, budgets));
  outcome.found = estimate.found;
  if (log.isLevelEnabled('debug')) logGuard(log, job, estimate, budgets);
  const refusal = estimate.refusals[0];
  if (refusal) throw new CreditGuardError(refusal.message, refusal);
  if (estimate.legacy) {
    log.info(
      `the account is on a legacy plan (${estimate.legacy.total_used} credits used in all): the service does not say what is left, so the guard checked max_credits${ctx.spec.budgets.length > 0 ? ' and the budgets' : ''} only; the service refuses (402) a download the account cannot pay for`,
    );
  }
  return { request, estimate };
}

/** The guard's arithmetic, for the debug log: found, to buy, credits needed and left, budgets. */
function logGuard(
  log: Logger,
  job: JobSpec,
  estimate: CreditEstimate,
  budgets: readonly BudgetStanding[],
): void {
  const credits = (by: Partial<Record<string, number>> | undefined) =>
    by === undefined
      ? 'unknown'
      : Object.entries(by)
          .map(([type, n]) => `${num(n ?? 0)} ${type}`)
          .join(', ') || '0';
  const budgetsLeft = budgets.map((b) => ({
    budget: `${b.type}/${b.period}`,
    limit: b.limit,
    spent: b.spent,
    left: b.limit - b.spent,
  }));
  const parts = [
    `${num(estimate.found)} found`,
    `${num(estimate.records)} to buy${job.records === undefined ? '' : ` (records: ${job.records})`}`,
    `needs ${credits(estimate.needed)}`,
    `account has ${credits(estimate.remaining)} left`,
    ...(job.max_credits === undefined ? [] : [`max_credits ${num(job.max_credits)}`]),
    ...budgetsLeft.map((b) => `budget ${b.budget} ${num(b.left)} of ${num(b.limit)} left`),
  ];
  log.debug(
    {
      guard: estimate.verdict,
      found: estimate.found,
      records: estimate.records,
      needed: estimate.needed,
      remaining: estimate.remaining ?? null,
      budgets: budgetsLeft,
    },
    `credit guard: ${parts.join('; ')}: ${estimate.verdict}`,
  );
}
