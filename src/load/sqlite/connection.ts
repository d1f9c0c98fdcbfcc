import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect as KyselySqliteDialect, sql } from 'kysely';
import { SluiceError } from '../../errors.js';
import { lockBesideFile } from '../core/lock-file.js';
import type { Lock, LockOptions } from '../destination.js';
import type { DialectConnection } from '../dialect.js';
import { DestinationError } from '../errors.js';
import type { StateDatabase } from '../state-tables.js';
import { translateSqliteError } from './errors.js';

/**
 * The page size of a database sluice makes (an existing one keeps its own: SQLite changes it
 * only by a VACUUM outside WAL mode). A property record takes about 1.7 KB as a row: a 4 KB
 * page (SQLite's default) holds two and leaves a fifth of itself empty, a 16 KB page nine or
 * ten, which commits and inserts faster and takes less room (test/bench/sqlite-insert.ts).
 */
export const PAGE_SIZE = 16384;

/** How long a statement waits for another program's lock on the database before failing. */
const BUSY_TIMEOUT_MS = 10_000;

/**
 * One SQLite file open through better-sqlite3, shared by the dialect's parts: the handle, the
 * prepared statements the writer keeps (dropped by any change of a table's shape), and Kysely
 * for the state statements.
 */
export class SqliteSession {
  readonly db: Kysely<StateDatabase>;
  readonly statements: Map<string, Database.Statement> = new Map();

  constructor(
    readonly handle: Database.Database,
    readonly path: string,
    readonly readOnly: boolean,
    readonly busyTimeoutMs: number,
  ) {
    this.db = new Kysely<StateDatabase>({
      dialect: new KyselySqliteDialect({ database: handle }),
    });
  }

  get description(): string {
    return `sqlite:${this.path}`;
  }
}

/**
 * Opens `path` (absolute, or `:memory:`). Writable: the folder is made when missing, WAL mode
 * is set (analysts can read while a run loads) and the file is checked to be an SQLite database,
 * so every problem surfaces here as one clear error. Read-only: a missing file is
 * `SLUICE_NO_STATE`, and nothing is created.
 */
export function openSqlite(
  path: string,
  options: { readOnly?: boolean; busyTimeoutMs?: number },
): SqliteSession {
  const readOnly = options.readOnly === true;
  const timeout = options.busyTimeoutMs ?? BUSY_TIMEOUT_MS;
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
  return new SqliteSession(handle, path, readOnly, timeout);
}

/**
 * Transactions are `BEGIN IMMEDIATE`: they take SQLite's one writer slot at once (waiting up to
 * the busy timeout for another program), so two never deadlock on upgrading a read lock.
 */
export class SqliteConnection implements DialectConnection<Database.Database> {
  readonly leaseHold = 'none' as const;

  constructor(readonly session: SqliteSession) {}

  transaction<T>(work: (conn: Database.Database, db: Kysely<StateDatabase>) => Promise<T>) {
    const { session } = this;
    if (session.readOnly) {
      throw new SluiceError(`${session.description} is open read-only`, {
        code: 'SLUICE_READ_ONLY',
      });
    }
    // One connection: Kysely's connection lock keeps every other statement out until the end.
    return session.db.connection().execute(async (db) => {
      await sql`BEGIN IMMEDIATE`.execute(db);
      try {
        const result = await work(session.handle, db);
        await sql`COMMIT`.execute(db);
        return result;
      } catch (error) {
        if (session.handle.inTransaction) await sql`ROLLBACK`.execute(db);
        session.statements.clear();
        throw error;
      }
    });
  }

  migrationTransaction<T>(
    work: (conn: Database.Database, db: Kysely<StateDatabase>) => Promise<T>,
  ) {
    return this.transaction(work);
  }

  /**
   * The lock file sits beside the database file itself, found by its real path: two paths to one
   * database (a symbolic link, a linked folder) take the same lock.
   */
  lock(name: string, options: LockOptions): Promise<Lock> {
    return lockBesideFile(this.session.path, name, options);
  }

  async waitAtMost(): Promise<void> {
    // One writer at a time: a transaction that began has the database to itself.
  }

  async close(): Promise<void> {
    this.session.statements.clear();
    await this.session.db.destroy();
  }
}
