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

export async function estimateJob(
  client: ServiceClient,
  job: JobSpec,
  options: { signal?: AbortSignal; request?: SearchRequest } = {},
): Promise<CreditEstimate> {
  const request = options.request ?? searchRequestOf(job);
  const { numFound } = await client.count(request, { signal: options.signal });
  const records = Math.min(job.records ?? numFound, numFound);
  return checkCredits(client, job, numFound, records, creditsFor(job, records), options.signal);
}

/**
 * What an owner lookup (`people_keys_from`) could cost, before its properties are loaded: at
 * most one person per property of the job it reads, one people credit each.
 */
export async function estimateOwnerLookup(
  client: ServiceClient,
  job: JobSpec,
  properties: number,
  signal?: AbortSignal,
): Promise<CreditEstimate> {
  const estimate = await checkCredits(
    client,
    job,
    properties,
    properties,
    { people: properties },
    signal,
  );
  for (const refusal of estimate.refusals)
    refusal.message = refusal.message.replace(' would ', ' could ');
  return estimate;
}

async function checkCredits(
  client: ServiceClient,
  job: JobSpec,
  found: number,
  records: number,
  needed: Partial<Record<CreditType, number>>,
  signal?: AbortSignal,
): Promise<CreditEstimate> {
  const refusals: CreditEstimate['refusals'] = [];
  const total = Object.values(needed).reduce((a, b) => a + (b ?? 0), 0);
  if (job.max_credits !== undefined && total > job.max_credits) {
    refusals.push({
      message: `job '${job.name}' would spend ${total} credits, more than its max_credits of ${job.max_credits}`,
      needed: total,
      remaining: job.max_credits,
      type: 'max_credits',
    });
  }
  let remaining: CreditEstimate['remaining'];
  if (client.api === 'v4') {
    const account = await client.account({ signal });
    remaining = {};
    for (const [type, n] of Object.entries(needed) as [CreditType, number][]) {
      const left = account.credits[type].remaining;
      remaining[type] = left;
      if (n > left) {
        refusals.push({
          message: `job '${job.name}' needs ${n} ${type} credits, ${left} remain`,
          needed: n,
          remaining: left,
          type,
        });
      }
    }
  }
  return { job: job.name, found, records, needed, remaining, refusals };
}
