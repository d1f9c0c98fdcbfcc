import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { CREDIT_TYPE_OF, type CreditType, type FieldMap } from '../catalog.js';
import { createServiceClient } from '../client/index.js';
import type { DownloadInfo, ServiceClient } from '../client/types.js';
import { CreditGuardError, SluiceError } from '../errors.js';
import type { Column, Destination, LoadTransaction } from '../load/destination.js';
import { openDestination } from '../load/index.js';
import type { Logger } from '../log.js';
import { recordBatches } from '../records/index.js';
import { inferColumnType, widen } from '../records/infer.js';
import { type ParseJob, ParserPool } from '../records/parallel.js';
import type { RecordBatch, Row } from '../records/types.js';
import type { Progress } from './progress.js';
import type { JobSpec, PipelineSpec } from './spec.js';
import { type Attempt, nowIso, PipelineState } from './state.js';
import { JobTables, type RelatedTable } from './tables.js';

export type JobStatus = 'loaded' | 'failed' | 'refused' | 'timed_out' | 'interrupted';

export interface JobSummary {
  job: string;
  status: JobStatus;
  download_id: string | null;
  /** True when this run picked up a download an earlier run had started (and paid for). */
  reattached: boolean;
  found: number | null;
  downloaded: number;
  loaded: number;
  rejected: number;
  /** Credits the download costs, per credit type. */
  credits: Partial<Record<CreditType, number>>;
  files_loaded: number;
  seconds: number;
  tables: string[];
  message?: string;
  error?: { code: string; message: string };
}

export interface RunSummary {
  pipeline: string;
  run_id: string;
  status: 'succeeded' | 'failed' | 'refused' | 'interrupted';
  destination: string;
  started_at: string;
  seconds: number;
  views: { created: string[]; updated: string[]; unchanged: string[] };
  jobs: JobSummary[];
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Run only these jobs (all when empty). */
  jobs?: string[];
  /** Start new downloads even where an unfinished one could be re-attached. */
  fresh?: boolean;
  /** Wait for another run of the same pipeline to finish instead of exiting. */
  wait?: boolean;
  signal?: AbortSignal;
  logger: Logger;
  progress: Progress;
  /** Injected by tests and tools; by default built from the pipeline's source. */
  client?: ServiceClient;
  destination?: Destination;
}

/** Rows written per statement batch inside a file's transaction. */
const BATCH_ROWS = 500;

export const META_COLUMNS: Column[] = [
  { name: '_sluice_download_id', type: 'text' },
  { name: '_sluice_loaded_at', type: 'timestamp' },
];
const META_TYPES = new Map(META_COLUMNS.map((c) => [c.name, c.type]));

/** Where a pipeline's data goes: `SLUICE_DESTINATION` overrides the file. */
export function destinationOf(spec: PipelineSpec, env: NodeJS.ProcessEnv) {
  const override = env.SLUICE_DESTINATION;
  return override ? { url: override, schema: spec.destination.schema } : spec.destination;
}

export function clientFor(spec: PipelineSpec): ServiceClient {
  const { api, url, email, password, token } = spec.source;
  return createServiceClient({ api, url, email, password, token });
}

const LOCK_POLL_MS = 1000;

/**
 * Takes the pipeline's lock on the destination, so that two runs never both start a download.
 * Without `wait`, a held lock is an error (exit 1, retryable); with it, the run says it is
 * waiting and tries again every second until the other run ends or this one is interrupted.
 */
async function acquireLock(
  destination: Destination,
  pipeline: string,
  options: RunOptions,
): Promise<{ release(): Promise<void> }> {
  const name = `pipeline:${pipeline}`;
  let lock = await destination.lock(name, false);
  if (lock) return lock;
  const busy = `another run of pipeline '${pipeline}' is in progress on ${destination.description}`;
  if (options.wait !== true) {
    throw new SluiceError(`${busy}; wait for it, or run with --wait`, {
      code: 'SLUICE_LOCKED',
      retryable: true,
    });
  }
  options.logger?.info(`${busy}; waiting for it to end`);
  while (!lock) {
    await sleep(LOCK_POLL_MS, undefined, options.signal ? { signal: options.signal } : {});
    lock = await destination.lock(name, false);
  }
  options.logger?.info('the other run ended; going on');
  return lock;
}

/**
 * Runs a pipeline: keeps its views in step, then for each job checks the credits, starts (or
 * re-attaches to) its download, waits for it, and loads each result file exactly once.
 */
