import type { Kysely } from 'kysely';
import { SluiceError } from '../errors.js';
import { plainRows } from '../schema/copy-text.js';
import type { Widening } from '../schema/plan.js';
import type { Column, PackedRows, RowValue } from '../schema/types.js';
import type {
  DestinationCapabilities,
  FileRead,
  FileToRead,
  Lock,
  LockOptions,
  PairFilter,
} from './destination.js';
import type { LeaseHold } from './state-store.js';
import type { StateDatabase } from './state-tables.js';

/**
 * What each database does its own way, under the shared loader (`loader.ts`), in the parts a
 * destination's folder holds under the same file names, as Kysely splits a dialect into driver,
 * introspector and compiler:
 *
 * - `connection.ts`: opening, transactions and locks (`DialectConnection`);
 * - `types.ts`: how sluice's column types map to the database's, and values to its cells;
 * - `schema.ts`: DDL and introspection (`DialectSchema`);
 * - `writer.ts`: rows in bulk, in the encoding the destination wants (`DialectWriter`);
 * - `errors.ts`: a driver's errors as SluiceErrors that say what to do;
 * - `index.ts`: the registry's entry (URLs, display name, capabilities, its own options) and
 *   `connect`, which makes the parts (the registry puts them under the loader);
 * - `test-target.ts`: fresh targets for tests (`DestinationEntry.testTargets`).
 *
 * Names here are physical (already within the identifier limit). Only `src/load/` sees these
 * interfaces. `C` is the dialect's handle on one transaction (an embedded database's handle, a
 * server's client).
 */
export interface Dialect<C> {
  /** The destination's name in the registry (`DestinationEntry.name`). */
  readonly name: string;
  /** As messages name it (`DestinationEntry.displayName`). */
  readonly displayName: string;
  /** Where the data goes, without any password. */
  readonly description: string;
  readonly capabilities: DestinationCapabilities;
  readonly readOnly: boolean;
  /** State statements outside any transaction. */
  readonly db: Kysely<StateDatabase>;
  readonly connection: DialectConnection<C>;
  readonly schema: DialectSchema<C>;
  readonly writer: DialectWriter<C>;
  /** A driver's error as a SluiceError that says what to do (and never holds a password). */
  translate(error: unknown): unknown;
}

export interface DialectConnection<C> {
  /**
   * How a transaction keeps its run's lease from being taken over until it ends (see
   * `Loader.lock`): `share` locks the lease row (a dialect with row locks); `write` writes it,
   * so that a takeover's write conflicts with it (a dialect whose transactions take no locks but
   * check write conflicts); `none` where a transaction is the one writer (a destination with one
   * writer).
   */
  readonly leaseHold: LeaseHold;
  /**
   * Runs `work` in one transaction on one connection; `db` runs state statements inside it.
   * Rolled back when `work` throws.
   */
  transaction<T>(work: (conn: C, db: Kysely<StateDatabase>) => Promise<T>): Promise<T>;
  /** Runs the state tables' creation or migration so that two processes never do it at once. */
  migrationTransaction<T>(work: (conn: C, db: Kysely<StateDatabase>) => Promise<T>): Promise<T>;
  lock(name: string, options: LockOptions): Promise<Lock>;
  /**
   * For the rest of the transaction, a statement waits at most `ms` for a lock another session
   * holds, then fails with SLUICE_DESTINATION_BUSY (a destination with one writer: its busy
   * timeout stands).
   */
  waitAtMost(conn: C, ms: number): Promise<void>;
  close(): Promise<void>;
}

export interface DialectSchema<C> {
  /** Columns of a table, or undefined when there is none (`conn`: inside a transaction). */
  describe(table: string, conn?: C): Promise<Column[] | undefined>;
  /** The destination's tables (physical names), the state tables among them, in name order. */
  tableNames(): Promise<string[]>;
  /** Column names of a state table, or undefined (for the migration). */
  stateColumns(table: string, conn: C): Promise<string[] | undefined>;
  createTable(conn: C, table: string, columns: readonly BoundColumn[]): Promise<void>;
  addColumns(conn: C, table: string, columns: readonly BoundColumn[]): Promise<void>;
  /** Changes a column's type, in place or by rebuilding it, as `capabilities` says. */
  widenColumn(conn: C, table: string, change: Widening): Promise<void>;
  createIndex(conn: C, table: string, index: IndexDef): Promise<void>;
  indexes(table: string, conn?: C): Promise<IndexDef[]>;
  /**
   * Before a schema change inside a transaction that other writers may share the table with:
   * waits for them (a dialect with table locks: an exclusive one), so the table is described
   * afresh.
   */
  lockTable(conn: C, table: string): Promise<void>;
  /** Replaces `target` with `staging` inside the transaction; indexes are renamed with it. */
  swap(conn: C, staging: string, target: string, indexes: readonly IndexRename[]): Promise<void>;
  clear(conn: C, table: string): Promise<void>;
  drop(conn: C, table: string): Promise<void>;
}

/** The table a result file is read into by the database itself (`DialectWriter.readFile`). */
export interface ReadInto {
  /** Physical name. */
  table: string;
  /** Its columns as they are (physical names). */
  columns: ReadonlyMap<string, Column['type']>;
  /** The row key (field) each column holds. */
  names: { logical(physical: string): string };
  mode: 'append' | 'merge';
  /** The merge key (physical names). */
  key: readonly string[];
}

