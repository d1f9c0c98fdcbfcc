import type { Kysely } from 'kysely';
import type { Row } from '../records/types.js';

/**
 * Destinations are like Kysely dialects: one interface, a few capability flags, and an
 * implementation per database (load/sqlite/, load/postgres/) that the same contract suite runs.
 */

export type WriteMode = 'append' | 'replace' | 'merge';

/**
 * Column types, portable across destinations. Widening goes up this order when data disagrees:
 * boolean -> integer -> real -> text; timestamp -> text; json -> text.
 */
export type ColumnType = 'boolean' | 'integer' | 'real' | 'timestamp' | 'json' | 'text';

export interface Column {
  name: string;
  type: ColumnType;
}

export interface TableSpec {
  name: string;
  columns: Column[];
  /** Key columns: a unique index is kept on them when the table is merged into. */
  key: string[];
}

export interface DestinationCapabilities {
  /** Schema changes roll back with the transaction (SQLite and PostgreSQL both do). */
  transactionalDdl: boolean;
  /** A bulk path faster than batched INSERTs (PostgreSQL COPY). */
  bulkLoad: boolean;
  /** Column types can be changed in place (PostgreSQL ALTER COLUMN ... TYPE). */
  alterColumnType: boolean;
}

/** Work done inside one transaction: a file's rows, its rejects and its state row commit together. */
export interface LoadTransaction {
  /**
   * Makes the table exist with at least these columns (adding or widening columns as needed),
   * then writes the rows: `append` inserts, `merge` upserts on `table.key`.
   */
  writeRows(table: TableSpec, rows: Row[], mode: 'append' | 'merge'): Promise<void>;
  /** Deletes rows whose key matches, e.g. child rows of re-loaded parents. */
  deleteWhereIn(table: string, column: string, values: readonly (string | number)[]): Promise<void>;
  /** Runs a state-table statement in this transaction (Kysely query builder). */
  readonly db: Kysely<StateDatabase>;
}

export interface Destination {
  readonly kind: 'sqlite' | 'postgres';
  readonly capabilities: DestinationCapabilities;
  /** Where the data goes, without any password, for messages and summaries. */
  readonly description: string;
  /** The Kysely instance for state tables and queries outside the hot path. */
  readonly db: Kysely<StateDatabase>;

  /** Creates the `_sluice_*` state tables when missing. */
  ensureStateTables(): Promise<void>;
  /** Columns of a table, or undefined when it does not exist. */
  describeTable(name: string): Promise<Column[] | undefined>;
  tableExists(name: string): Promise<boolean>;
  /** Runs `work` in one transaction; rolls back everything if it throws. */
  transaction<T>(work: (tx: LoadTransaction) => Promise<T>): Promise<T>;
  /** Atomically replaces `target` with `staging` (readers see the old or the new table, never half). */
  swapTable(staging: string, target: string, tx: LoadTransaction): Promise<void>;
  dropTable(name: string): Promise<void>;
  /**
   * Takes an exclusive lock named `name` for the life of the returned handle, so two runs of the
   * same pipeline never both start a download. Resolves undefined when `wait` is false and
   * another process holds it.
   */
  lock(name: string, wait: boolean): Promise<{ release(): Promise<void> } | undefined>;
  close(): Promise<void>;
}

/** The state tables, as Kysely sees them. */
export interface StateDatabase {
  _sluice_runs: {
    run_id: string;
    pipeline: string;
    started_at: string;
    finished_at: string | null;
    status: string;
    summary: string | null;
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
}
