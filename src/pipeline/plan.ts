import { type CreditType, premadeView } from '../catalog.js';
import type { ServiceClient } from '../client/types.js';
import { PipelineSpecError } from '../errors.js';
import type { CursorRow } from '../load/destination.js';
import {
  type CreditEstimate,
  checkCredits,
  creditsFor,
  creditsLeft,
  type Remaining,
  searchRequestOf,
} from './estimate.js';
import { rangeOf, rangeQuery } from './incremental.js';
import { openPipelineDestination } from './run.js';
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
  jobs: PlannedJob[];
}

export interface PlannedJob extends CreditEstimate {
  /** An incremental job: its range, and what it saves against a full refresh. */
  incremental?: {
    cursor: string;
    /** The saved cursor, or null (the job has not loaded yet, or --full-refresh). */
    last: string | null;
    from: string | null;
    /** Records a full refresh would download. */
    full_records: number;
    /** Credits the range saves against a full refresh. */
    credits_saved: number;
  };
}

export interface PlanOptions {
  signal?: AbortSignal;
  /** Saved cursors of incremental jobs, by job (from the destination's state, when it has one). */
  cursors?: ReadonlyMap<string, CursorRow>;
  /** Plan a `run --full-refresh`. */
  fullRefresh?: boolean;
}

/**
 * The views jobs name that are neither declared nor pre-made, each with the first job naming
 * it: the service must hold them (a view made in its portal, say).
 */
function serviceViews(spec: PipelineSpec): Map<string, string> {
  const names = new Map<string, string>();
  for (const job of spec.jobs) {
    const view = job.view;
    if (view === undefined || Object.hasOwn(spec.views, view) || premadeView(view)) continue;
    if (!names.has(view)) names.set(view, job.name);
  }
  return names;
}

export async function planPipeline(
  spec: PipelineSpec,
  client: ServiceClient,
  options: PlanOptions = {},
): Promise<PlanReport> {
  const { signal } = options;
  const views: PlanReport['views'] = { create: [], update: [], unchanged: [] };
  const declared = Object.entries(spec.views);
  const fromService = serviceViews(spec);
  // v3 cannot list views: its searches are left to say whether a view exists.
  if ((declared.length > 0 || fromService.size > 0) && client.api === 'v4') {
    const existing = new Map((await client.listViews({ signal })).map((v) => [v.name, v]));
    for (const [name, { fields }] of declared) {
      const current = existing.get(name);
      if (!current) views.create.push(name);
      else if (current.fields.join('\u0000') !== fields.join('\u0000')) views.update.push(name);
      else views.unchanged.push(name);
    }
    for (const [name, job] of fromService) {
      if (existing.has(name)) continue;
      const held = [...existing.keys()].slice(0, 10).join(', ');
      throw new PipelineSpecError(
        `view '${name}' is not declared under views:, not a pre-made view, and not one the service lists (${held ? `it lists: ${held}` : 'it lists none'})`,
        { file: spec.file, path: `jobs.${job}.view` },
      );
    }
  }
  const notThere = new Set([...views.create, ...views.update]);
  const left: Remaining = await creditsLeft(client, signal);
  const jobs: PlannedJob[] = [];
  for (const job of spec.jobs) {
    let estimate: PlannedJob;
    const from = job.people_keys_from;
    if (from !== undefined) {
      // At most one person per property the other job loads, one people credit each.
      const properties = jobs.find((e) => e.job === from)?.records ?? 0;
      estimate = checkCredits(job, properties, properties, { people: properties }, left);
    } else {
      const range = rangeOf(job, options.cursors?.get(job.name), options.fullRefresh === true);
      const count = async (query: string) => {
        const request = searchRequestOf(job, query);
        if (request.view !== undefined && notThere.has(request.view)) delete request.view;
        const { numFound } = await client.count(request, { signal });
        return { numFound, records: Math.min(job.records ?? numFound, numFound) };
      };
      const { numFound, records } = await count(rangeQuery(job.query, range));
      estimate = checkCredits(job, numFound, records, creditsFor(job, records), left);
      if (range) {
        const full = range.from === null ? records : (await count(job.query)).records;
        const total = (n: number) =>
          Object.values(creditsFor(job, n)).reduce((a, b) => a + (b ?? 0), 0);
        estimate.incremental = {
          cursor: range.cursor,
          last: range.last,
          from: range.from,
          full_records: full,
          credits_saved: total(full) - total(records),
        };
      }
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

/**
 * The saved cursors of the pipeline's incremental jobs, read from its destination without
 * writing anything; none when it has no state yet (the next run is a first run).
 */
export async function savedCursors(
  spec: PipelineSpec,
  env: NodeJS.ProcessEnv,
): Promise<Map<string, CursorRow>> {
  const cursors = new Map<string, CursorRow>();
  if (!spec.jobs.some((j) => j.incremental)) return cursors;
  const destination = await openPipelineDestination(spec, env, { readOnly: true }).catch(
    (error: unknown) => {
      if ((error as { code?: unknown }).code === 'SLUICE_NO_STATE') return undefined;
      throw error;
    },
  );
  try {
    if (destination && (await destination.hasState())) {
      for (const row of await destination.state.cursors(spec.name)) cursors.set(row.job, row);
    }
  } finally {
    await destination?.close();
  }
  return cursors;
}
