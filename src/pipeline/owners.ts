import { createHash } from 'node:crypto';
import { UsageError } from '../errors.js';
import type { Logger } from '../log.js';
import { JobTables, type ShapePlan } from '../records/tables.js';
import { type RunContext, shapePlanOf } from './context.js';
import { runDownloadJob } from './download.js';
import { prepareTables } from './load.js';
import { addCredits, type JobOutcome, newOutcome } from './outcome.js';
import { skippable } from './resume.js';
import type { JobSpec } from './spec.js';

/** People keys per owner lookup query: about 40 characters each, so a query stays near 8 kB. */
export const PEOPLE_KEYS_PER_QUERY = 200;

const OWNER_KEY_FIELD = 'mostRecentOwnerPeopleKey';

/**
 * An owner lookup (`people_keys_from`): reads the owners' people keys of the properties another
 * job loaded, looks them up in chunks (one download per chunk, each re-attachable like any
 * job's), and merges the people found into the people and link tables that autotrace fills.
 */
export async function runOwnerLookup(
  ctx: RunContext,
  job: JobSpec,
  outcome: JobOutcome,
  log: Logger,
): Promise<void> {
  const from = ctx.spec.jobs.find((j) => j.name === job.people_keys_from)!;
  const propertyKey = from.key[0]!;
  outcome.stage = 'extract';
  const owners = await ownerPeopleKeys(ctx, from.table, propertyKey);
  const plan = (chunk: [string, (string | number)[]][]): ShapePlan => ({
    ...shapePlanOf(job, ctx.spec),
    enrichment: { propertiesTable: from.table, propertyKey, owners: chunk },
  });
  if (owners.size === 0) {
    log.info(`no owner people keys in ${from.table}; nothing to look up`);
    outcome.stage = 'load';
    await prepareTables({ ctx, job, tables: new JobTables(plan([])), outcome, log });
    outcome.status = 'empty';
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
      await runDownloadJob(ctx, part, tables, partOutcome, log);
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
}

/** Owner people key -> keys of the properties it owns, from a loaded properties table. */
async function ownerPeopleKeys(
  ctx: RunContext,
  table: string,
  propertyKey: string,
): Promise<Map<string, (string | number)[]>> {
  const owners = new Map<string, (string | number)[]>();
  const columns = await ctx.destination.describeTable(table);
  if (!columns?.some((c) => c.name === OWNER_KEY_FIELD)) {
    throw new UsageError(
      `table ${table} has no ${OWNER_KEY_FIELD} column to take owners' people keys from: include ${OWNER_KEY_FIELD} in its job's view`,
    );
  }
  for (const [property, owner] of await ctx.destination.readPairs(table, [
    propertyKey,
    OWNER_KEY_FIELD,
  ])) {
    if (typeof owner !== 'string' || (typeof property !== 'string' && typeof property !== 'number'))
      continue;
    const list = owners.get(owner);
    if (list) list.push(property);
    else owners.set(owner, [property]);
  }
  return owners;
}
