import type { Kysely } from 'kysely';

/**
 * The `_sluice_*` state tables, defined once for every destination. They live in the destination
 * itself, next to the data they describe, and carry a schema version (`_sluice_meta`) so that a
 * newer sluice migrates older tables in place and an older one refuses newer tables.
 *
 * Version 1 (sluice 0.1) had runs, downloads, files and rejects, created by two drifting copies
 * of the DDL (the first two destinations differed in keys, indexes and integer types). Version 2 adds
 * `_sluice_meta`, per-job outcomes (`_sluice_jobs`), cursors (`_sluice_cursors`) and columns for
 * stages, errors, credits and what a download was asked for. Version 3 adds `_sluice_leases`:
 * which run holds each pipeline, checked inside every transaction (see `Loader.lock`), and runs'
 * keys (`run --run-key`). Version 4 adds `_sluice_tables`: the pipeline, job and role that own each
 * table (see `Destination.claimTables`); a download's load settings, as they are compared; what
 * each run was asked to do: its selected jobs, and the command (batch) of several pipeline files
 * it belonged to (see `pipeline/run/batch.ts`); and the service's other paid requests beside
 * downloads: an attempt's `kind` (a targeted update, a scrape), a scrape's records as the service
 * answered them (`payload`, kept until they are loaded), and the account's credits used when it
 * was asked for (`used_before`). Version 5 adds `_sluice_alerts`: each alert a run sent (or
 * failed to send), to which kind of target and host (never its path, which may hold a token);
 * `_sluice_phases`: when each job of a run entered and left each phase (waiting, download, queued,
 * load), for the dashboard's timeline; and an index of rejects by time, which the dashboard pages
 * through newest first.
 */
export const STATE_VERSION = 5;

type ColumnKind = 'text' | 'bigint';

interface StateColumn {
  name: string;
  kind: ColumnKind;
  notNull?: boolean;
}

interface StateTable {
  name: string;
  columns: StateColumn[];
  primaryKey: string[];
  indexes: { name: string; columns: string[] }[];
}

const text = (name: string, notNull = false): StateColumn => ({ name, kind: 'text', notNull });
const big = (name: string, notNull = false): StateColumn => ({ name, kind: 'bigint', notNull });

export const STATE_TABLES: readonly StateTable[] = [
  {
    name: '_sluice_meta',
    columns: [text('key', true), text('value', true)],
    primaryKey: ['key'],
    indexes: [],
  },
  {
    name: '_sluice_runs',
    columns: [
      text('run_id', true),
      text('pipeline', true),
      text('started_at', true),
      text('finished_at'),
      text('status', true),
      text('summary'),
      // v2
      text('stage'),
      text('error_code'),
      text('error_message'),
      text('resumes'),
      text('credits'),
      // v3
      text('run_key'),
      // v4
      text('selected_jobs'),
      text('batch_id'),
      text('batch_members'),
    ],
    primaryKey: ['run_id'],
    indexes: [{ name: '_sluice_runs_by_pipeline', columns: ['pipeline', 'started_at'] }],
  },
  {
    name: '_sluice_jobs',
    columns: [
      text('run_id', true),
      text('pipeline', true),
      text('job', true),
      text('status', true),
      text('stage'),
      text('started_at', true),
      text('finished_at'),
      text('download_ids'),
      text('error_code'),
      text('error_message'),
      text('summary'),
      text('spec_hash'),
      text('load_hash'),
    ],
    primaryKey: ['run_id', 'job'],
    indexes: [{ name: '_sluice_jobs_by_pipeline', columns: ['pipeline', 'job', 'started_at'] }],
  },
  {
    name: '_sluice_downloads',
    columns: [
      text('attempt_id', true),
      text('pipeline', true),
      text('job', true),
      text('spec_hash', true),
      text('api', true),
      text('download_id'),
      text('status', true),
      text('target_table', true),
      text('load_table', true),
      big('num_found'),
      big('num_records'),
      text('requested_at', true),
      text('started_at'),
      text('updated_at', true),
      text('finished_at'),
      text('run_id', true),
      text('message'),
      // v2
      text('load_hash'),
      text('write_mode'),
      text('data_type'),
      text('query'),
      text('format'),
      big('num_requested'),
      text('cursor_from'),
      text('credits'),
      text('stage'),
      // v4
      text('load_settings'),
      text('kind'),
      text('payload'),
      big('used_before'),
    ],
    primaryKey: ['attempt_id'],
    indexes: [{ name: '_sluice_downloads_by_job', columns: ['pipeline', 'job', 'requested_at'] }],
  },
  {
    name: '_sluice_files',
    columns: [
      text('download_id', true),
      big('file_index', true),
      text('file_name', true),
      text('table_name', true),
      big('rows_loaded', true),
      big('rows_rejected', true),
      big('bytes', true),
      text('loaded_at', true),
      text('run_id', true),
    ],
    primaryKey: ['download_id', 'file_index'],
    indexes: [],
  },
  {
    name: '_sluice_rejects',
    columns: [
      text('download_id', true),
      text('job', true),
      text('file_name', true),
      big('line', true),
      text('raw', true),
      text('reason', true),
      text('created_at', true),
    ],
    primaryKey: [],
    indexes: [
      { name: '_sluice_rejects_by_download', columns: ['download_id', 'file_name'] },
      // v5
      { name: '_sluice_rejects_by_time', columns: ['created_at'] },
    ],
  },
  {
    name: '_sluice_cursors',
    columns: [
      text('pipeline', true),
      text('job', true),
      text('field', true),
      text('value', true),
      text('updated_at', true),
      text('run_id', true),
      text('download_id'),
    ],
    primaryKey: ['pipeline', 'job'],
    indexes: [],
  },
  {
    name: '_sluice_leases',
    columns: [text('name', true), text('holder', true), text('taken_at', true), text('by')],
    primaryKey: ['name'],
    indexes: [],
  },
  {
    name: '_sluice_tables',
    columns: [
      text('table_name', true),
      text('role', true),
      text('pipeline', true),
      text('job', true),
      text('claimed_at', true),
      text('run_id', true),
    ],
    primaryKey: ['table_name', 'pipeline', 'job'],
    indexes: [],
  },
  {
    name: '_sluice_alerts',
    columns: [
      text('run_id'),
      text('pipeline', true),
      text('event', true),
      text('target_kind', true),
      text('target', true),
      text('sent_at', true),
      text('ok', true),
      big('attempts', true),
      text('error'),
    ],
    primaryKey: [],
    indexes: [{ name: '_sluice_alerts_by_pipeline', columns: ['pipeline', 'sent_at'] }],
  },
  {
    name: '_sluice_phases',
    columns: [
      text('run_id', true),
      text('pipeline', true),
      text('job', true),
      text('phase', true),
      text('started_at', true),
      text('ended_at'),
    ],
    primaryKey: ['run_id', 'job', 'phase', 'started_at'],
    indexes: [],
  },
];

