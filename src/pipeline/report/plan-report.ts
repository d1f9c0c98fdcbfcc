import { type CreditType, premadeView } from '../../catalog.js';
import type { ServiceClient } from '../../client/types.js';
import { PipelineSpecError } from '../../errors.js';
import type { Attempt, CursorRow } from '../../load/destination.js';
import type { ColumnType } from '../../schema/types.js';
import { type BudgetStanding, budgetStandings } from '../guard/budget.js';
import {
  type AccountCredits,
  accountCredits,
  type BudgetLeft,
  type CreditEstimate,
  checkCredits,
  searchRequestOf,
} from '../guard/estimate.js';
import {
  creditsFor,
  lookupCredits,
  recordsAsked,
  recordsToBuy,
  totalCredits,
} from '../guard/figures.js';
import { type ContractBreach, contractBreaches } from '../load/contract.js';
import { rangeOf, rangeQuery } from '../load/incremental.js';
import { plannedTables } from '../load/job-columns.js';
import { openPipelineDestination } from '../run/run.js';
import { autotraceViewMessage, viewCarriesPeopleKeys } from '../spec/autotrace-view.js';
import { selectJobs } from '../spec/select.js';
import type { PipelineSpec } from '../spec/spec.js';

/**
 * What `run` would do and spend, found out for free: the views it would create or update, and
 * per job the records its query matches and the credit guard's verdict, job after job as `run`
 * meets them (each job's purchase lowers what is left for the next, of the account's credits
 * and of the pipeline's budgets). Works before any run: a view the service does not have yet
 * is left out of the count (a view decides the fields, never which records match).
 */
export interface PlanReport {
  pipeline: string;
  /**
   * `refuse` when the guard refuses a job; `unknown` when it refuses none but the account
   * cannot say what is left (a legacy plan: the service refuses what it cannot pay, with a 402);
   * else `pass`.
   */
  guard: 'pass' | 'refuse' | 'unknown';
  /** How the account is billed: per-type allotments, a legacy total, or unknown (v3). */
  account: { plan: 'per-type' | 'legacy' | 'none'; total_used?: number };
  /**
   * The declared views `run` would create or update: those of the jobs it would buy a download
   * for (a job refused, or failed by its contract, changes no view); and those the service
   * already has as declared.
   */
  views: { create: string[]; update: string[]; unchanged: string[] };
  jobs: PlannedJob[];
  /** Each budget in its current period, and what would be left of it after the planned jobs. */
  budgets: PlannedBudget[];
}

export interface PlannedBudget extends BudgetStanding {
  /** What the planned jobs the guard lets through would take of it. */
  planned: number;
  /** limit - spent - planned. */
  left: number;
}

export interface PlannedJob extends CreditEstimate {
  /**
   * The download an earlier run started for this job and did not finish: `run` re-attaches to
   * it, and pays nothing more (its run paid, and the budgets count it there).
   */
  reattaches?: string;
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
  /** The columns the job's `columns:` pins, by field, with their types. */
  pinned?: Record<string, ColumnType>;
  /** What the job's declared columns would change in tables its schema contract freezes. */
  schema_breaches?: ContractBreach[];
}

