import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DuckDBConnection, DuckDBInstance, DuckDBValue } from '@duckdb/node-api';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  type Dialect as KyselyDialect,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  sql,
} from 'kysely';
import { SluiceError } from '../../errors.js';
import { growHeap } from '../../util/heap-growth.js';
import { sleep } from '../../util/sleep.js';
import { lockBesideFile } from '../core/lock-file.js';
import type { Lock, LockOptions } from '../destination.js';
import type { DialectConnection } from '../dialect.js';
import { DestinationError } from '../errors.js';
import type { StateDatabase } from '../state-tables.js';
import type { FileChecked } from './check-lines.js';
import { CheckThread } from './check-thread.js';
import { translateDuckDbError } from './errors.js';
import { readOnlyInstance } from './left-log.js';
import { DUCKDB_INSTALL } from './package.js';
import { removeDeadScratch, ScratchFolder } from './scratch.js';
import { duckDbBudget } from './settings.js';
import { Spools } from './spools.js';

type DuckDbApi = typeof import('@duckdb/node-api');

/**
 * `@duckdb/node-api` (with DuckDB's binary, about 70 MB) is installed by those who load into
 * DuckDB: sluice asks for it by name the first time a `duckdb:` destination is opened.
 */
async function loadDuckDb(): Promise<DuckDbApi> {
  try {
    return await import('@duckdb/node-api');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new SluiceError(
      `a duckdb: destination needs the @duckdb/node-api package (DuckDB itself, about 70 MB), which is not installed here: ${DUCKDB_INSTALL}`,
      { code: 'SLUICE_USAGE', cause: error },
    );
  }
}

/** One at a time on a connection: DuckDB runs a connection's statements one after another. */
class Mutex {
  #tail: Promise<void> = Promise.resolve();

  async run<T>(work: () => Promise<T>): Promise<T> {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const before = this.#tail;
    this.#tail = before.then(() => held);
    await before;
    try {
      return await work();
    } finally {
      release();
    }
  }

  /** Holds the connection until `release` is called (Kysely's acquire and release). */
  async acquire(): Promise<() => void> {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const before = this.#tail;
    this.#tail = before.then(() => held);
    await before;
    return release;
  }
}

/**
 * A database file is opened once per process, whatever the number of handles on it: two
 * instances of one file would each write it as if alone. DuckDB's instance cache shares one
 * among every handle (the tests' own connections too), and closes the file when the last one
 * is closed. A read-only handle takes the process's writable instance when there is one.
 */
async function instanceOf(
  api: DuckDbApi,
  path: string,
  readOnly: boolean,
): Promise<DuckDBInstance> {
  if (!readOnly || path === ':memory:') return api.DuckDBInstance.fromCache(path);
  try {
    return await readOnlyInstance(api, path);
  } catch (error) {
    if (!/different configuration/.test(String((error as Error).message))) throw error;
    return api.DuckDBInstance.fromCache(path);
  }
}

/**
 * One DuckDB file open: a connection for writes (each file's transaction, and the state
 * statements through Kysely), and one for reads outside any transaction (a table's columns as
 * committed, pairs for an owner lookup); each runs one statement at a time. Result files reach
 * DuckDB's CSV reader through a folder of temporary files of the handle's own.
 */
export class DuckDbSession {
  readonly db: Kysely<StateDatabase>;
  readonly #writes = new Mutex();
  readonly #reads = new Mutex();
  #scratch: ScratchFolder | undefined;
  /**
   * Tables whose rows the transaction under way has updated or deleted: DuckDB cannot commit
   * such changes to a table the same transaction then alters (see DuckDbSchema).
   */
  readonly changed = new Set<string>();
  /** The worker that checks the lines of each file DuckDB reads itself (read-file.ts). */
  readonly checks = new CheckThread();
  /** Set while V8's heap grows freer for this handle (`growHeapWhileOpen`). */
  #heapGrown: (() => void) | undefined;
  /** The result files DuckDB reads itself, fetched into the scratch folder (read-file.ts). */
  readonly spools = new Spools<FileChecked>(() => this.scratch());

