import { createHash } from 'node:crypto';
import { UsageError } from '../../errors.js';
import { JobTables, type ShapePlan } from '../../records/tables.js';
import { ColumnNames } from '../../schema/naming.js';
import { isoAt } from '../clock.js';
import { type RunContext, shapePlanOf } from '../context.js';
import type { JobRun } from '../job-run.js';
import { prepareTables } from '../load/load.js';
import { addCredits, type IncrementalRange, newOutcome } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import { runDownloadJob } from './download.js';
import { skippable } from './resume.js';

/** People keys per owner lookup query: about 40 characters each, so a query stays near 8 kB. */
export const PEOPLE_KEYS_PER_QUERY = 200;

const OWNER_KEY_FIELD = 'mostRecentOwnerPeopleKey';

/**
 * An owner lookup (`people_keys_from`): reads the owners' people keys of the properties another
 * job loaded, looks them up in chunks (one download per chunk, each re-attachable like any
 * job's), and merges the people found into the people and link tables that autotrace fills.
 */
export async function runOwnerLookup(run: JobRun): Promise<void> {
  const { ctx, job, outcome, log } = run;
  const from = ctx.spec.jobs.find((j) => j.name === job.people_keys_from)!;
  const propertyKey = from.key[0]!;
  const named = ctx.destination.naming.table(from.table);
  outcome.stage = 'extract';
  // Following an incremental job, owners are looked up for the properties loaded since the
  // last lookup that finished: its cursor is the time it began (rows carry when they loaded).
  const since = from.incremental ? await lookupRange(ctx, job) : undefined;
  if (since) {
    outcome.incremental = since.range;
    log.info(
      since.range.from === null
        ? `looking up the owners of every property in ${named}`
        : `looking up the owners of the properties loaded into ${named} since ${since.range.from}`,
    );
  }
  const owners = await ownerPeopleKeys(ctx, from.table, propertyKey, since?.range.from);
  const plan = (chunk: [string, (string | number)[]][]): ShapePlan => ({
    ...shapePlanOf(job, ctx.spec),
    ownerLookup: { propertiesTable: from.table, propertyKey, owners: chunk },
  });
  if (owners.size === 0) {
    log.info(`no owner people keys in ${named}; nothing to look up`);
    outcome.stage = 'load';
    await prepareTables({ ctx, job, tables: new JobTables(plan([])), outcome, log });
    outcome.status = 'empty';
    if (since) await saveLookupCursor(ctx, job, since);
    return;
  }
  const keys = [...owners.keys()].sort();
  const ids: string[] = [];
  for (let i = 0; i * PEOPLE_KEYS_PER_QUERY < keys.length; i++) {
    const chunk = keys.slice(i * PEOPLE_KEYS_PER_QUERY, (i + 1) * PEOPLE_KEYS_PER_QUERY);
    const query = chunk
      .map((k) => `keys:"${k.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`)
      .join(' OR ');
    const part: JobSpec = {
      ...job,
      name: `${job.name}#${i + 1}`,
      query,
      records: undefined,
      downloadHash: createHash('sha256')
        .update(`${job.downloadHash}\u0000${query}`)
        .digest('hex')
        .slice(0, 16),
    };
    const partOutcome = newOutcome(part.name);
    if (skippable(ctx.resume, part)) {
      log.info(`part ${i + 1} of the owner lookup was loaded by the run this one resumes`);
      continue;
    }
    log.info(`looking up ${chunk.length} owners' people keys (part ${i + 1})`);
    try {
      const tables = new JobTables(plan(chunk.map((k) => [k, owners.get(k) ?? []])));
      await runDownloadJob({ ctx, job: part, tables, outcome: partOutcome, log });
    } finally {
      if (partOutcome.download_id) ids.push(partOutcome.download_id);
      outcome.stage = partOutcome.stage;
      outcome.download_id = ids.join(',') || null;
      outcome.reattached ||= partOutcome.reattached;
      outcome.found = (outcome.found ?? 0) + (partOutcome.found ?? 0);
      outcome.downloaded += partOutcome.downloaded;
      outcome.loaded += partOutcome.loaded;
      outcome.rejected += partOutcome.rejected;
      outcome.files_loaded += partOutcome.files_loaded;
      addCredits(outcome.credits, partOutcome.credits);
      addCredits(outcome.download_credits, partOutcome.download_credits);
      outcome.tables = partOutcome.tables;
      if (partOutcome.status !== 'loaded' && partOutcome.status !== 'empty') {
        outcome.status = partOutcome.status;
      }
      if (partOutcome.message) outcome.message = partOutcome.message;
    }
  }
  // A part cut short (timed out) leaves owners unlooked-up: the cursor stays for the next run.
  if (since && outcome.status === 'loaded') await saveLookupCursor(ctx, job, since);
  else if (since) {
    since.range.next = since.range.last;
    since.range.kept = 'a part of the lookup did not load in full';
  }
}

/** The `_sluice_loaded_at` cursor of an owner lookup that follows an incremental job. */
const LOADED_AT = '_sluice_loaded_at';

interface LookupRange {
  range: IncrementalRange;
  /** When this lookup began: its cursor once every part is loaded. */
  begun: string;
}

async function lookupRange(ctx: RunContext, job: JobSpec): Promise<LookupRange> {
  const begun = isoAt(ctx.clock);
  const saved = ctx.fullRefresh
    ? undefined
    : await ctx.destination.state.cursor(ctx.spec.name, job.name);
  const last = saved?.value ?? null;
  return {
    begun,
    range: { cursor: LOADED_AT, from: last, last, full_refresh: ctx.fullRefresh },
  };
}

/** Every part is loaded: the next lookup starts from the properties loaded after this began. */
async function saveLookupCursor(ctx: RunContext, job: JobSpec, since: LookupRange) {
  since.range.next = since.begun;
  await ctx.destination.finishJob({
    cursor: {
      pipeline: ctx.spec.name,
      job: job.name,
      field: LOADED_AT,
      value: since.begun,
      updated_at: since.begun,
      run_id: ctx.runId,
      download_id: null,
    },
  });
}

/** Owner people key -> keys of the properties it owns, from a loaded properties table. */
async function ownerPeopleKeys(
  ctx: RunContext,
  table: string,
  propertyKey: string,
  loadedSince: string | null | undefined,
): Promise<Map<string, (string | number)[]>> {
  const owners = new Map<string, (string | number)[]>();
  const columns = await ctx.destination.describeTable(table);
  // The column as the table names it (naming: snake_case spells it most_recent_owner_...).
  const names = new ColumnNames(ctx.destination.naming, columns?.map((c) => c.name) ?? []);
  const ownerColumn = names.physical(OWNER_KEY_FIELD);
  if (!columns?.some((c) => c.name === ownerColumn)) {
    throw new UsageError(
      `table ${table} has no ${OWNER_KEY_FIELD} column to take owners' people keys from: include ${OWNER_KEY_FIELD} in its job's view`,
    );
  }
  const pairs = await ctx.destination.readPairs(
    table,
    [propertyKey, OWNER_KEY_FIELD],
    loadedSince ? { loadedSince } : undefined,
  );
  for (const [property, owner] of pairs) {
    if (typeof owner !== 'string' || (typeof property !== 'string' && typeof property !== 'number'))
      continue;
    const list = owners.get(owner);
    if (list) list.push(property);
    else owners.set(owner, [property]);
  }
  return owners;
}