/** Indexes of version 1 whose names or columns differ in version 2. */
const V1_INDEXES = ['_sluice_downloads__pipeline', '_sluice_rejects__download'];

/** The state tables as Kysely sees them. */
export interface StateDatabase {
  _sluice_meta: { key: string; value: string };
  _sluice_runs: {
    run_id: string;
    pipeline: string;
    started_at: string;
    finished_at: string | null;
    status: string;
    summary: string | null;
    stage: string | null;
    error_code: string | null;
    error_message: string | null;
    resumes: string | null;
    credits: string | null;
    /** The orchestrator's key for the run (`--run-key`): its retries finish it, never redo it. */
    run_key: string | null;
    /**
     * The unit of work the run was asked to do: its selected jobs' names, sorted, as a JSON
     * array (null: a run of an older sluice, whose unit is unknown).
     */
    selected_jobs: string | null;
    /** The command of several pipeline files the run belonged to (`run a.yaml b.yaml`). */
    batch_id: string | null;
    /** That command's members: each pipeline and its selected jobs, as sorted JSON. */
    batch_members: string | null;
  };
  _sluice_jobs: {
    run_id: string;
    pipeline: string;
    job: string;
    status: string;
    stage: string | null;
    started_at: string;
    finished_at: string | null;
    download_ids: string | null;
    error_code: string | null;
    error_message: string | null;
    summary: string | null;
    spec_hash: string | null;
    load_hash: string | null;
  };
  _sluice_downloads: {
    attempt_id: string;
    pipeline: string;
    job: string;
    spec_hash: string;
    api: string;
    download_id: string | null;
    status: string;
    target_table: string;
    load_table: string;
    num_found: number | null;
    num_records: number | null;
    requested_at: string;
    started_at: string | null;
    updated_at: string;
    finished_at: string | null;
    run_id: string;
    message: string | null;
    load_hash: string | null;
    write_mode: string | null;
    data_type: string | null;
    query: string | null;
    format: string | null;
    num_requested: number | null;
    cursor_from: string | null;
    credits: string | null;
    stage: string | null;
    /**
     * What decides where and how its rows land (`JobSpec.loadSettings`, as JSON): `load_hash`
     * is its hash. Null in attempts of sluice before state version 4.
     */
    load_settings: string | null;
    /**
     * What was bought: a download (null, as every row before version 4), a `targeted_update`
     * (records refreshed on the service) or a `scrape` (records in the answer itself). This and
     * the next two are optional in writes: a download's row need not name them.
     */
    kind?: string | null;
    /** A scrape's records as NDJSON, saved with its answer and cleared once they are loaded. */
    payload?: string | null;
    /**
     * The account's credits used (of the request's credit type, or the legacy total) just before
     * a scrape was asked for: a later run finding the request unanswered tells from it whether
     * the service charged it (a scrape cannot be looked up afterwards).
     */
    used_before?: number | null;
  };
  _sluice_files: {
    download_id: string;
    file_index: number;
    file_name: string;
    table_name: string;
    rows_loaded: number;
    rows_rejected: number;
    bytes: number;
    loaded_at: string;
    run_id: string;
  };
  _sluice_rejects: {
    download_id: string;
    job: string;
    file_name: string;
    line: number;
    raw: string;
    reason: string;
    created_at: string;
  };
  _sluice_cursors: {
    pipeline: string;
    job: string;
    field: string;
    value: string;
    updated_at: string;
    run_id: string;
    download_id: string | null;
  };
  _sluice_leases: {
    /** The lock's name (`pipeline:<name>`). */
    name: string;
    /** The token of the lock's latest holder: only that holder may write. */
    holder: string;
    taken_at: string;
    /** Who took it, for messages: the run, the process and the host. */
    by: string | null;
  };
  _sluice_tables: {
    /**
     * A table a job writes, as the destination spells it (`naming:` applied, before it is fitted
     * to the identifier limit); its `<table>__*` names (child, link and staging tables, indexes)
     * go with it.
     */
    table_name: string;
    /** `table`: a job's own table; `people`: a people table autotrace and owner lookups share. */
    role: string;
    pipeline: string;
    job: string;
    claimed_at: string;
    /** The run that claimed it. */
    run_id: string;
  };
  _sluice_alerts: {
    /** The run the alert is about; null for `sluice notify test`. */
    run_id: string | null;
    pipeline: string;
    /** failed, refused, incomplete, interrupted, recovered, budget, success, or test. */
    event: string;
    /** webhook, slack or email. */
    target_kind: string;
    /** The target's host (and port): never its path or credentials, which may be secrets. */
    target: string;
    sent_at: string;
    /** 'true' when the target took it. */
    ok: string;
    attempts: number;
    /** Why it was not delivered (no secret in it). */
    error: string | null;
  };
  /** When a job of a run entered a phase (`pipeline/progress.ts`) and left it (null: in it). */
  _sluice_phases: {
    run_id: string;
    pipeline: string;
    job: string;
    phase: string;
    started_at: string;
    ended_at: string | null;
  };
}