export async function runPipeline(spec: PipelineSpec, options: RunOptions): Promise<RunSummary> {
  const env = options.env ?? process.env;
  const started = Date.now();
  const startedAt = nowIso();
  const selected = selectJobs(spec, options.jobs);
  const client = options.client ?? clientFor(spec);
  const where = destinationOf(spec, env);
  const destination =
    options.destination ?? (await openDestination(where.url, { schema: where.schema }));
  const log = options.logger;
  try {
    await destination.ensureStateTables();
    const lock = await acquireLock(destination, spec.name, options);
    const state = new PipelineState(destination.db, spec.name);
    const runId = await state.startRun();
    const summary: RunSummary = {
      pipeline: spec.name,
      run_id: runId,
      status: 'succeeded',
      destination: destination.description,
      started_at: startedAt,
      seconds: 0,
      views: { created: [], updated: [], unchanged: [] },
      jobs: [],
    };
    try {
      summary.views = await syncViews(client, spec, log, options.signal);
      for (const job of selected) {
        const result = await runJob({ spec, job, client, destination, state, runId, options });
        summary.jobs.push(result);
        if (result.status === 'interrupted') break;
      }
    } catch (error) {
      if (!options.signal?.aborted) throw error;
    } finally {
      summary.seconds = round((Date.now() - started) / 1000);
      summary.status = overallStatus(summary.jobs, options.signal?.aborted === true);
      await state.finishRun(runId, summary.status, summary);
      await lock.release();
    }
    return summary;
  } finally {
    if (!options.destination) await destination.close();
    if (!options.client) await client.close();
  }
}

function overallStatus(jobs: JobSummary[], aborted: boolean): RunSummary['status'] {
  if (aborted || jobs.some((j) => j.status === 'interrupted')) return 'interrupted';
  if (jobs.some((j) => j.status === 'failed' || j.status === 'timed_out')) return 'failed';
  if (jobs.some((j) => j.status === 'refused')) return 'refused';
  return 'succeeded';
}

function selectJobs(spec: PipelineSpec, names: string[] | undefined): JobSpec[] {
  if (!names || names.length === 0) return spec.jobs;
  return names.map((name) => {
    const job = spec.jobs.find((j) => j.name === name);
    if (!job) {
      throw new SluiceError(
        `no job '${name}' in ${spec.file}; jobs: ${spec.jobs.map((j) => j.name).join(', ')}`,
        {
          code: 'SLUICE_USAGE',
        },
      );
    }
    return job;
  });
}

/** Creates or updates the declared views where the service's differ; leaves the rest alone. */
export async function syncViews(
  client: ServiceClient,
  spec: PipelineSpec,
  log: Logger,
  signal?: AbortSignal,
): Promise<RunSummary['views']> {
  const result: RunSummary['views'] = { created: [], updated: [], unchanged: [] };
  const declared = Object.entries(spec.views);
  if (declared.length === 0) return result;
  if (client.api === 'v3') {
    log.warn('the v3 API cannot manage views: the views in the pipeline file must already exist');
    return result;
  }
  const existing = new Map((await client.listViews({ signal })).map((v) => [v.name, v]));
  for (const [name, { fields }] of declared) {
    const current = existing.get(name);
    if (!current) {
      await client.createView({ name, fields }, { signal });
      result.created.push(name);
      log.info({ view: name }, `created view ${name}`);
    } else if (current.fields.join('\u0000') !== fields.join('\u0000')) {
      await client.updateView(name, { fields }, { signal });
      result.updated.push(name);
      log.info({ view: name }, `updated view ${name}`);
    } else {
      result.unchanged.push(name);
    }
  }
  return result;
}

export interface CreditEstimate {
  job: string;
  found: number;
  records: number;
  needed: Partial<Record<CreditType, number>>;
  remaining: Partial<Record<CreditType, number>> | undefined;
  /** Reasons the credit guard refuses the job; empty when it passes. */
  refusals: { message: string; needed: number; remaining: number; type: string }[];
}

/** What a job would cost and whether the credit guard lets it start. Spends nothing. */
export async function estimateJob(
  client: ServiceClient,
  job: JobSpec,
  signal?: AbortSignal,
): Promise<CreditEstimate> {
  const { numFound } = await client.count(searchRequestOf(job), { signal });
  const records = Math.min(job.records ?? numFound, numFound);
  const needed: Partial<Record<CreditType, number>> = job.auto_trace
    ? { property: records, people: records }
    : { [CREDIT_TYPE_OF[job.type]]: records };
  let remaining: CreditEstimate['remaining'];
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
  return { job: job.name, found: numFound, records, needed, remaining, refusals };
}

