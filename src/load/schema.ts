import type { Kysely } from 'kysely';
import { SluiceError } from '../errors.js';
import type { Column, ColumnType, StateDatabase, TableSpec } from './destination.js';

/** Quotes an identifier for SQLite and PostgreSQL alike: `"name"`, with inner quotes doubled. */
export function quoteIdent(name: string): string {
  if (name.length === 0 || name.includes('\u0000')) {
    throw new SluiceError(`not a usable SQL identifier: ${JSON.stringify(name)}`, {
      code: 'SLUICE_DESTINATION',
    });
  }
  return `"${name.replaceAll('"', '""')}"`;
}

/** The name of the unique index a merged table keeps on its key. */
export function keyIndexName(table: string): string {
  return `${table}__sluice_key`;
}

/** What must change in an existing table for a batch's columns to fit. */
export interface TableChanges {
  add: Column[];
  widen: Column[];
}

/** Compares the columns a batch needs with the table's, using `widened` to settle disagreements. */
export function planTableChanges(
  existing: readonly Column[],
  wanted: readonly Column[],
  widened: (a: ColumnType, b: ColumnType) => ColumnType,
): TableChanges {
  const have = new Map(existing.map((c) => [c.name, c.type]));
  const changes: TableChanges = { add: [], widen: [] };
  for (const column of wanted) {
    const type = have.get(column.name);
    if (type === undefined) changes.add.push(column);
    else {
      const final = widened(type, column.type);
      if (final !== type) changes.widen.push({ name: column.name, type: final });
    }
  }
  return changes;
}

/** Column names in the order a batch mentions them, limited to `known` columns. */
export function rowColumns(
  spec: TableSpec,
  rows: readonly Record<string, unknown>[],
  known: ReadonlySet<string>,
) {
  const names = new Set<string>();
  for (const c of spec.columns) names.add(c.name);
  for (const row of rows) for (const name in row) if (known.has(name)) names.add(name);
  return [...names];
}

/**
 * Creates the `_sluice_*` state tables when missing, through Kysely's schema builder so that both
 * destinations get the same tables.
 */
export async function createStateTables(db: Kysely<StateDatabase>): Promise<void> {
  await db.schema
    .createTable('_sluice_runs')
    .ifNotExists()
    .addColumn('run_id', 'text', (c) => c.primaryKey())
    .addColumn('pipeline', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('summary', 'text')
    .execute();
  await db.schema
    .createTable('_sluice_downloads')
    .ifNotExists()
    .addColumn('attempt_id', 'text', (c) => c.primaryKey())
    .addColumn('pipeline', 'text', (c) => c.notNull())
    .addColumn('job', 'text', (c) => c.notNull())
    .addColumn('spec_hash', 'text', (c) => c.notNull())
    .addColumn('api', 'text', (c) => c.notNull())
    .addColumn('download_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('target_table', 'text', (c) => c.notNull())
    .addColumn('load_table', 'text', (c) => c.notNull())
    .addColumn('num_found', 'integer')
    .addColumn('num_records', 'integer')
    .addColumn('requested_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('message', 'text')
    .execute();
  await db.schema
    .createIndex('_sluice_downloads_by_job')
    .ifNotExists()
    .on('_sluice_downloads')
    .columns(['pipeline', 'job', 'requested_at'])
    .execute();
  await db.schema
    .createTable('_sluice_files')
    .ifNotExists()
    .addColumn('download_id', 'text', (c) => c.notNull())
    .addColumn('file_index', 'integer', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('table_name', 'text', (c) => c.notNull())
    .addColumn('rows_loaded', 'integer', (c) => c.notNull())
    .addColumn('rows_rejected', 'integer', (c) => c.notNull())
    .addColumn('bytes', 'bigint', (c) => c.notNull())
    .addColumn('loaded_at', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('_sluice_files_pk', ['download_id', 'file_index'])
    .execute();
  await db.schema
    .createTable('_sluice_rejects')
    .ifNotExists()
    .addColumn('download_id', 'text', (c) => c.notNull())
    .addColumn('job', 'text', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('line', 'integer', (c) => c.notNull())
    .addColumn('raw', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('_sluice_rejects_by_download')
    .ifNotExists()
    .on('_sluice_rejects')
    .columns(['download_id', 'file_name'])
    .execute();
}
