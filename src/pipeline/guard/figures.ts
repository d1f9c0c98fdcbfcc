import { CREDIT_TYPE_OF, type CreditType, type DataType } from '../../catalog.js';
import type { Attempt } from '../../load/destination.js';
import type { JobSpec } from '../spec/spec.js';

/**
 * The figures derived from a job and what the service counts, each computed here and nowhere
 * else: the records a job buys, the records a started download is expected to hold, and what
 * they cost. The guard, `plan`, the download's progress and its messages all read these, so
 * that they cannot disagree about what a job buys.
 */

/** Credits per credit type. */
export type Credits = Partial<Record<CreditType, number>>;

/** Records a job buys of the `found` records its query matches: all, or its `records:` if fewer. */
export function recordsToBuy(job: Pick<JobSpec, 'records'>, found: number): number {
  return Math.min(job.records ?? found, found);
}

/**
 * Records a started download of the job is expected to hold: the number it asked for (what the
 * guard approved), else the records to buy of what its query matched when it started, else the
 * job's `records:`. Undefined when none is known (a download that asked for every match and
 * never heard how many).
 */
export function recordsAsked(
  job: Pick<JobSpec, 'records'>,
  attempt: Pick<Attempt, 'num_requested' | 'num_found'>,
): number | undefined {
  if (attempt.num_requested !== null && attempt.num_requested !== undefined)
    return Number(attempt.num_requested);
  if (attempt.num_found !== null && attempt.num_found !== undefined)
    return recordsToBuy(job, Number(attempt.num_found));
  return job.records;
}

/**
 * Credits a download of `records` records of a data type costs, per type: autotrace adds a
 * people credit per property.
 */
export function creditsFor(
  job: { type: DataType; auto_trace?: boolean | undefined },
  records: number,
): Credits {
  return job.type === 'properties' && job.auto_trace
    ? { property: records, people: records }
    : { [CREDIT_TYPE_OF[job.type]]: records };
}

/**
 * Credits an owner lookup may spend: one people credit for each of the `properties` the job it
 * looks up owners for loads (at most one owner each).
 */
export function lookupCredits(properties: number): Credits {
  return { people: properties };
}

/** Credits of all types together. */
export function totalCredits(credits: Credits): number {
  return Object.values(credits).reduce((a, b) => a + (b ?? 0), 0);
}