export interface PlanOptions {
  signal?: AbortSignal;
  /** Saved cursors of incremental jobs, by job (from the destination's state, when it has one). */
  cursors?: ReadonlyMap<string, CursorRow>;
  /** Plan a `run --full-refresh`. */
  fullRefresh?: boolean;
  /** Plan only the jobs these names or globs name (`--job`). */
  jobs?: string[];
  /** The pipeline's budgets as they stand (savedState); absent, nothing counts as spent. */
  budgets?: readonly BudgetStanding[];
  /** Unfinished downloads of earlier runs, by job (savedState): `run` re-attaches to them. */
  open?: ReadonlyMap<string, Attempt>;
  /** Schema contract breaches by job (savedState): `run` would fail those jobs, buying nothing. */
  breaches?: ReadonlyMap<string, ContractBreach[]>;
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

/**
 * What `run` would do to each declared view a job downloads with (views.ts): create or update
 * it, or leave it (`unchanged`). Throws for a view jobs name that the service does not list, or
 * that autotrace cannot use.
 */
async function planViews(
  spec: PipelineSpec,
  client: ServiceClient,
  signal: AbortSignal | undefined,
): Promise<{ viewState: Map<string, 'create' | 'update'>; unchanged: string[] }> {
  /** What run would do to each declared view a job downloads with (views.ts). */
  const viewState = new Map<string, 'create' | 'update'>();
  const unchanged: string[] = [];
  const declared = Object.entries(spec.views);
  const fromService = serviceViews(spec);
  // v3 cannot list views: its searches are left to say whether a view exists.
  if ((declared.length > 0 || fromService.size > 0) && client.api === 'v4') {
    const existing = new Map((await client.listViews({ signal })).map((v) => [v.name, v]));
    for (const [name, { fields }] of declared) {
      const current = existing.get(name);
      if (!current) viewState.set(name, 'create');
      else if (current.fields.join('\u0000') !== fields.join('\u0000'))
        viewState.set(name, 'update');
      else unchanged.push(name);
    }
    for (const [name, job] of fromService) {
      const listed = existing.get(name);
      const traced = spec.jobs.find((j) => j.view === name && j.auto_trace);
      if (listed && traced && !viewCarriesPeopleKeys(listed.fields)) {
        throw new PipelineSpecError(autotraceViewMessage(name, false), {
          file: spec.file,
          path: `jobs.${traced.name}.view`,
        });
      }
      if (listed) continue;
      const held = [...existing.keys()].slice(0, 10).join(', ');
      throw new PipelineSpecError(
        `view '${name}' is not declared under views:, not a pre-made view, and not one the service lists (${held ? `it lists: ${held}` : 'it lists none'})`,
        { file: spec.file, path: `jobs.${job}.view` },
      );
    }
  }
  return { viewState, unchanged };
}

export async function planPipeline(
  spec: PipelineSpec,
  client: ServiceClient,
  options: PlanOptions = {},
): Promise<PlanReport> {
  const { signal } = options;
  const { viewState, unchanged } = await planViews(spec, client, signal);
  const notThere = new Set(viewState.keys());
  const views: PlanReport['views'] = { create: [], update: [], unchanged };
  const account = await accountCredits(client, signal);
  const budgets: BudgetLeft[] = (
    options.budgets ?? (await budgetStandings(spec, undefined, Date.now()))
  ).map((b) => ({ ...b, planned: 0 }));
  const jobs: PlannedJob[] = [];
  for (const job of selectJobs(spec, options.jobs)) {
    let estimate: PlannedJob;
    const from = job.people_keys_from;
    if (from !== undefined) {
      // At most one person per property the other job loads, one people credit each.
      const properties = jobs.find((e) => e.job === from)?.records ?? 0;
      estimate = checkCredits(
        job,
        properties,
        properties,
        lookupCredits(properties),
        account,
        budgets,
      );
    } else if (reattached(job, options.open?.get(job.name))) {
      const open = options.open!.get(job.name)!;
      const records = recordsAsked(job, open) ?? 0;
      estimate = {
        ...checkCredits(job, Number(open.num_found ?? records), records, {}, account),
        reattaches: open.download_id!,
      };
    } else {
      estimate = await countedEstimate(job, client, options, notThere, account, budgets);
    }
    if (Object.keys(job.columns).length > 0) estimate.pinned = { ...job.columns };
    const breaches = options.breaches?.get(job.name);
    if (breaches && breaches.length > 0) estimate.schema_breaches = breaches;
    jobs.push(estimate);
    // A job its contract fails buys nothing, and leaves its view as it is.
    if (estimate.refusals.length === 0 && !breaches?.length) {
      spend(estimate.needed, account, budgets);
      const change = job.view === undefined ? undefined : viewState.get(job.view);
      const buys = estimate.reattaches === undefined && estimate.records > 0;
      if (change && buys && !views[change].includes(job.view!)) views[change].push(job.view!);
    }
  }
  const guard = jobs.some((e) => e.verdict === 'refuse')
    ? 'refuse'
    : account.plan === 'legacy'
      ? 'unknown'
      : 'pass';
  return {
    pipeline: spec.name,
    guard,
    account:
      account.plan === 'legacy'
        ? { plan: 'legacy', total_used: account.totalUsed }
        : { plan: account.plan },
    views,
    jobs,
    budgets: budgets.map((b) => ({ ...b, left: b.limit - b.spent - b.planned })),
  };
}

/**
 * A job's estimate from free counts: of the records it would buy now (since its cursor, if it
 * is incremental), and of a full refresh, to say what the cursor saves.
 */
async function countedEstimate(
  job: PipelineSpec['jobs'][number],
  client: ServiceClient,
  options: PlanOptions,
  notThere: ReadonlySet<string>,
  account: AccountCredits,
  budgets: readonly BudgetLeft[],
): Promise<PlannedJob> {
  const { signal } = options;
  const range = rangeOf(
    job,
    options.cursors?.get(job.name),
    options.fullRefresh === true,
    client.serviceTime(),
  );
  const count = async (query: string) => {
    const request = searchRequestOf(job, query);
    if (request.view !== undefined && notThere.has(request.view)) delete request.view;
    const { numFound } = await client.count(request, { signal });
    return { numFound, records: recordsToBuy(job, numFound) };
  };
  const { numFound, records } = await count(rangeQuery(job.query, range));
  const estimate: PlannedJob = checkCredits(
    job,
    numFound,
    records,
    creditsFor(job, records),
    account,
    budgets,
  );
  if (range) {
    const full = range.from === null ? records : (await count(job.query)).records;
    const total = (n: number) => totalCredits(creditsFor(job, n));
    estimate.incremental = {
      cursor: range.cursor,
      last: range.last,
      from: range.from,
      full_records: full,
      credits_saved: total(full) - total(records),
    };
  }
  return estimate;
}

/**
 * Whether `run` would re-attach to the job's open download instead of buying one: it was
 * started (its id is known) for the job as it is now. One whose id was never heard, `run`
 * looks for on the service first, which `plan` does not do: it plans a new one.
 */
function reattached(job: PipelineSpec['jobs'][number], open: Attempt | undefined): boolean {
  return open !== undefined && open.download_id !== null && open.spec_hash === job.downloadHash;
}

/** A job the guard lets through lowers what is left for the jobs after it. */
function spend(
  needed: Partial<Record<CreditType, number>>,
  account: AccountCredits,
  budgets: BudgetLeft[],
): void {
  for (const [type, n] of Object.entries(needed) as [CreditType, number][]) {
    if (account.plan === 'per-type') account.left[type] = (account.left[type] ?? 0) - n;
    for (const budget of budgets) if (budget.type === type) budget.planned += n;
  }
}

/** What `plan` reads of the pipeline's state tables: cursors, and what its budgets spent. */
export interface SavedState {
  /** Saved cursors of incremental jobs, by job; none with `fullRefresh`. */
  cursors: Map<string, CursorRow>;
  budgets: BudgetStanding[];
  /** Unfinished downloads of earlier runs, by job (read only with budgets: see PlanOptions). */
  open: Map<string, Attempt>;
  /** What jobs under a freezing schema contract would change in their tables, by job. */
  breaches: Map<string, ContractBreach[]>;
}

/**
 * The saved cursors of the pipeline's incremental jobs and its budgets in their periods at
 * `now`, read from its destination without writing anything; none spent and no cursor when it
 * has no state yet (the next run is a first run). The destination is opened only when the
 * pipeline has incremental jobs or budgets.
 */
export async function savedState(
  spec: PipelineSpec,
  env: NodeJS.ProcessEnv,
  options: { now: number; fullRefresh?: boolean },
): Promise<SavedState> {
  const cursors = new Map<string, CursorRow>();
  const open = new Map<string, Attempt>();
  const breaches = new Map<string, ContractBreach[]>();
  const wantCursors = options.fullRefresh !== true && spec.jobs.some((j) => j.incremental);
  const frozen = spec.jobs.filter(
    (j) =>
      j.kind !== 'targeted_update' &&
      (j.schema.newColumns === 'freeze' || j.schema.typeChanges === 'freeze'),
  );
  if (!wantCursors && spec.budgets.length === 0 && frozen.length === 0) {
    return { cursors, budgets: [], open, breaches };
  }
  const destination = await openPipelineDestination(spec, env, { readOnly: true }).catch(
    (error: unknown) => {
      if ((error as { code?: unknown }).code === 'SLUICE_NO_STATE') return undefined;
      throw error;
    },
  );
  try {
    const state = destination && (await destination.hasState()) ? destination.state : undefined;
    if (state && wantCursors) {
      for (const row of await state.cursors(spec.name)) cursors.set(row.job, row);
    }
    // The budgets count an unfinished download where it was bought: planned again as a new
    // purchase, it would count twice, and refuse a run that buys nothing.
    if (state && spec.budgets.length > 0) {
      for (const job of spec.jobs) {
        const attempt = await state.openAttempt(spec.name, job.name);
        if (attempt) open.set(job.name, attempt);
      }
    }
    for (const job of destination ? frozen : []) {
      const found = await contractBreaches(destination!, job, plannedTables(spec, job));
      if (found.length > 0) breaches.set(job.name, found);
    }
    return { cursors, budgets: await budgetStandings(spec, state, options.now), open, breaches };
  } finally {
    await destination?.close();
  }
}

/**
 * The pipeline's budgets as they stand at `now` (after a run: what each has left), read from
 * its destination without writing anything; none when it has no budget.
 */
export async function budgetsNow(
  spec: PipelineSpec,
  env: NodeJS.ProcessEnv,
  now: number,
): Promise<BudgetStanding[]> {
  if (spec.budgets.length === 0) return [];
  const destination = await openPipelineDestination(spec, env, { readOnly: true });
  try {
    const state = (await destination.hasState()) ? destination.state : undefined;
    return await budgetStandings(spec, state, now);
  } finally {
    await destination.close();
  }
}
