import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect as KyselySqliteDialect, sql } from 'kysely';
import { SluiceError } from '../../errors.js';
import type { Widening } from '../../schema/plan.js';
import { type Column, type ColumnType, type RowValue, textOf } from '../../schema/types.js';
import type {
  Destination,
  DestinationCapabilities,
  Lock,
  LockOptions,
  PairFilter,
} from '../destination.js';
import {
  type BoundColumn,
  type Dialect,
  type IndexDef,
  type IndexRename,
  pairsStatement,
  quoteIdent,
  type TableRows,
} from '../dialect.js';
import { DestinationError } from '../errors.js';
import { Loader } from '../loader.js';
import type { StateDatabase } from '../state-tables.js';
import { translateSqliteError } from './sqlite-errors.js';
import { lockFile } from './sqlite-lock.js';

/**
 * The page size of a database sluice makes (an existing one keeps its own: SQLite changes it
 * only by a VACUUM outside WAL mode). A property record takes about 1.7 KB as a row: a 4 KB
 * page (SQLite's default) holds two and leaves a fifth of itself empty, a 16 KB page nine or
 * ten. With 16 KB pages, 100,000 records committed 10,000 at a time took 40% less time to
 * commit (a commit copies the write-ahead log into the database page by page), 5-10% less to
 * insert, and 15% less room (test/bench/sqlite-insert.ts).
 */
export const PAGE_SIZE = 16384;

/** Declared SQLite types: each maps back to one ColumnType (see `typeOfDeclared`). */
const DECLARED: Record<ColumnType, string> = {
  boolean: 'BOOLEAN',
  integer: 'INTEGER',
  real: 'REAL',
  timestamp: 'TIMESTAMP',
  json: 'JSON',
  text: 'TEXT',
};

function typeOfDeclared(declared: string): ColumnType {
  switch (declared.toUpperCase()) {
    case 'BOOLEAN':
      return 'boolean';
    case 'INTEGER':
    case 'BIGINT':
      return 'integer';
    case 'REAL':
    case 'DOUBLE':
      return 'real';
    case 'TIMESTAMP':
      return 'timestamp';
    case 'JSON':
      return 'json';
    default:
      return 'text';
  }
}

/**
 * A value as better-sqlite3 binds it for a column of `type`: booleans as 1 and 0; a bigint as
 * itself, which it binds as a 64-bit INTEGER, exactly.
 */