  constructor(
    readonly api: DuckDbApi,
    readonly path: string,
    readonly readOnly: boolean,
    readonly instance: DuckDBInstance,
    readonly writer: DuckDBConnection,
    readonly reader: DuckDBConnection,
  ) {
    this.db = new Kysely<StateDatabase>({ dialect: new DuckDbKyselyDialect(this) });
  }

  /**
   * Lets V8's heap grow freer until the handle closes (util/heap-growth.ts): for a writable
   * handle whose result files DuckDB reads itself, spooled through this process's buffers.
   */
  growHeapWhileOpen(): void {
    if (!this.readOnly) this.#heapGrown ??= growHeap();
  }

  get description(): string {
    return `duckdb:${this.path}`;
  }

  /** Runs `work` with the write connection to itself. */
  writing<T>(work: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.#writes.run(() => work(this.writer));
  }

  acquireWriter(): Promise<() => void> {
    return this.#writes.acquire();
  }

  /** Runs `work` on the read connection, which sees what is committed. */
  reading<T>(work: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.#reads.run(() => work(this.reader));
  }

  /** A folder for the files DuckDB reads rows from, removed when the handle closes. */
  scratch(): string {
    this.#scratch ??= ScratchFolder.make();
    return this.#scratch.path;
  }

  close(): void {
    try {
      this.writer.closeSync();
      this.reader.closeSync();
      this.instance.closeSync();
    } finally {
      this.#scratch?.remove();
      this.#heapGrown?.();
      this.#heapGrown = undefined;
    }
  }
}

export interface OpenDuckDbOptions {
  readOnly?: boolean;
  /** Wait while another process holds the file (DuckDB: one writing process at a time). */
  wait?: boolean;
  signal?: AbortSignal;
  onWait?: (where: string) => void;
}

/**
 * Opens `path` (absolute, or `:memory:`). Writable: the folder is made when missing. Read-only:
 * a missing file is `SLUICE_NO_STATE`, and nothing is created. Another process holding the file
 * is `SLUICE_LOCKED`, or, with `wait`, waited for.
 */
