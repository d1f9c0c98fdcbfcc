import type { CreditType } from '../catalog.js';
import type { ServiceClient } from '../client/types.js';
import {
  type CreditEstimate,
  checkCredits,
  creditsFor,
  creditsLeft,
  type Remaining,
  searchRequestOf,
} from './estimate.js';
import type { PipelineSpec } from './spec.js';

/**
 * What `run` would do and spend, found out for free: the views it would create or update, and
 * per job the records its query matches and the credit guard's verdict, job after job as `run`
 * meets them (each job's purchase lowers what is left for the next). Works before any run: a
 * view the service does not have yet is left out of the count (a view decides the fields, never
 * which records match).
 */
export interface PlanReport {
  pipeline: string;
  guard: 'pass' | 'refuse';
  views: { create: string[]; update: string[]; unchanged: string[] };
  jobs: CreditEstimate[];
}

export async function planPipeline(
  spec: PipelineSpec,
  client: ServiceClient,
  signal?: AbortSignal,
): Promise<PlanReport> {
  const views: PlanReport['views'] = { create: [], update: [], unchanged: [] };
  const declared = Object.entries(spec.views);
  if (declared.length > 0 && client.api === 'v4') {
    const existing = new Map((await client.listViews({ signal })).map((v) => [v.name, v]));
    for (const [name, { fields }] of declared) {
      const current = existing.get(name);
      if (!current) views.create.push(name);
      else if (current.fields.join('\u0000') !== fields.join('\u0000')) views.update.push(name);
      else views.unchanged.push(name);
    }
  }
  const notThere = new Set([...views.create, ...views.update]);
  const left: Remaining = await creditsLeft(client, signal);
  const jobs: CreditEstimate[] = [];
  for (const job of spec.jobs) {
    let estimate: CreditEstimate;
    const from = job.people_keys_from;
    if (from !== undefined) {
      // At most one person per property the other job loads, one people credit each.
      const properties = jobs.find((e) => e.job === from)?.records ?? 0;
      estimate = checkCredits(job, properties, properties, { people: properties }, left);
    } else {
      const request = searchRequestOf(job);
      if (request.view !== undefined && notThere.has(request.view)) delete request.view;
      const { numFound } = await client.count(request, { signal });
      const records = Math.min(job.records ?? numFound, numFound);
      estimate = checkCredits(job, numFound, records, creditsFor(job, records), left);
    }
    jobs.push(estimate);
    if (estimate.refusals.length === 0 && left !== undefined) {
      for (const [type, n] of Object.entries(estimate.needed) as [CreditType, number][]) {
        left[type] = (left[type] ?? 0) - n;
      }
    }
  }
  const guard = jobs.some((e) => e.refusals.length > 0) ? 'refuse' : 'pass';
  return { pipeline: spec.name, guard, views, jobs };
}
