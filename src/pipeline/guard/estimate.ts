import type { CreditType } from '../../catalog.js';
import type { SearchRequest, ServiceClient } from '../../client/types.js';
import type { Budget, JobSpec } from '../spec/spec.js';
import { type BudgetStanding, budgetText } from './budget.js';
import { creditsFor, recordsToBuy, totalCredits } from './figures.js';

/**
 * What a job would cost and whether the credit guard lets it start, before anything is spent:
 * counts are free. `plan` shows these; `run` refuses a job whose estimate has a refusal.
 */
export interface CreditEstimate {
  job: string;
  found: number;
  records: number;
  needed: Partial<Record<CreditType, number>>;
  /** Credits left per type, where the account says (not v3, not a legacy plan). */
  remaining: Partial<Record<CreditType, number>> | undefined;
  /**
   * `refuse` when there is a refusal; `unknown` when nothing refuses the job but the account
   * cannot say whether it can pay (a legacy plan): `run` then starts it, and the service's own
   * refusal (402) stops it if not; else `pass`.
   */
  verdict: 'pass' | 'refuse' | 'unknown';
  /** A legacy plan's total counter (`num_credits_used`), when the account is on one. */
  legacy?: { total_used: number };
  /** Reasons the credit guard refuses the job; empty when it passes. */
  refusals: Refusal[];
}

export interface Refusal {
  message: string;
  needed: number;
  remaining: number;
  /** A credit type, `max_credits`, or a budget (`budget:property/month`). */
  type: string;
  code: 'SLUICE_CREDIT_GUARD' | 'SLUICE_BUDGET';
}

/** The search a job's download (and its count) sends. */
export function searchRequestOf(job: JobSpec, query = job.query): SearchRequest {
  return {
    type: job.type,
    query,
    format: job.format,
    ...(job.view === undefined ? {} : { view: job.view }),
    ...(job.type === 'properties'
      ? {
          autoTrace: job.auto_trace,
          ...(job.address_matching === undefined ? {} : { addressMatching: job.address_matching }),
          ...(job.only_traceable === undefined ? {} : { onlyTraceable: job.only_traceable }),
        }
      : {}),
  };
}

/**
 * What caps the job's purchase besides the records its query finds: its `records:`, its
 * `max_credits`, the pipeline's budgets of the credit types it spends, and the credits the
 * account has left (where the account says: a per-type plan). Where one does, the download asks
 * for the number the guard approved (`records` of its estimate) and no more, so that records
 * that appear between the guard's count and the start cannot take it past the cap. Empty when
 * nothing caps it (v3, or a legacy plan, with none of the rest).
 */
export function capsOf(
  job: JobSpec,
  estimate: CreditEstimate,
  budgets: readonly Pick<Budget, 'type' | 'period'>[],
): string[] {
  const caps: string[] = [];
  if (job.records !== undefined) caps.push(`records: ${job.records}`);
  if (job.max_credits !== undefined) caps.push(`max_credits: ${job.max_credits}`);
  for (const budget of budgets) {
    if (estimate.needed[budget.type] !== undefined)
      caps.push(`the ${budget.type} budget a ${budget.period}`);
  }
  if (estimate.remaining !== undefined) caps.push("the account's credits left");
  return caps;
}

/**
 * What the account says is left: per type, or nothing on a legacy plan (one total counter and
 * no allotment per type) or through v3 (no account operation).
 */
export type AccountCredits =
  | { plan: 'per-type'; left: Partial<Record<CreditType, number>> }
  | { plan: 'legacy'; totalUsed: number }
  | { plan: 'none' };

export async function accountCredits(
  client: ServiceClient,
  signal?: AbortSignal,
): Promise<AccountCredits> {
  if (client.api !== 'v4') return { plan: 'none' };
  const account = await client.account({ signal });
  if (account.plan === 'legacy') return { plan: 'legacy', totalUsed: account.totalUsed ?? 0 };
  const left: Partial<Record<CreditType, number>> = {};
  for (const [type, credits] of Object.entries(account.credits) as [
    CreditType,
    { remaining: number },
  ][]) {
    left[type] = credits.remaining;
  }
  return { plan: 'per-type', left };
}

