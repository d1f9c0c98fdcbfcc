import { CREDIT_TYPE_OF, type CreditType } from '../catalog.js';
import type { SearchRequest, ServiceClient } from '../client/types.js';
import type { JobSpec } from './spec.js';

/**
 * What a job would cost and whether the credit guard lets it start, before anything is spent:
 * counts are free. `plan` shows these; `run` refuses a job whose estimate has a refusal.
 */
export interface CreditEstimate {
  job: string;
  found: number;
  records: number;
  needed: Partial<Record<CreditType, number>>;
  remaining: Partial<Record<CreditType, number>> | undefined;
  /** Reasons the credit guard refuses the job; empty when it passes. */
  refusals: { message: string; needed: number; remaining: number; type: string }[];
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
          ...(job.require_people_data === undefined
            ? {}
            : { requirePeopleData: job.require_people_data }),
        }
      : {}),
  };
}

/** Credits a download of `records` records of the job costs, per type. */
export function creditsFor(job: JobSpec, records: number): Partial<Record<CreditType, number>> {
  return job.auto_trace
    ? { property: records, people: records }
    : { [CREDIT_TYPE_OF[job.type]]: records };
}

/** Credits left per type (v4), or undefined where the API cannot say (v3). */
export type Remaining = Partial<Record<CreditType, number>> | undefined;

export async function creditsLeft(client: ServiceClient, signal?: AbortSignal): Promise<Remaining> {
  if (client.api !== 'v4') return undefined;
  const account = await client.account({ signal });
  const left: Partial<Record<CreditType, number>> = {};
  for (const [type, credits] of Object.entries(account.credits) as [
    CreditType,
    { remaining: number },
  ][]) {
    left[type] = credits.remaining;
  }
  return left;
}

/** The guard's verdict for a job that would download `records` of `found` records. */
export function checkCredits(
  job: JobSpec,
  found: number,
  records: number,
  needed: Partial<Record<CreditType, number>>,
  left: Remaining,
): CreditEstimate {
  const refusals: CreditEstimate['refusals'] = [];
  const total = Object.values(needed).reduce((a, b) => a + (b ?? 0), 0);
  const verb = job.people_keys_from ? 'could' : 'would';
  if (job.max_credits !== undefined && total > job.max_credits) {
    refusals.push({
      message: `job '${job.name}' ${verb} spend ${total} credits${job.people_keys_from ? ' (one per owner)' : ''}, more than its max_credits of ${job.max_credits}`,
      needed: total,
      remaining: job.max_credits,
      type: 'max_credits',
    });
  }
  let remaining: CreditEstimate['remaining'];
  if (left !== undefined) {
    remaining = {};
    for (const [type, n] of Object.entries(needed) as [CreditType, number][]) {
      const have = left[type] ?? 0;
      remaining[type] = have;
      if (n > have) {
        refusals.push({
          message: `job '${job.name}' ${job.people_keys_from ? 'could need up to' : 'needs'} ${n} ${type} credits, ${have} remain`,
          needed: n,
          remaining: have,
          type,
        });
      }
    }
  }
  return { job: job.name, found, records, needed, remaining, refusals };
}

/** The guard's verdict for a job, from a free count and the account's credits left. */
export async function estimateJob(
  client: ServiceClient,
  job: JobSpec,
  options: { signal?: AbortSignal; request?: SearchRequest } = {},
): Promise<CreditEstimate> {
  const request = options.request ?? searchRequestOf(job);
  const { numFound } = await client.count(request, { signal: options.signal });
  const records = Math.min(job.records ?? numFound, numFound);
  const left = await creditsLeft(client, options.signal);
  return checkCredits(job, numFound, records, creditsFor(job, records), left);
}