export interface DialectWriter<C> {
  /**
   * Rows as this destination writes them: bound values in the table's column order (see
   * `rowsInTableOrder`), or the encoding its parse workers wrote them in (COPY text, where the
   * capability `rowEncoding` asked for it).
   */
  encode(packed: PackedRows, columns: readonly BoundColumn[]): TableRows;
  /** Whether an insert failed on the encoding of the rows (sluice's fault, never a value's). */
  isEncodingFault(error: unknown): boolean;
  /** Writes rows whole: `append` inserts, `merge` upserts on `key` (the last row of a key wins). */
  insert(
    conn: C,
    table: string,
    columns: readonly BoundColumn[],
    rows: TableRows,
    mode: 'append' | 'merge',
    key: readonly string[],
  ): Promise<void>;
  /** A savepoint inside the transaction: `begin`, then `release` or `rollback` to it. */
  savepoint(conn: C, step: 'begin' | 'release' | 'rollback'): Promise<void>;
  deleteWhereIn(
    conn: C,
    table: string,
    column: string,
    values: readonly (string | number | bigint)[],
  ): Promise<void>;
  readPairs(
    table: string,
    columns: [string, string],
    filter?: PairFilter,
  ): Promise<[unknown, unknown][]>;
  /**
   * Reads a result file itself into a table, or writes nothing and answers undefined (see
   * `FileTransaction.readFile`).
   */
  readFile?(conn: C, into: ReadInto, file: FileToRead): Promise<FileRead | undefined>;
  /** See `Destination.prepareReads`. */
  prepareReads?(): void;
}

/** Rows to insert: `count` rows of one value per column of the insert, row after row. */
export interface TableRows {
  readonly count: number;
  readonly values: readonly RowValue[];
  /**
   * Instead of values, the rows in an encoding of the destination's own: the lines of the
   * columns `columns` names (physical), in that order: every column of the table.
   */
  readonly text?: { readonly columns: readonly string[]; readonly bytes: Uint8Array };
}

/** A column as written: its physical name and type, and the row key its values come from. */
export interface BoundColumn extends Column {
  source: string;
}

export interface IndexDef {
  name: string;
  columns: string[];
  unique: boolean;
}

export interface IndexRename extends IndexDef {
  /** The index's name on the staging table. */
  from: string;
}

/**
 * Packed rows as the table's columns take them, as values (those a parse worker wrote in an
 * encoding read back: `plainRows`): absent fields NULL, constants repeated.
 */
export function rowsInTableOrder(rows: PackedRows, columns: readonly BoundColumn[]): TableRows {
  const packed = plainRows(rows);
  const from = new Map(packed.names.map((name, i) => [name, i]));
  const width = columns.length;
  const stride = packed.names.length;
  // Per column: its place in a packed row, or -1 with the value every row has (NULL or a constant).
  const slots = new Int32Array(width);
  const fixed: RowValue[] = new Array(width).fill(null);
  for (let c = 0; c < width; c++) {
    const source = columns[c]!.source;
    // A constant wins over a field of the same name (the load's own columns are its own).
    if (packed.constants && Object.hasOwn(packed.constants, source)) {
      slots[c] = -1;
      fixed[c] = packed.constants[source]!;
    } else slots[c] = from.get(source) ?? -1;
  }
  const input = packed.values;
  const values: RowValue[] = new Array(packed.count * width);
  for (let r = 0, o = 0; r < packed.count; r++) {
    const base = r * stride;
    for (let c = 0; c < width; c++) {
      const slot = slots[c]!;
      values[o++] = slot >= 0 ? (input[base + slot] ?? null) : fixed[c]!;
    }
  }
  return { count: packed.count, values };
}

/**
 * The statement of `readPairs`: two columns, both non-null, of the rows the filter picks.
 * `param(i)` writes the dialect's placeholder for the i-th value (from 1).
 */
export function pairsStatement(
  table: string,
  [a, b]: [string, string],
  filter: PairFilter | undefined,
  param: (i: number) => string,
): { text: string; values: string[] } {
  const where = [`${quoteIdent(a)} IS NOT NULL`, `${quoteIdent(b)} IS NOT NULL`];
  const values: string[] = [];
  if (filter?.downloadId !== undefined) {
    values.push(filter.downloadId);
    where.push(`${quoteIdent('_sluice_download_id')} = ${param(values.length)}`);
  }
  if (filter?.loadedSince !== undefined) {
    values.push(filter.loadedSince);
    where.push(`${quoteIdent('_sluice_loaded_at')} >= ${param(values.length)}`);
  }
  return {
    text: `SELECT ${quoteIdent(a)}, ${quoteIdent(b)} FROM ${table} WHERE ${where.join(' AND ')}`,
    values,
  };
}

/** Quotes an identifier: `"name"`, with inner quotes doubled. */
export function quoteIdent(name: string): string {
  if (name.length === 0 || name.includes('\u0000')) {
    throw new SluiceError(`not a usable SQL identifier: ${JSON.stringify(name)}`, {
      code: 'SLUICE_DESTINATION',
    });
  }
  return `"${name.replaceAll('"', '""')}"`;
}