function bindable(value: RowValue | undefined, type: ColumnType): string | number | bigint | null {
  if (value === undefined || value === null) return null;
  if (type === 'text') return textOf(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

/** How long a statement waits for another program's lock on the database before failing. */
const BUSY_TIMEOUT_MS = 10_000;

const CAPABILITIES: DestinationCapabilities = {
  maxIdentifierBytes: Number.POSITIVE_INFINITY,
  maxColumns: 2000,
  alterColumnType: 'rebuild',
  concurrentWriters: 1,
  copyText: false,
  batchBytes: { appends: 64 << 10, merges: { csv: 64 << 10, json: 64 << 10 } },
};

/**
 * The embedded default: one SQLite file through better-sqlite3, in WAL mode so that analysts
 * can read while a run loads. State statements go through Kysely; rows go through cached
 * prepared statements, one `run()` per row inside the file's transaction: on 30-column rows
 * that measured 70,000-100,000 rows/s against 34,000-45,000 for Kysely's multi-row inserts
 * (test/bench/sqlite-insert.ts), since nothing is compiled per batch.
 *
 * Transactions are `BEGIN IMMEDIATE`: they take SQLite's one writer slot at once (waiting up to
 * the busy timeout for another program), so two never deadlock on upgrading a read lock.
 */
class SqliteDialect implements Dialect<Database.Database> {
  readonly kind = 'sqlite' as const;
  readonly capabilities = CAPABILITIES;
  readonly rowLocks = false;
  readonly db: Kysely<StateDatabase>;
  readonly #handle: Database.Database;
  readonly #statements = new Map<string, Database.Statement>();

  constructor(
    handle: Database.Database,
    readonly path: string,
    readonly description: string,
    readonly readOnly: boolean,
    readonly busyTimeoutMs: number,
  ) {
    this.#handle = handle;
    this.db = new Kysely<StateDatabase>({
      dialect: new KyselySqliteDialect({ database: handle }),
    });
  }

  transaction<T>(work: (conn: Database.Database, db: Kysely<StateDatabase>) => Promise<T>) {
    this.#refuseWrites();
    // One connection: Kysely's connection lock keeps every other statement out until the end.
    return this.db.connection().execute(async (db) => {
      await sql`BEGIN IMMEDIATE`.execute(db);
      try {
        const result = await work(this.#handle, db);
        await sql`COMMIT`.execute(db);
        return result;
      } catch (error) {
        if (this.#handle.inTransaction) await sql`ROLLBACK`.execute(db);
        this.#statements.clear();
        throw error;
      }
    });
  }

  migrationTransaction<T>(
    work: (conn: Database.Database, db: Kysely<StateDatabase>) => Promise<T>,
  ) {
    return this.transaction(work);
  }

  #refuseWrites(): void {
    if (this.readOnly) {
      throw new SluiceError(`${this.description} is open read-only`, { code: 'SLUICE_READ_ONLY' });
    }
  }

  async describe(table: string): Promise<Column[] | undefined> {
    const info = this.#handle.pragma(`table_info(${quoteIdent(table)})`) as {
      name: string;
      type: string;
    }[];
    if (info.length === 0) return undefined;
    return info.map((c) => ({ name: c.name, type: typeOfDeclared(c.type) }));
  }

  async stateColumns(table: string): Promise<string[] | undefined> {
    return (await this.describe(table))?.map((c) => c.name);
  }

  async createTable(
    handle: Database.Database,
    table: string,
    columns: readonly BoundColumn[],
  ): Promise<void> {
    const defs = columns.map((c) => `${quoteIdent(c.name)} ${DECLARED[c.type]}`);
    handle.exec(`CREATE TABLE ${quoteIdent(table)} (${defs.join(', ')})`);
    this.#statements.clear();
  }

  async addColumns(
    handle: Database.Database,
    table: string,
    columns: readonly BoundColumn[],
  ): Promise<void> {
    for (const c of columns) {
      handle.exec(
        `ALTER TABLE ${quoteIdent(table)} ADD COLUMN ${quoteIdent(c.name)} ${DECLARED[c.type]}`,
      );
    }
    this.#statements.clear();
  }

  /**
   * SQLite cannot change a column's declared type, and its type affinity would turn text such
   * as `01234` into a number in an INTEGER column. So a widened column is rebuilt: renamed
   * aside, added again with the new type, copied, and the old one dropped; the indexes on it
   * are dropped first and made again after.
   */
  async widenColumn(handle: Database.Database, table: string, change: Widening): Promise<void> {
    const t = quoteIdent(table);
    const name = quoteIdent(change.name);
    const aside = quoteIdent(`${change.name}__sluice_old`);
    const indexes = (await this.indexes(table)).filter((i) => i.columns.includes(change.name));
    for (const index of indexes) handle.exec(`DROP INDEX ${quoteIdent(index.name)}`);
    handle.exec(`ALTER TABLE ${t} RENAME COLUMN ${name} TO ${aside}`);
    handle.exec(`ALTER TABLE ${t} ADD COLUMN ${name} ${DECLARED[change.to]}`);
    handle.exec(`UPDATE ${t} SET ${name} = ${castExpression(aside, change.from, change.to)}`);
    handle.exec(`ALTER TABLE ${t} DROP COLUMN ${aside}`);
    for (const index of indexes) await this.createIndex(handle, table, index);
    this.#statements.clear();
  }

  async createIndex(handle: Database.Database, table: string, index: IndexDef): Promise<void> {
    handle.exec(
      `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${quoteIdent(index.name)} ON ${quoteIdent(table)} (${index.columns.map(quoteIdent).join(', ')})`,
    );
  }

  async lockTable(): Promise<void> {
    // One writer at a time: nothing can have changed the table since this transaction began.
  }

  async insert(
    _handle: Database.Database,
    table: string,
    columns: readonly BoundColumn[],
    rows: TableRows,
    mode: 'append' | 'merge',
    key: readonly string[],
  ): Promise<void> {
    if (rows.text) throw new Error('SQLite takes rows as values, not COPY text');
    const statement = this.#insertStatement(table, columns, mode, key);
    const width = columns.length;
    const types = columns.map((c) => c.type);
    const values: (string | number | bigint | null)[] = new Array(width);
    const input = rows.values;
    for (let r = 0, o = 0; r < rows.count; r++) {
      for (let i = 0; i < width; i++) values[i] = bindable(input[o++], types[i]!);
      statement.run(values);
    }
  }

  #insertStatement(
    table: string,
    columns: readonly BoundColumn[],
    mode: 'append' | 'merge',
    key: readonly string[],
  ): Database.Statement {
    const names = columns.map((c) => c.name);
    const cacheKey = JSON.stringify([table, mode, key, names]);
    let statement = this.#statements.get(cacheKey);
    if (statement === undefined) {
      if (this.#statements.size >= 256) this.#statements.clear(); // bounded, whatever the data
      const list = names.map(quoteIdent).join(', ');
      const params = names.map(() => '?').join(', ');
      let text = `INSERT INTO ${quoteIdent(table)} (${list}) VALUES (${params})`;
      if (mode === 'merge' && key.length > 0) {
        const updates = names
          .filter((n) => !key.includes(n))
          .map((n) => `${quoteIdent(n)} = excluded.${quoteIdent(n)}`);
        const target = key.map(quoteIdent).join(', ');
        text +=
          updates.length > 0
            ? ` ON CONFLICT (${target}) DO UPDATE SET ${updates.join(', ')}`
            : ` ON CONFLICT (${target}) DO NOTHING`;
      }
      statement = this.#handle.prepare(text);
      this.#statements.set(cacheKey, statement);
    }
    return statement;
  }

  async savepoint(
    handle: Database.Database,
    step: 'begin' | 'release' | 'rollback',
  ): Promise<void> {
    if (step === 'begin') handle.exec('SAVEPOINT sluice_batch');
    else if (step === 'release') handle.exec('RELEASE sluice_batch');
    else handle.exec('ROLLBACK TO sluice_batch; RELEASE sluice_batch');
  }

  async deleteWhereIn(
    handle: Database.Database,
    table: string,
    column: string,
    values: readonly (string | number)[],
  ): Promise<void> {
    for (let i = 0; i < values.length; i += 500) {
      const chunk = values.slice(i, i + 500);
      handle
        .prepare(
          `DELETE FROM ${quoteIdent(table)} WHERE ${quoteIdent(column)} IN (${chunk.map(() => '?').join(', ')})`,
        )
        .run(...chunk);
    }
  }

  async swap(
    handle: Database.Database,
    staging: string,
    target: string,
    indexes: readonly IndexRename[],
  ): Promise<void> {
    // Inside the caller's transaction: readers see the old table until it commits. Index names
    // are global in SQLite and cannot be renamed: the staging ones are made again.
    for (const index of indexes) handle.exec(`DROP INDEX IF EXISTS ${quoteIdent(index.from)}`);
    handle.exec(`DROP TABLE IF EXISTS ${quoteIdent(target)}`);
    handle.exec(`ALTER TABLE ${quoteIdent(staging)} RENAME TO ${quoteIdent(target)}`);
    for (const index of indexes) await this.createIndex(handle, target, index);
    this.#statements.clear();
  }

  async clear(handle: Database.Database, table: string): Promise<void> {
    handle.exec(`DELETE FROM ${quoteIdent(table)}`);
  }

  async drop(handle: Database.Database, table: string): Promise<void> {
    handle.exec(`DROP TABLE IF EXISTS ${quoteIdent(table)}`);
    this.#statements.clear();
  }

  async indexes(table: string): Promise<IndexDef[]> {
    const list = this.#handle.pragma(`index_list(${quoteIdent(table)})`) as {
      name: string;
      unique: number;
      origin: string;
    }[];
    return list
      .filter((i) => i.origin === 'c')
      .map((i) => ({
        name: i.name,
        unique: i.unique === 1,
        columns: (
          this.#handle.pragma(`index_info(${quoteIdent(i.name)})`) as { name: string }[]
        ).map((c) => c.name),
      }));
  }

  async readPairs(
    table: string,
    columns: [string, string],
    filter?: PairFilter,
  ): Promise<[unknown, unknown][]> {
    const { text, values } = pairsStatement(quoteIdent(table), columns, filter, () => '?');
    return this.#handle
      .prepare(text)
      .raw()
      .all(...values) as [unknown, unknown][];
  }

  /**
   * The lock file sits beside the database file itself, found by its real path: two paths to one
   * database (a symbolic link, a linked folder) take the same lock.
   */
  async lock(name: string, options: LockOptions): Promise<Lock> {
    if (this.path === ':memory:') return { where: ':memory:', release: async () => {} };
    const safe = name.replace(/[^A-Za-z0-9_.-]+/g, '_');
    return lockFile(`${realpathSync(this.path)}.${safe}.lock`, options);
  }

  async waitAtMost(): Promise<void> {
    // One writer at a time: a transaction that began has the database to itself.
  }

  translate(error: unknown): unknown {
    return translateSqliteError(error, this.path, this.busyTimeoutMs);
  }

  async close(): Promise<void> {
    this.#statements.clear();
    await this.db.destroy();
  }
}

/** The expression that converts column `col` from `from` to `to`, as PostgreSQL would. */
function castExpression(col: string, from: ColumnType, to: ColumnType): string {
  if (to !== 'text') return col;
  if (from === 'boolean') {
    return `CASE ${col} WHEN 1 THEN 'true' WHEN 0 THEN 'false' ELSE CAST(${col} AS TEXT) END`;
  }
  // A whole number stored as REAL reads back as `1999.0` from CAST; PostgreSQL writes `1999`.
  return `CASE WHEN typeof(${col}) = 'real' AND ${col} = CAST(${col} AS INTEGER) THEN CAST(CAST(${col} AS INTEGER) AS TEXT) ELSE CAST(${col} AS TEXT) END`;
}

/**
 * Opens `path` (absolute, or `:memory:`). Writable: the folder is made when missing, WAL mode
 * is set and the file is checked to be an SQLite database, so every problem surfaces here as
 * one clear error. Read-only: a missing file is `SLUICE_NO_STATE`, and nothing is created.
 */
export async function openSqliteDestination(
  path: string,
  options: { readOnly?: boolean; busyTimeoutMs?: number } = {},
): Promise<Destination> {
  const readOnly = options.readOnly === true;
  const timeout = options.busyTimeoutMs ?? BUSY_TIMEOUT_MS;
  const description = `sqlite:${path}`;
  let handle: Database.Database | undefined;
  try {
    if (readOnly) {
      if (path !== ':memory:' && !existsSync(path)) {
        throw new DestinationError(
          `no state found at ${path}: the database does not exist`,
          'SLUICE_NO_STATE',
        );
      }
      handle = new Database(path, { readonly: true, fileMustExist: true, timeout });
      handle.pragma('schema_version'); // reads the header: fails here if it is no database
    } else {
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      handle = new Database(path, { timeout });
      if (handle.readonly) {
        throw Object.assign(new Error('read-only'), { code: 'SQLITE_READONLY' });
      }
      // Takes effect only in a database not yet written (see PAGE_SIZE); before WAL, which
      // writes the first page.
      handle.pragma(`page_size = ${PAGE_SIZE}`);
      handle.pragma('journal_mode = WAL');
      handle.pragma('synchronous = NORMAL');
      handle.pragma('foreign_keys = ON');
    }
  } catch (error) {
    handle?.close();
    throw translateSqliteError(error, path, timeout);
  }
  return new Loader(new SqliteDialect(handle, path, description, readOnly, timeout));
}
