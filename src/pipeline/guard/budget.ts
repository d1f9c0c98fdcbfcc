import { CREDIT_TYPES, isDataType } from '../../catalog.js';
import type { Attempt, State } from '../../load/destination.js';
import type { Budget, BudgetPeriod, PipelineSpec } from '../spec/spec.js';
import { type Credits, creditsFor, recordsAsked } from './figures.js';

/**
 * Credit budgets (`budget:`): what a pipeline may spend per credit type and period, counted
 * from what its own state tables say it bought, and checked by the credit guard before a job
 * spends.
 *
 * Periods are calendar periods in UTC (a day from midnight, a week from Monday, a month from
 * the 1st, a year from 1 January), not rolling windows: spending is billed and reported by the
 * calendar, a budget renews at a moment a refusal can name (and a scheduled run can be planned
 * around), and machines in any time zone count the same purchases in the same period. A
 * rolling window would instead free credits hour by hour as old purchases age out of it, so a
 * job refused tonight could pass tomorrow morning without anything having renewed. The price
 * of the calendar: around a boundary a pipeline can spend one period's budget at the end of it
 * and the next period's at the start of the next.
 */

/** A budget as it stands in its current period. */
export interface BudgetStanding extends Budget {
  /** The current period: from (inclusive) until (exclusive), ISO times in UTC. */
  from: string;
  until: string;
  /** Credits of `type` the pipeline bought in the period. */
  spent: number;
}

/** The start and end (exclusive) of the calendar period in UTC that holds `now`. */
export function periodBounds(period: BudgetPeriod, now: number): { from: number; until: number } {
  const at = new Date(now);
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  const day = at.getUTCDate();
  switch (period) {
    case 'day':
      return { from: Date.UTC(year, month, day), until: Date.UTC(year, month, day + 1) };
    case 'week': {
      // ISO weeks start on Monday; getUTCDay() counts from Sunday.
      const monday = day - ((at.getUTCDay() + 6) % 7);
      return { from: Date.UTC(year, month, monday), until: Date.UTC(year, month, monday + 7) };
    }
    case 'month':
      return { from: Date.UTC(year, month, 1), until: Date.UTC(year, month + 1, 1) };
    case 'year':
      return { from: Date.UTC(year, 0, 1), until: Date.UTC(year + 1, 0, 1) };
  }
}

/**
 * Each of the pipeline's budgets in the period that holds `now`, with what the pipeline bought
 * in it; `state` undefined (no state tables yet) means nothing bought.
 */
export async function budgetStandings(
  spec: PipelineSpec,
  state: Pick<State, 'attemptsSince'> | undefined,
  now: number,
): Promise<BudgetStanding[]> {
  if (spec.budgets.length === 0) return [];
  const periods = spec.budgets.map((budget) => ({ budget, ...periodBounds(budget.period, now) }));
  const since = new Date(Math.min(...periods.map((p) => p.from))).toISOString();
  const bought = state
    ? (await state.attemptsSince(spec.name, since)).map((attempt) => ({
        at: Date.parse(attempt.requested_at),
        credits: attemptCredits(attempt, spec),
      }))
    : [];
  return periods.map(({ budget, from, until }) => ({
    ...budget,
    from: new Date(from).toISOString(),
    until: new Date(until).toISOString(),
    spent: bought
      .filter((b) => b.at >= from && b.at < until)
      .reduce((sum, b) => sum + (b.credits[budget.type] ?? 0), 0),
  }));
}

const FINISHED = new Set(['loaded', 'cancelled']);

/**
 * What one download attempt (or targeted update, or scrape: each costs one credit of its data
 * type a record) bought, per credit type, counted once, in the period it was asked for: its row is the one the run that started it wrote, and a later run that re-attaches to
 * it adds no row (it was paid once, by that run).
 *
 * A download loaded or cancelled carries its cost (`credits`, written when its job finished).
 * One the service started and no job finished (running, left on a timeout, failed, or left
 * behind by --fresh or a changed job) is counted at the records it asked for: the service
 * charges as it delivers, and a budget that waited for the end would let the next job spend
 * what this one is still taking. An attempt that never heard a download id bought nothing,
 * unless it is still open (a run stopped between asking and hearing the answer): that one may
 * have, and counts until a later run finds out.
 */
export function attemptCredits(attempt: Attempt, spec: PipelineSpec): Credits {
  if (attempt.credits) return creditsOfAttempt(attempt.credits);
  if (attempt.download_id === null && attempt.status !== 'requested') return {};
  // The row says what it asked for; the job's `records:` may have changed since, so it is not
  // asked (`records: undefined`).
  const asked = recordsAsked({ records: undefined }, attempt);
  const records = Number(
    (FINISHED.has(attempt.status) ? attempt.num_records : asked) ?? asked ?? 0,
  );
  // The row does not say whether it asked for autotrace; the job of that name does (an owner
  // lookup's parts are `<job>#<n>`, people jobs, which have none).
  const job = spec.jobs.find((j) => j.name === attempt.job.split('#')[0]);
  const dataType = isDataType(attempt.data_type) ? attempt.data_type : job?.type;
  if (dataType === undefined) return {};
  return creditsFor({ type: dataType, auto_trace: job?.auto_trace }, records);
}

/** The `credits` JSON of an attempt; anything but counts of known credit types is left out. */
export function creditsOfAttempt(json: string | null): Credits {
  if (json === null) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return {};
  }
  const credits: Credits = {};
  if (!parsed || typeof parsed !== 'object') return credits;
  for (const type of CREDIT_TYPES) {
    const n = (parsed as Record<string, unknown>)[type];
    if (typeof n === 'number' && Number.isFinite(n)) credits[type] = n;
  }
  return credits;
}

/** `3000 property credits a month`, for messages (which write numbers as they are). */
export function budgetText(budget: Budget): string {
  return `${budget.limit} ${budget.type} credits a ${budget.period}`;
}