export async function openDuckDb(path: string, options: OpenDuckDbOptions): Promise<DuckDbSession> {
  const api = await loadDuckDb();
  const readOnly = options.readOnly === true;
  const budget = duckDbBudget();
  let announced = false;
  for (;;) {
    try {
      if (readOnly && path !== ':memory:' && !existsSync(path)) {
        throw new DestinationError(
          `no state found at ${path}: the database does not exist`,
          'SLUICE_NO_STATE',
        );
      }
      if (!readOnly && path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      const instance = await instanceOf(api, path, readOnly);
      try {
        const writer = await instance.connect();
        const reader = await instance.connect();
        // Times without an offset are UTC, and a timestamp widened to text is written in UTC.
        for (const conn of [writer, reader]) await conn.run("SET TimeZone = 'UTC'");
        // Each file's commit wrote the WAL into the database again past DuckDB's 16 MB default
        // (a file of 10,000 property records is about 20 MB): the WAL is as durable, and is
        // written in once per GB or when the database closes. 100,000 records, NDJSON: appends
        // 12% faster, merges 18% (docs/speed.md).
        if (!readOnly) {
          await writer.run("SET checkpoint_threshold = '1GB'");
          // What the run may use beside its parse workers (settings.ts).
          await writer.run(`SET memory_limit = '${budget.memoryLimit}'`);
          await writer.run(`SET threads = ${budget.threads}`);
          // A run starts here: the scratch folders of runs killed before are tidied.
          removeDeadScratch();
        }
        return new DuckDbSession(api, path, readOnly, instance, writer, reader);
      } catch (error) {
        instance.closeSync();
        throw error;
      }
    } catch (error) {
      const translated = translateDuckDbError(error, path);
      const locked = (translated as { code?: unknown }).code === 'SLUICE_LOCKED';
      if (!locked || !options.wait) throw translated;
      if (!announced) {
        announced = true;
        options.onWait?.(path);
      }
      await sleep(1000, options.signal);
    }
  }
}

/**
 * Transactions on the write connection. A failed statement ends a DuckDB transaction (it has no
 * savepoints): the writer checks rows before it writes them, so that a value the database would
 * refuse never reaches a statement (see writer.ts).
 */
export class DuckDbConnection implements DialectConnection<DuckDBConnection> {
  readonly leaseHold = 'write' as const;

  constructor(readonly session: DuckDbSession) {}

  transaction<T>(work: (conn: DuckDBConnection, db: Kysely<StateDatabase>) => Promise<T>) {
    const { session } = this;
    if (session.readOnly) {
      throw new SluiceError(`${session.description} is open read-only`, {
        code: 'SLUICE_READ_ONLY',
      });
    }
    return session.db.connection().execute(async (db) => {
      session.changed.clear();
      await sql`BEGIN TRANSACTION`.execute(db);
      try {
        const result = await work(session.writer, db);
        await sql`COMMIT`.execute(db);
        return result;
      } catch (error) {
        await sql`ROLLBACK`.execute(db).catch(() => {});
        throw error;
      }
    });
  }

  migrationTransaction<T>(work: (conn: DuckDBConnection, db: Kysely<StateDatabase>) => Promise<T>) {
    return this.transaction(work);
  }

  /**
   * Beside DuckDB's own lock on the file (one process at a time), a lock file per pipeline, as
   * SQLite's: two runs of a pipeline in one process (two files of `sluice run`) never both run.
   */
  lock(name: string, options: LockOptions): Promise<Lock> {
    return lockBesideFile(this.session.path, name, options);
  }

  async waitAtMost(): Promise<void> {
    // One writing connection: a transaction that began has the database to itself.
  }

  async close(): Promise<void> {
    await this.session.db.destroy();
    // The file fetched ahead first: its check may be under way in the worker.
    await this.session.spools.close();
    await this.session.checks.close();
    this.session.close();
  }
}

/**
 * Kysely over a DuckDB connection, for the state tables: DuckDB speaks PostgreSQL's SQL for what
 * they need (`$1` parameters, ON CONFLICT, RETURNING), so Kysely's PostgreSQL compiler and
 * adapter serve, over a driver of the session's write connection.
 */
class DuckDbKyselyDialect implements KyselyDialect {
  constructor(readonly session: DuckDbSession) {}

  createAdapter() {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new DuckDbDriver(this.session);
  }

  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }

  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
}

class DuckDbDriver implements Driver {
  readonly #held = new WeakMap<DatabaseConnection, () => void>();

  constructor(readonly session: DuckDbSession) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const release = await this.session.acquireWriter();
    const connection = new DuckDbKyselyConnection(this.session.writer);
    this.#held.set(connection, release);
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as DuckDbKyselyConnection).raw('BEGIN TRANSACTION');
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as DuckDbKyselyConnection).raw('COMMIT');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as DuckDbKyselyConnection).raw('ROLLBACK');
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    this.#held.get(connection)?.();
    this.#held.delete(connection);
  }

  async destroy(): Promise<void> {}
}

class DuckDbKyselyConnection implements DatabaseConnection {
  constructor(readonly conn: DuckDBConnection) {}

  async raw(text: string): Promise<void> {
    await this.conn.run(text);
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.conn.run(
      compiled.sql,
      compiled.parameters.map((p) => p as DuckDBValue),
    );
    const rows = (await result.getRowObjectsJS()).map((row) => {
      for (const [name, value] of Object.entries(row)) {
        // Counters come back as numbers, as from the other destinations.
        if (typeof value === 'bigint' && Number.isSafeInteger(Number(value))) {
          row[name] = Number(value);
        }
      }
      return row as R;
    });
    return { rows, numAffectedRows: BigInt(result.rowsChanged) };
  }

  // biome-ignore lint/correctness/useYield: the state statements never stream
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported');
  }
}