/**
 * What an owner lookup (`people_keys_from`) could cost, before its properties are loaded: at most
 * one person per property of the job it reads, one people credit each.
 */
export async function estimateOwnerLookup(
  client: ServiceClient,
  job: JobSpec,
  properties: number,
  signal?: AbortSignal,
): Promise<CreditEstimate> {
  const needed = { people: properties };
  const refusals: CreditEstimate['refusals'] = [];
  if (job.max_credits !== undefined && properties > job.max_credits) {
    refusals.push({
      message: `job '${job.name}' could spend ${properties} credits (one per owner), more than its max_credits of ${job.max_credits}`,
      needed: properties,
      remaining: job.max_credits,
      type: 'max_credits',
    });
  }
  let remaining: CreditEstimate['remaining'];
  if (client.api === 'v4') {
    const left = (await client.account({ signal })).credits.people.remaining;
    remaining = { people: left };
    if (properties > left) {
      refusals.push({
        message: `job '${job.name}' could need up to ${properties} people credits, ${left} remain`,
        needed: properties,
        remaining: left,
        type: 'people',
      });
    }
  }
  return { job: job.name, found: properties, records: properties, needed, remaining, refusals };
}

function searchRequestOf(job: JobSpec) {
  return {
    type: job.type,
    query: job.query,
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

interface JobContext {
  spec: PipelineSpec;
  job: JobSpec;
  client: ServiceClient;
  destination: Destination;
  state: PipelineState;
  runId: string;
  options: RunOptions;
  /** The tables the job writes and how a record is split among them. */
  tables: JobTables;
}

function newJobSummary(job: JobSpec): JobSummary {
  return {
    job: job.name,
    status: 'loaded',
    download_id: null,
    reattached: false,
    found: null,
    downloaded: 0,
    loaded: 0,
    rejected: 0,
    credits: {},
    files_loaded: 0,
    seconds: 0,
    tables: [job.table],
  };
}

async function runJob(base: Omit<JobContext, 'tables'>): Promise<JobSummary> {
  const { job, options } = base;
  const started = Date.now();
  const log = options.logger.child({ job: job.name });
  const summary = newJobSummary(job);
  try {
    if (job.people_keys_from) await enrichOwners(base, summary, log);
    else {
      const tables = new JobTables(job);
      summary.tables = tables.names();
      await loadJob({ ...base, tables }, summary, log);
    }
  } catch (error) {
    if (options.signal?.aborted) {
      summary.status = 'interrupted';
      summary.message = 'interrupted; run again to pick up where it stopped';
    } else if (error instanceof CreditGuardError) {
      summary.status = 'refused';
      summary.error = { code: error.code, message: error.message };
      log.error(error.message);
    } else if (error instanceof SluiceError) {
      summary.status = summary.status === 'timed_out' ? 'timed_out' : 'failed';
      summary.error = { code: error.code, message: error.message };
      log.error(error.message);
    } else {
      throw error;
    }
  } finally {
    options.progress.done();
    summary.seconds = round((Date.now() - started) / 1000);
  }
  return summary;
}

/** People keys per owner lookup query: about 40 characters each, so a query stays near 8 kB. */
export const PEOPLE_KEYS_PER_QUERY = 200;

/**
 * An owner enrichment job (`people_keys_from`): reads the owners' people keys of the properties
 * another job loaded, looks them up in chunks (one download per chunk, each re-attachable like
 * any job's), and merges the people found into the people and link tables that autotrace fills.
 */
async function enrichOwners(
  base: Omit<JobContext, 'tables'>,
  summary: JobSummary,
  log: Logger,
): Promise<void> {
  const { job, spec, destination } = base;
  const from = spec.jobs.find((j) => j.name === job.people_keys_from)!;
  const propertyKey = from.key[0]!;
  const owners = await ownerPeopleKeys(destination, from.table, propertyKey);
  const enrichment = { owners, propertiesTable: from.table, propertyKey };
  summary.tables = new JobTables(job, enrichment).names();
  if (owners.size === 0) {
    log.info(`no owner people keys in ${from.table}; nothing to look up`);
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
    const partSummary = newJobSummary(part);
    log.info(`looking up ${chunk.length} owners' people keys (part ${i + 1})`);
    try {
      await loadJob(
        { ...base, job: part, tables: new JobTables(part, enrichment) },
        partSummary,
        log,
      );
    } finally {
      if (partSummary.download_id) ids.push(partSummary.download_id);
      summary.download_id = ids.join(',') || null;
      summary.reattached ||= partSummary.reattached;
      summary.found = (summary.found ?? 0) + (partSummary.found ?? 0);
      summary.downloaded += partSummary.downloaded;
      summary.loaded += partSummary.loaded;
      summary.rejected += partSummary.rejected;
      summary.files_loaded += partSummary.files_loaded;
      for (const [type, n] of Object.entries(partSummary.credits) as [CreditType, number][]) {
        summary.credits[type] = (summary.credits[type] ?? 0) + n;
      }
      if (partSummary.status !== 'loaded') summary.status = partSummary.status;
      if (partSummary.message) summary.message = partSummary.message;
    }
  }
}

/** Owner people key -> keys of the properties it owns, from a loaded properties table. */
async function ownerPeopleKeys(
  destination: Destination,
  table: string,
  propertyKey: string,
): Promise<Map<string, (string | number)[]>> {
  const owners = new Map<string, (string | number)[]>();
  const columns = await destination.describeTable(table);
  if (!columns?.some((c) => c.name === OWNER_KEY_FIELD)) {
    throw new SluiceError(
      `table ${table} has no ${OWNER_KEY_FIELD} column to take owners' people keys from: include ${OWNER_KEY_FIELD} in its job's view`,
      { code: 'SLUICE_USAGE' },
    );
  }
  const rows = await (destination.db as unknown as Kysely<Record<string, Record<string, unknown>>>)
    .selectFrom(table)
    .select([`${propertyKey} as property`, `${OWNER_KEY_FIELD} as owner`])
    .where(OWNER_KEY_FIELD, 'is not', null)
    .execute();
  for (const row of rows) {
    const owner = row.owner;
    const property = row.property;
    if (typeof owner !== 'string' || (typeof property !== 'string' && typeof property !== 'number'))
      continue;
    const list = owners.get(owner);
    if (list) list.push(property);
    else owners.set(owner, [property]);
  }
  return owners;
}

const OWNER_KEY_FIELD = 'mostRecentOwnerPeopleKey';

async function loadJob(ctx: JobContext, summary: JobSummary, log: Logger): Promise<void> {
  const { job, client, state, options, destination } = ctx;
  const signal = options.signal;
  let attempt = await state.openAttempt(job.name);
  if (attempt && options.fresh) {
    await state.update(attempt, { status: 'abandoned', message: 'abandoned by --fresh' });
    log.warn(
      `--fresh: leaving download ${attempt.download_id ?? '(unknown id)'} of an earlier run`,
    );
    attempt = undefined;
  }
  if (attempt && attempt.spec_hash !== job.downloadHash) {
    await state.update(attempt, {
      status: 'superseded',
      message: 'the job changed in the pipeline file',
    });
    log.warn(
      `the job changed since download ${attempt.download_id ?? '(unknown id)'} was started; starting a new one`,
    );
    attempt = undefined;
  }
  if (attempt?.status === 'requested') {
    // An earlier run asked for a download and stopped before it heard the id.
    const found = await findUnrecordedDownload(client, state, attempt, job, signal);
    if (found) {
      await state.update(attempt, {
        download_id: found.id,
        status: 'started',
        started_at: nowIso(),
      });
      log.info(`found download ${found.id}, started by an interrupted run; re-attaching`);
    } else {
      await state.update(attempt, {
        status: 'abandoned',
        message: 'no download found for this request',
      });
      attempt = undefined;
    }
  }

  if (attempt) {
    summary.reattached = true;
    summary.found = attempt.num_found;
    log.info(`re-attaching to download ${attempt.download_id} started at ${attempt.started_at}`);
  } else {
    const estimate = await estimateJob(client, job, signal);
    summary.found = estimate.found;
    const refusal = estimate.refusals[0];
    if (refusal) throw new CreditGuardError(refusal.message, refusal);
    const loadTable = job.write === 'replace' ? stagingName(job.table) : job.table;
    if (job.write === 'replace') {
      await destination.dropTable(loadTable);
      for (const table of ctx.tables.relatedTables()) {
        if (table.staged) await destination.dropTable(stagingName(table.name));
      }
    }
    if (estimate.found === 0) {
      log.info('no records match the query; nothing to download');
      if (job.write === 'replace')
        await destination.transaction((tx) => clearTable(destination, tx, job.table));
      return;
    }
    attempt = await state.recordRequest({
      job: job.name,
      specHash: job.downloadHash,
      api: client.api,
      targetTable: job.table,
      loadTable,
      runId: ctx.runId,
    });
    const start = await client.startDownload(
      {
        ...searchRequestOf(job),
        ...(job.records === undefined ? {} : { numRecords: job.records }),
      },
      { signal },
    );
    await state.update(attempt, {
      download_id: start.id,
      status: 'started',
      started_at: nowIso(),
      num_found: start.numFound ?? estimate.found,
    });
    log.info(
      { download_id: start.id },
      `started download ${start.id} for ${estimate.records} records`,
    );
  }
  const downloadId = attempt.download_id!;
  summary.download_id = downloadId;

  const info = await waitForDownload(ctx, attempt, summary, log);
  summary.downloaded = info.numRecords;
  const perType = job.auto_trace
    ? { property: info.numRecords, people: info.numRecords }
    : { [CREDIT_TYPE_OF[job.type]]: info.numRecords };
  summary.credits = perType;

  await loadFiles(ctx, attempt, info, summary, log);
  if (summary.status === 'timed_out') {
    throw new SluiceError(summary.message ?? 'timed out', {
      code: 'SLUICE_TIMEOUT',
      retryable: true,
    });
  }
}

/** The download an interrupted run may have started: new since its request, known to no attempt. */
async function findUnrecordedDownload(
  client: ServiceClient,
  state: PipelineState,
  attempt: Attempt,
  job: JobSpec,
  signal?: AbortSignal,
): Promise<DownloadInfo | undefined> {
  const known = await state.knownDownloadIds();
  // Tolerate clocks that disagree by a few minutes between this machine and the service.
  const since = Date.parse(attempt.requested_at) - 5 * 60_000;
  const candidates = (await client.listDownloads({ signal }))
    .filter((d) => !known.has(d.id))
    .filter((d) => d.createdAt === undefined || Date.parse(d.createdAt) >= since)
    .filter(
      (d) =>
        (d.type === undefined || d.type === job.type) &&
        (d.query === undefined || d.query === job.query),
    )
    .sort((a, b) => Date.parse(a.createdAt ?? '') - Date.parse(b.createdAt ?? ''));
  return candidates[0];
}

async function waitForDownload(
  ctx: JobContext,
  attempt: Attempt,
  summary: JobSummary,
  log: Logger,
): Promise<DownloadInfo> {
  const { job, client, state, options } = ctx;
  const signal = options.signal;
  const id = attempt.download_id!;
  const deadline = Date.now() + job.poll.timeout;
  let interval = job.poll.interval;
  const target =
    job.records === undefined
      ? (attempt.num_found ?? undefined)
      : Math.min(job.records, attempt.num_found ?? job.records);
  options.progress.phase(job.name, 'download', target);
  let lastState = '';
  for (;;) {
    const info = await client.getDownload(id, { signal });
    options.progress.update(info.numRecords, target);
    if (info.numRecords !== attempt.num_records)
      await state.update(attempt, { num_records: info.numRecords });
    if (info.state !== lastState) {
      log.info(
        { download_id: id, state: info.state, records: info.numRecords },
        `download ${id} is ${info.state}`,
      );
      lastState = info.state;
    }
    if (info.state === 'completed' || info.state === 'cancelled') return info;
    if (info.state === 'failed') {
      await state.update(attempt, {
        status: 'failed',
        message: info.error ?? 'the service reported a failure',
      });
      throw new SluiceError(
        `download ${id} failed: ${info.error ?? 'the service gave no reason'}`,
        { code: 'SLUICE_DOWNLOAD_FAILED' },
      );
    }
    if (Date.now() >= deadline) {
      summary.status = 'timed_out';
      if (job.poll.on_timeout === 'cancel') {
        await client.cancelDownload(id, { signal });
        summary.message = `download ${id} did not finish within the poll timeout; cancelled it and loaded the records delivered so far`;
        log.warn(summary.message);
        // Records delivered before the cancellation are paid for: load them.
        return waitForCancelled(client, id, signal);
      }
      summary.message = `download ${id} did not finish within the poll timeout; left it running, a later run will re-attach to it`;
      throw new SluiceError(summary.message, { code: 'SLUICE_TIMEOUT', retryable: true });
    }
    await sleep(Math.min(interval, Math.max(0, deadline - Date.now())), undefined, { signal });
    interval = Math.min(interval * 1.5, job.poll.max_interval);
  }
}

async function waitForCancelled(
  client: ServiceClient,
  id: string,
  signal?: AbortSignal,
): Promise<DownloadInfo> {
  for (let i = 0; ; i++) {
    const info = await client.getDownload(id, { signal });
    if (info.state !== 'running' && info.state !== 'queued') return info;
    if (i > 20)
      throw new SluiceError(`download ${id} did not stop after it was cancelled`, {
        code: 'SLUICE_TIMEOUT',
      });
    await sleep(500, undefined, { signal });
  }
}

/** Table names as written: staged tables go to their `__sluice_new` twin in `replace` mode. */
function physicalName(ctx: JobContext, attempt: Attempt, table: RelatedTable | string): string {
  if (typeof table === 'string') return table === ctx.tables.main ? attempt.load_table : table;
  return ctx.job.write === 'replace' && table.staged ? stagingName(table.name) : table.name;
}

async function loadFiles(
  ctx: JobContext,
  attempt: Attempt,
  info: DownloadInfo,
  summary: JobSummary,
  log: Logger,
) {
  const { job, client, state, destination, options, tables } = ctx;
  const downloadId = attempt.download_id!;
  const loaded = await state.loadedFiles(downloadId);
  await state.update(attempt, { status: 'loading', num_records: info.numRecords });
  for (const row of loaded.values()) {
    summary.loaded += row.rows_loaded;
    summary.rejected += row.rows_rejected;
  }
  summary.files_loaded = loaded.size;
  const mode = job.write === 'merge' ? 'merge' : 'append';
  const known = new KnownColumns(destination);
  options.progress.phase(job.name, 'load', info.numRecords);
  options.progress.update(summary.loaded + summary.rejected);
  const pending = info.files.filter((file) => !loaded.has(file.index));
  const workers = parseWorkers(options.env ?? process.env, info.numRecords);
  const pool = workers > 0 ? new ParserPool(workers) : undefined;
  const open = async (file: DownloadInfo['files'][number]): Promise<ParseJob> => {
    const stream = await client.openResultFile(downloadId, file, { signal: options.signal });
    if (pool) {
      return pool.parse(stream, {
        format: job.format,
        job,
        enrichment: tables.enrichment,
        batchSize: BATCH_ROWS,
        maxBuffered: 3,
      });
    }
    const batches = recordBatches(stream, job.format, job.type, {
      batchSize: BATCH_ROWS,
      shape: tables.shape,
    });
    return { batches, cancel: () => stream.destroy() };
  };
  let next: Promise<ParseJob> | undefined;
  try {
    for (let i = 0; i < pending.length; i++) {
      const file = pending[i]!;
      const current = next ?? open(file);
      current.catch(() => {}); // handled when awaited inside the transaction
      next = undefined;
      const counts = await destination
        .transaction(async (tx) => {
          const parsing = await current;
          if (pool && pool.size > 1 && i + 1 < pending.length) {
            // The next file downloads and parses while this one is written.
            next = open(pending[i + 1]!);
            next.catch(() => {});
          }
          try {
            return await loadFile(ctx, tx, known, attempt, file, parsing.batches, mode, summary);
          } finally {
            parsing.cancel();
          }
        })
        .catch((error: unknown) => {
          // A rolled-back transaction may have added columns we no longer have.
          known.forget();
          throw error;
        });
      summary.loaded += counts.rows;
      summary.rejected += counts.rejects;
      summary.files_loaded += 1;
      log.info(
        { file: file.name, rows: counts.rows, rejected: counts.rejects },
        `loaded ${file.name}: ${counts.rows} rows${counts.rejects ? `, ${counts.rejects} rejected` : ''}`,
      );
      if (job.max_rejects !== undefined && summary.rejected > job.max_rejects) {
        await state.update(attempt, {
          status: 'failed',
          message: `${summary.rejected} rejected rows, over max_rejects`,
        });
        throw new SluiceError(
          `job '${job.name}': ${summary.rejected} rows rejected, more than max_rejects (${job.max_rejects}); see the _sluice_rejects table`,
          { code: 'SLUICE_TOO_MANY_REJECTS' },
        );
      }
    }
  } finally {
    // A file started ahead of a failed one is dropped, its worker stopped.
    next?.then(
      (job) => job.cancel(),
      () => {},
    );
    await pool?.close();
  }
  if (summary.rejected > 0)
    log.warn(
      `${summary.rejected} rows rejected; they are kept in _sluice_rejects with their reasons`,
    );
  const finalStatus = info.state === 'cancelled' ? 'cancelled' : 'loaded';
  await destination.transaction(async (tx) => {
    if (job.write === 'replace') {
      // A download with no files leaves no staging table: the new table is an empty one.
      const swaps = [
        job.table,
        ...tables
          .relatedTables()
          .filter((t) => t.staged)
          .map((t) => t.name),
      ];
      for (const table of swaps) {
        if (await destination.tableExists(stagingName(table)))
          await destination.swapTable(stagingName(table), table, tx);
        else await clearTable(destination, tx, table);
      }
    }
    await state.update(attempt, { status: finalStatus, finished_at: nowIso() }, tx.db);
  });
  summary.tables = tables.names();
}

/** Loads one result file's batches inside the caller's transaction, with its `_sluice_files` row. */
async function loadFile(
  ctx: JobContext,
  tx: LoadTransaction,
  known: KnownColumns,
  attempt: Attempt,
  file: DownloadInfo['files'][number],
  batches: AsyncIterable<RecordBatch>,
  mode: 'append' | 'merge',
  summary: JobSummary,
): Promise<{ rows: number; rejects: number }> {
  const { job, options, tables } = ctx;
  const downloadId = attempt.download_id!;
  const loadedAt = nowIso();
  let rows = 0;
  let rejects = 0;
  let bytes = 0;
  for await (const batch of batches) {
    bytes = batch.bytesRead;
    const good: Row[] = [];
    const related = new Map<string, Map<string, Row>>();
    const bad = [...batch.rejects];
    for (const parsed of batch.rows) {
      const { line, row } = parsed;
      const missing =
        mode === 'merge' ? job.key.find((k) => row[k] === undefined || row[k] === null) : undefined;
      if (missing) {
        bad.push({
          line,
          raw: JSON.stringify(row).slice(0, 10_000),
          reason: `missing merge key '${missing}'`,
        });
        continue;
      }
      row._sluice_download_id = downloadId;
      row._sluice_loaded_at = loadedAt;
      good.push(row);
      if (parsed.related) collectRelated(related, parsed.related, tables, downloadId, loadedAt);
    }
    if (good.length > 0) {
      await writeTable(
        tx,
        known,
        attempt.load_table,
        good,
        job.key,
        mode,
        tables.hintsOf(job.table),
      );
      rows += good.length;
    }
    await writeRelated(ctx, tx, known, attempt, good, related, mode);
    if (bad.length > 0) {
      await insertRejects(tx, downloadId, job.name, file.name, bad);
      rejects += bad.length;
    }
    options.progress.update(summary.loaded + summary.rejected + rows + rejects);
  }
  await tx.db
    .insertInto('_sluice_files')
    .values({
      download_id: downloadId,
      file_index: file.index,
      file_name: file.name,
      table_name: attempt.load_table,
      rows_loaded: rows,
      rows_rejected: rejects,
      bytes,
      loaded_at: nowIso(),
      run_id: ctx.runId,
    })
    .execute();
  return { rows, rejects };
}

/**
 * Parse workers for a download: `SLUICE_PARSE_WORKERS` (0 parses in the main thread), else one
 * for large downloads. One worker keeps a run under 200 MB; two also parse the next file while
 * the current one is written: slightly faster here (8.3-8.5 s against 8.7-9.5 s for 50,000
 * records) for about 35 MB more.
 */
export function parseWorkers(env: NodeJS.ProcessEnv, records: number): number {
  const set = env.SLUICE_PARSE_WORKERS;
  if (set !== undefined && set !== '') {
    const n = Number(set);
    return Number.isInteger(n) && n >= 0 ? Math.min(n, 4) : 0;
  }
  return records >= PARSE_WORKERS_FROM ? 1 : 0;
}

/** Downloads smaller than this are parsed in the main thread: a worker's start costs more. */
const PARSE_WORKERS_FROM = 5000;

/** Adds a record's related rows to the batch, the last one winning for the same identity. */
function collectRelated(
  into: Map<string, Map<string, Row>>,
  from: Map<string, Row[]>,
  tables: JobTables,
  downloadId: string,
  loadedAt: string,
): void {
  for (const [name, rows] of from) {
    const table = tables.related(name);
    let byIdentity = into.get(name);
    if (byIdentity === undefined) {
      byIdentity = new Map();
      into.set(name, byIdentity);
    }
    for (const row of rows) {
      row._sluice_download_id = downloadId;
      row._sluice_loaded_at = loadedAt;
      byIdentity.set(identityOf(table, row), row);
    }
  }
}

/** What makes a related row the same row: its key, or its parent and position, or all of it. */
function identityOf(table: RelatedTable, row: Row): string {
  const { key } = table;
  if (key.length === 1) return String(row[key[0]!]);
  if (key.length > 1) return key.map((k) => String(row[k])).join('\u0000');
  const parent = table.replaceBy?.column;
  if (parent !== undefined && '_position' in row) {
    return `${String(row[parent])}\u0000${String(row._parent_position ?? '')}\u0000${String(row._position)}`;
  }
  let identity = '';
  for (const name in row)
    if (!name.startsWith('_sluice_')) identity += `${String(row[name])}\u0000`;
  return identity;
}

/**
 * Writes a batch's related rows. Rows that belong to a parent loaded in this batch are deleted
 * first (child rows of a re-loaded property, a person's phones, a property's owner links), so
 * that no stale row survives a merge.
 */
async function writeRelated(
  ctx: JobContext,
  tx: LoadTransaction,
  known: KnownColumns,
  attempt: Attempt,
  parents: Row[],
  related: Map<string, Map<string, Row>>,
  mode: 'append' | 'merge',
): Promise<void> {
  const { tables } = ctx;
  // Parents first: the people table before its phones, so keys are read from written rows.
  const ordered = tables
    .relatedTables()
    .sort((a, b) => Number(!!a.replaceBy) - Number(!!b.replaceBy));
  for (const table of ordered) {
    const rows = [...(related.get(table.name)?.values() ?? [])];
    const name = physicalName(ctx, attempt, table);
    if (table.replaceBy && (mode === 'merge' || !table.onlyWhenMerging)) {
      const { column, parentTable, parentKey } = table.replaceBy;
      const parentRows =
        parentTable === tables.main ? parents : [...(related.get(parentTable)?.values() ?? [])];
      const keys = new Set<string | number>();
      for (const row of parentRows) {
        const value = row[parentKey];
        if (typeof value === 'string' || typeof value === 'number') keys.add(value);
      }
      if (keys.size > 0 && (await known.exists(name)))
        await tx.deleteWhereIn(name, column, [...keys]);
    }
    if (rows.length > 0) {
      await writeTable(
        tx,
        known,
        name,
        rows,
        table.key,
        table.key.length > 0 ? 'merge' : 'append',
        table.hints,
      );
    }
  }
}

async function writeTable(
  tx: LoadTransaction,
  known: KnownColumns,
  name: string,
  rows: Row[],
  key: string[],
  mode: 'append' | 'merge',
  hints: FieldMap,
): Promise<void> {
  const columns = columnsOf(rows, await known.of(name), hints);
  await tx.writeRows({ name, columns, key }, rows, mode);
}

/** Columns of the tables a load writes, read once and kept up to date as batches widen them. */
class KnownColumns {
  readonly #tables = new Map<string, Map<string, Column['type']>>();
  constructor(readonly destination: Destination) {}

  async of(name: string): Promise<Map<string, Column['type']>> {
    let columns = this.#tables.get(name);
    if (columns === undefined) {
      columns = new Map((await this.destination.describeTable(name))?.map((c) => [c.name, c.type]));
      this.#tables.set(name, columns);
    }
    return columns;
  }

  async exists(name: string): Promise<boolean> {
    return (await this.of(name)).size > 0;
  }

  forget(): void {
    this.#tables.clear();
  }
}

async function insertRejects(
  tx: LoadTransaction,
  downloadId: string,
  job: string,
  fileName: string,
  rejects: { line: number; raw: string; reason: string }[],
): Promise<void> {
  const createdAt = nowIso();
  for (let i = 0; i < rejects.length; i += 500) {
    await tx.db
      .insertInto('_sluice_rejects')
      .values(
        rejects.slice(i, i + 500).map((r) => ({
          download_id: downloadId,
          job,
          file_name: fileName,
          line: r.line,
          raw: r.raw,
          reason: r.reason,
          created_at: createdAt,
        })),
      )
      .execute();
  }
}

/** The columns a batch needs, widened against what the table already has (`known` is updated). */
function columnsOf(rows: Row[], known: Map<string, Column['type']>, hints: FieldMap): Column[] {
  const seen = new Map<string, Column['type']>();
  for (const row of rows) {
    for (const name in row) {
      const value = row[name];
      if (value === null || value === undefined) continue;
      const before = seen.get(name);
      if (before === 'text') continue; // nothing is wider
      const type = META_TYPES.get(name) ?? inferColumnType(value, hints[name]);
      if (before !== type) seen.set(name, before === undefined ? type : widen(before, type));
    }
  }
  for (const [name, type] of seen) {
    const existing = known.get(name);
    known.set(name, existing === undefined ? type : widen(existing, type));
  }
  // Every column of the table: rows are written whole (a field now absent becomes NULL), and
  // one statement serves every batch of a table.
  return [...known].map(([name, type]) => ({ name, type }));
}

async function clearTable(
  destination: Destination,
  tx: LoadTransaction,
  table: string,
): Promise<void> {
  if (await destination.tableExists(table)) await tx.db.deleteFrom(table as never).execute();
}

export function stagingName(table: string): string {
  return `${table}__sluice_new`;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