/** What a destination tells the migration about its tables. */
export interface StateCatalog {
  /** Columns of a table in the destination, or undefined when it does not exist. */
  columns(table: string): Promise<string[] | undefined>;
}

export class StateVersionError extends Error {}

/**
 * Creates the state tables, or brings older ones up to `STATE_VERSION` in place, within the
 * caller's transaction (the caller also keeps two processes from doing it at once).
 */
export async function migrateStateTables(
  db: Kysely<StateDatabase>,
  catalog: StateCatalog,
): Promise<{ from: number; to: number }> {
  const from = await stateVersion(db, catalog);
  if (from > STATE_VERSION) {
    throw new StateVersionError(
      `the state tables were written by a newer sluice (state version ${from}; this one knows ${STATE_VERSION}): upgrade sluice`,
    );
  }
  if (from === STATE_VERSION) return { from, to: from };
  for (const table of STATE_TABLES) {
    const have = await catalog.columns(table.name);
    if (have === undefined) {
      let create = db.schema.createTable(table.name);
      for (const c of table.columns) {
        create = create.addColumn(c.name, c.kind, (col) => (c.notNull ? col.notNull() : col));
      }
      if (table.primaryKey.length > 0) {
        create = create.addPrimaryKeyConstraint(`${table.name}_pk`, table.primaryKey as never[]);
      }
      await create.execute();
    } else {
      // Columns added since version 1 are nullable: older rows simply have none.
      for (const c of table.columns) {
        if (!have.includes(c.name)) {
          await db.schema.alterTable(table.name).addColumn(c.name, c.kind).execute();
        }
      }
    }
    for (const index of table.indexes) {
      await db.schema
        .createIndex(index.name)
        .ifNotExists()
        .on(table.name)
        .columns(index.columns)
        .execute();
    }
  }
  for (const name of V1_INDEXES) await db.schema.dropIndex(name).ifExists().execute();
  await db
    .insertInto('_sluice_meta')
    .values({ key: 'state_version', value: String(STATE_VERSION) })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: String(STATE_VERSION) }))
    .execute();
  return { from, to: STATE_VERSION };
}

/** 0: no state tables; 1: the tables of sluice 0.1 (no `_sluice_meta`); else the recorded one. */
export async function stateVersion(
  db: Kysely<StateDatabase>,
  catalog: StateCatalog,
): Promise<number> {
  if ((await catalog.columns('_sluice_meta')) === undefined) {
    return (await catalog.columns('_sluice_runs')) === undefined ? 0 : 1;
  }
  const row = await db
    .selectFrom('_sluice_meta')
    .select('value')
    .where('key', '=', 'state_version')
    .executeTakeFirst();
  return row === undefined ? 1 : Number(row.value);
}