/** A budget as the guard checks it: `planned` is what jobs before this one (in a plan) take. */
export interface BudgetLeft extends BudgetStanding {
  planned: number;
}

/**
 * The guard's verdict for a job that would download `records` of `found` records: its
 * max_credits, the credits the account has left of each type it needs, and what is left of
 * each of the pipeline's budgets of those types.
 */
export function checkCredits(
  job: JobSpec,
  found: number,
  records: number,
  needed: Partial<Record<CreditType, number>>,
  account: AccountCredits,
  budgets: readonly BudgetLeft[] = [],
): CreditEstimate {
  const refusals: Refusal[] = [];
  const total = totalCredits(needed);
  const lookup = job.people_keys_from !== undefined;
  const verb = lookup ? 'could' : 'would';
  const needs = lookup ? 'could need up to' : 'needs';
  if (job.max_credits !== undefined && total > job.max_credits) {
    refusals.push({
      message: `job '${job.name}' ${verb} spend ${total} credits${lookup ? ' (one per owner)' : ''}, more than its max_credits of ${job.max_credits}`,
      needed: total,
      remaining: job.max_credits,
      type: 'max_credits',
      code: 'SLUICE_CREDIT_GUARD',
    });
  }
  let remaining: CreditEstimate['remaining'];
  if (account.plan === 'per-type') {
    remaining = {};
    for (const [type, n] of Object.entries(needed) as [CreditType, number][]) {
      const have = account.left[type] ?? 0;
      remaining[type] = have;
      if (n > have) {
        refusals.push({
          message: `job '${job.name}' ${needs} ${n} ${type} credits, ${have} remain`,
          needed: n,
          remaining: have,
          type,
          code: 'SLUICE_CREDIT_GUARD',
        });
      }
    }
  }
  for (const budget of budgets) {
    const n = needed[budget.type];
    if (n === undefined) continue;
    const left = budget.limit - budget.spent - budget.planned;
    if (n <= left) continue;
    const before =
      budget.planned > 0 ? `, ${budget.planned} taken by the jobs planned before it` : '';
    refusals.push({
      message: `job '${job.name}' ${needs} ${n} ${budget.type} credits, more than is left of the budget of ${budgetText(budget)}: ${budget.spent} spent since ${budget.from}${before}, ${Math.max(0, left)} left until ${budget.until}`,
      needed: n,
      remaining: Math.max(0, left),
      type: `budget:${budget.type}/${budget.period}`,
      code: 'SLUICE_BUDGET',
    });
  }
  const verdict = refusals.length > 0 ? 'refuse' : account.plan === 'legacy' ? 'unknown' : 'pass';
  return {
    job: job.name,
    found,
    records,
    needed,
    remaining,
    verdict,
    ...(account.plan === 'legacy' ? { legacy: { total_used: account.totalUsed } } : {}),
    refusals,
  };
}

/**
 * The guard's verdict for a job, from a free count, the account's credits left and the
 * pipeline's budgets as they stand (`budgets`, from its state tables).
 */
export async function estimateJob(
  client: ServiceClient,
  job: JobSpec,
  options: {
    signal?: AbortSignal;
    request?: SearchRequest;
    budgets?: readonly BudgetStanding[];
  } = {},
): Promise<CreditEstimate> {
  const request = options.request ?? searchRequestOf(job);
  const { numFound } = await client.count(request, { signal: options.signal });
  const records = recordsToBuy(job, numFound);
  const account = await accountCredits(client, options.signal);
  const budgets = (options.budgets ?? []).map((b) => ({ ...b, planned: 0 }));
  return checkCredits(job, numFound, records, creditsFor(job, records), account, budgets);
}
