/**
 * PostgreSQL as a destination: `pg` through Kysely's PostgresDialect for state statements; DDL
 * built here; rows go in through COPY FROM STDIN (text format) on the transaction's own client.
 *
 * Every table, the `_sluice_*` state tables included, lives in one schema (default `public`).
 * Names are always quoted and schema-qualified; each connection also starts with `search_path`
 * set to the schema and `TimeZone` to UTC, so ISO timestamps without an offset mean UTC.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  Kysely,
  PostgresDialect as KyselyPostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
} from 'kysely';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { SluiceError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Widening } from '../../schema/plan.js';
import type { Column } from '../../schema/types.js';
import { sleep } from '../../util/sleep.js';
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
import { scrub } from '../errors.js';
import { Loader } from '../loader.js';
import type { StateDatabase } from '../state-tables.js';
import { connectionConfig, redact, tlsModeOf } from './postgres-connection.js';
import {
  castExpression,
  columnTypeOf,
  copyChunks,
  PG_TYPE,
  typeParsers,
} from './postgres-encoding.js';
import { isConnectionError, LOCK_TIMEOUT, translatePostgresError } from './postgres-errors.js';

/** A Kysely pool over one already checked-out client, so state statements run in its transaction. */
function singleClientPool(client: pg.PoolClient): PostgresPool {
  const wrapped = {
    query: client.query.bind(client),
    release() {},
  } as unknown as PostgresPoolClient;
  return {
    connect: async () => wrapped,
    end: async () => {},
  };
}

/** One transaction's connection, and the temporary tables its merges stage rows in. */
interface PgConn {
  client: pg.PoolClient;
  /** Target table -> its temporary staging table, made LIKE the target as it was then. */
  stagings: Map<string, string>;
  stagingsAtSavepoint?: Map<string, string>;
  count: number;
}

/** How often a transaction looks whether it waits on another session's lock. */
const LOCK_WATCH_MS = 3000;

const CAPABILITIES: DestinationCapabilities = {
  maxIdentifierBytes: 63,
  maxColumns: 1600,
  alterColumnType: 'in-place',
  concurrentWriters: 4,
  copyText: true,
  // Against 64 KB, 1 MB blocks appended 100,000 records in 9.2 s instead of 12.5 and merged them in
  // 10.6 instead of 19. Blocks smaller than 1 MB hold less in the parse workers at once (how many
  // may wait ahead mattered little): at 200,000 records, runs taken in turn, appends of 512 KB were
  // as fast or faster (CSV 20.9 s against 20.4-21.6, NDJSON 13.3-13.7 against 13.5-15.6) and peaked
  // 9-15 MB lower run for run (CSV 187-192 MB against 199-205). A merge pays a staging table's
  // statements for each batch: against 1 MB, NDJSON merges took 5% longer with 768 KB blocks and
  // 13% with 512 KB (measured again, four runs of each in turn at 200,000 records: 30.2 s on
  // average with 512 KB against 28.9 with 768, 175-179 MB against 186-193). A CSV merge is bound
  // by its parse workers (csv-parse), which hide those statements: four runs of each in turn at
  // 200,000 records took 35.8 s on average with 512 KB and 35.6 with 768 KB, and peaked at
  // 182-186 MB against 197-200; at 1,000,000 records, two runs of each in turn, 163-196 s and
  // 187-189 MB with 512 KB against 181-202 s and 201-203 MB.
  batchBytes: { appends: 512 << 10, merges: { csv: 512 << 10, json: 768 << 10 } },
};

class PostgresDialect implements Dialect<PgConn> {
  readonly kind = 'postgres' as const;
  readonly capabilities = CAPABILITIES;
  readonly rowLocks = true;
  readonly db: Kysely<StateDatabase>;

  /** Clients checked out now: a signal ends their statements; the watch looks at their waits. */
  readonly #active = new Set<pg.PoolClient>();
  /** Clients whose connections an interrupt closed: released as broken, never reused. */
  readonly #stopped = new WeakSet<pg.PoolClient>();
  readonly #watch: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    readonly schema: string,
    readonly description: string,
    readonly readOnly: boolean,
    private readonly secrets: string[],
    private readonly signal?: AbortSignal,
    private readonly log?: Logger,
  ) {
    // State statements go through clients this dialect hands out, so they are stopped and
    // watched like the rest.
    const tracked: PostgresPool = {
      connect: async () => {
        const client = await this.#connect();
        const release = client.release.bind(client);
        return Object.assign(client, {
          release: (error?: Error | boolean) => {
            this.#active.delete(client);
            release(error || this.#brokenBy(client));
          },
        }) as unknown as PostgresPoolClient;
      },
      end: () => pool.end(),
    };
    this.db = new Kysely<StateDatabase>({
      dialect: new KyselyPostgresDialect({ pool: tracked }),
    }).withSchema(schema);
    this.signal?.addEventListener('abort', () => this.#stopAll(), { once: true });
    this.#watch = log ? this.#watchLocks() : undefined;
  }

  qualified(table: string): string {
    return `${quoteIdent(this.schema)}.${quoteIdent(table)}`;
  }

  /** A pooled client, tracked while checked out; `release` it through the pool as usual. */
  // Not refused once interrupted: the run still records how it ended, on a fresh connection.
  async #connect(): Promise<pg.PoolClient> {
    const client = await this.pool.connect();
    // A backend that dies (terminated, idle timeout) makes its client emit 'error'; without a
    // listener that would end the process. The query in flight rejects too.
    if (client.listenerCount('error') === 0) client.on('error', () => {});
    this.#active.add(client);
    return client;
  }

  /**
   * Interrupted while statements run or wait (on a lock another session holds, say): their
   * connections are closed, which ends the statements and rolls their transactions back.
   */
  #stopAll(): void {
    for (const client of this.#active) {
      this.#stopped.add(client);
      (
        client as unknown as { connection: { stream: { destroy(): void } } }
      ).connection.stream.destroy();
    }
  }

  #brokenBy(client: pg.PoolClient): Error | undefined {
    return this.#stopped.has(client) ? new Error('interrupted') : undefined;
  }

  async transaction<T>(work: (conn: PgConn, db: Kysely<StateDatabase>) => Promise<T>): Promise<T> {
    const client = await this.#connect();
    let broken: Error | undefined;
    try {
      // Read committed whatever the role's or database's default: a table is looked at again,
      // after its lock or beside other files, as committed now, not as the transaction began.
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      const conn: PgConn = { client, stagings: new Map(), count: 0 };
      const db = new Kysely<StateDatabase>({
        dialect: new KyselyPostgresDialect({ pool: singleClientPool(client) }),
      }).withSchema(this.schema);
      try {
        const result = await work(conn, db);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken =
            rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        }
        throw error;
      }
    } catch (error) {
      broken ??= isConnectionError(error) ? (error as Error) : undefined;
      throw error;
    } finally {
      this.#active.delete(client);
      client.release(broken ?? this.#brokenBy(client));
    }
  }

  /**
   * While a statement waits for a lock another session holds, says so (and who holds it),
   * instead of a run that is silent until the lock timeout.
   */
  #watchLocks(): NodeJS.Timeout {
    const said = new Map<number, string>();
    const timer = setInterval(() => {
      const pids = [...this.#active]
        .map((c) => (c as unknown as { processID?: number }).processID)
        .filter((pid): pid is number => typeof pid === 'number');
      if (pids.length === 0) return;
      this.pool
        .query<{ pid: number; blockers: number[] }>(
          'SELECT pid, pg_blocking_pids(pid) AS blockers FROM unnest($1::int[]) AS pid',
          [pids],
        )
        .then(({ rows }) => {
          for (const { pid, blockers } of rows) {
            const now = blockers.join(', ');
            if (blockers.length > 0 && now !== said.get(pid)) {
              this.log?.warn(
                `waiting for a lock held by PostgreSQL session ${now} (lock_timeout ${LOCK_TIMEOUT} unless the URL sets another); Ctrl-C or SIGTERM stops the run`,
              );
            }
            said.set(pid, now);
          }
        })
        .catch(() => {});
    }, LOCK_WATCH_MS);
    timer.unref();
    return timer;
  }

  migrationTransaction<T>(work: (conn: PgConn, db: Kysely<StateDatabase>) => Promise<T>) {
    return this.transaction(async (conn, db) => {
      // Two processes creating the same tables at once would otherwise collide in pg_type.
      await conn.client.query('SELECT pg_advisory_xact_lock($1::bigint)', [
        lockKey(`sluice:ddl:${this.schema}`),
      ]);
      return work(conn, db);
    });
  }

  async describe(table: string, conn?: PgConn): Promise<Column[] | undefined> {
    const on = conn?.client ?? this.pool;
    // The catalogue itself rather than information_schema: a few times faster, and it runs for
    // every table a job prepares.
    const result = await on.query<{ name: string | null; type: string | null }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_catalog.pg_class c
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_catalog.pg_attribute a
         ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
       ORDER BY a.attnum`,
      [this.schema, table],
    );
    if (result.rows.length === 0) return undefined;
    return result.rows
      .filter((r) => r.name !== null)
      .map((r) => ({ name: r.name!, type: columnTypeOf(r.type!) }));
  }

  async stateColumns(table: string, conn: PgConn): Promise<string[] | undefined> {
    return (await this.describe(table, conn))?.map((c) => c.name);
  }

  async createTable(conn: PgConn, table: string, columns: readonly BoundColumn[]): Promise<void> {
    const defs = columns.map((c) => `${quoteIdent(c.name)} ${PG_TYPE[c.type]}`).join(', ');
    await conn.client.query(`CREATE TABLE ${this.qualified(table)} (${defs})`);
  }

  async addColumns(conn: PgConn, table: string, columns: readonly BoundColumn[]): Promise<void> {
    const alters = columns.map(
      (c) => `ADD COLUMN IF NOT EXISTS ${quoteIdent(c.name)} ${PG_TYPE[c.type]}`,
    );
    await conn.client.query(`ALTER TABLE ${this.qualified(table)} ${alters.join(', ')}`);
    await this.#dropStaging(conn, table);
  }

  async widenColumn(conn: PgConn, table: string, change: Widening): Promise<void> {
    const col = quoteIdent(change.name);
    await conn.client.query(
      `ALTER TABLE ${this.qualified(table)} ALTER COLUMN ${col} TYPE ${PG_TYPE[change.to]} USING ${castExpression(col, change.from, change.to)}`,
    );
    await this.#dropStaging(conn, table);
  }

  /** The staging table was made LIKE the old shape of `table`: make a new one on the next merge. */
  async #dropStaging(conn: PgConn, table: string): Promise<void> {
    const staging = conn.stagings.get(table);
    if (staging === undefined) return;
    await conn.client.query(`DROP TABLE IF EXISTS ${staging}`);
    conn.stagings.delete(table);
  }

  async createIndex(conn: PgConn, table: string, index: IndexDef): Promise<void> {
    await conn.client.query(
      `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${quoteIdent(index.name)} ON ${this.qualified(table)} (${index.columns.map(quoteIdent).join(', ')})`,
    );
  }

  async lockTable(conn: PgConn, table: string): Promise<void> {
    // Conflicts with writers (who hold ROW EXCLUSIVE until they commit) and with itself, not with
    // readers: an analyst's query goes on until a change is really made.
    await conn.client.query(`LOCK TABLE ${this.qualified(table)} IN SHARE ROW EXCLUSIVE MODE`);
  }

  async insert(
    conn: PgConn,
    table: string,
    columns: readonly BoundColumn[],
    rows: TableRows,
    mode: 'append' | 'merge',
    key: readonly string[],
  ): Promise<void> {
    const target = this.qualified(table);
    if (mode === 'append') {
      await this.#copy(conn, target, columns, rows);
      return;
    }
    if (key.length === 0) {
      throw new SluiceError(`cannot merge into ${table}: the table has no key`, {
        code: 'SLUICE_DESTINATION',
      });
    }
    let staging = conn.stagings.get(table);
    if (staging === undefined) {
      staging = quoteIdent(`_sluice_stage_${++conn.count}`);
      await conn.client.query(
        `CREATE TEMP TABLE ${staging} (LIKE ${target} INCLUDING DEFAULTS) ON COMMIT DROP`,
      );
      await conn.client.query(`ALTER TABLE ${staging} ADD COLUMN "__sluice_pos" bigserial`);
      conn.stagings.set(table, staging);
    }
    await this.#copy(conn, staging, columns, rows);
    const list = columns.map((c) => quoteIdent(c.name)).join(', ');
    const keyList = key.map(quoteIdent).join(', ');
    const keys = new Set(key);
    const updates = columns
      .filter((c) => !keys.has(c.name))
      .map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`);
    const action = updates.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${updates.join(', ')}`;
    // The last row of the batch wins when a key repeats: DISTINCT ON keeps the first row of
    // each key in the order given, and the order is by key then position, newest first.
    await conn.client.query(
      `INSERT INTO ${target} (${list}) SELECT DISTINCT ON (${keyList}) ${list} FROM ${staging} ` +
        `ORDER BY ${keyList}, "__sluice_pos" DESC ON CONFLICT (${keyList}) ${action}`,
    );
    await conn.client.query(`TRUNCATE ${staging}`);
  }

  async #copy(
    conn: PgConn,
    target: string,
    columns: readonly BoundColumn[],
    rows: TableRows,
  ): Promise<void> {
    if (rows.count === 0) return;
    const { text } = rows;
    const list = (text?.columns ?? columns.map((c) => c.name)).map(quoteIdent).join(', ');
    const stream = conn.client.query(copyStreams.from(`COPY ${target} (${list}) FROM STDIN`));
    await pipeline(
      text ? Readable.from([text.bytes]) : Readable.from(copyChunks(rows, columns)),
      stream,
    );
  }

  async savepoint(conn: PgConn, step: 'begin' | 'release' | 'rollback'): Promise<void> {
    if (step === 'begin') {
      await conn.client.query('SAVEPOINT sluice_batch');
      conn.stagingsAtSavepoint = new Map(conn.stagings);
    } else if (step === 'release') await conn.client.query('RELEASE SAVEPOINT sluice_batch');
    else {
      await conn.client.query('ROLLBACK TO SAVEPOINT sluice_batch');
      await conn.client.query('RELEASE SAVEPOINT sluice_batch');
      // A merge's temporary table made inside the savepoint is gone with it.
      if (conn.stagingsAtSavepoint) conn.stagings = conn.stagingsAtSavepoint;
    }
  }

  async deleteWhereIn(
    conn: PgConn,
    table: string,
    column: string,
    values: readonly (string | number)[],
  ): Promise<void> {
    // `= ANY($1)` lets PostgreSQL type the array as the column's, so the index on it is used.
    await conn.client.query(
      `DELETE FROM ${this.qualified(table)} WHERE ${quoteIdent(column)} = ANY($1)`,
      [[...values]],
    );
  }

  async swap(
    conn: PgConn,
    staging: string,
    target: string,
    indexes: readonly IndexRename[],
  ): Promise<void> {
    // Two pipelines replacing one table: one swap after the other, never interleaved (two
    // renames to one name race in the catalogue).
    await conn.client.query('SELECT pg_advisory_xact_lock($1::bigint)', [
      lockKey(`sluice:swap:${this.schema}:${target}`),
    ]);
    await conn.client.query(`DROP TABLE IF EXISTS ${this.qualified(target)}`);
    await conn.client.query(
      `ALTER TABLE ${this.qualified(staging)} RENAME TO ${quoteIdent(target)}`,
    );
    for (const index of indexes) {
      await conn.client.query(
        `ALTER INDEX IF EXISTS ${this.qualified(index.from)} RENAME TO ${quoteIdent(index.name)}`,
      );
    }
  }

  async clear(conn: PgConn, table: string): Promise<void> {
    await conn.client.query(`DELETE FROM ${this.qualified(table)}`);
  }

  async drop(conn: PgConn, table: string): Promise<void> {
    await conn.client.query(`DROP TABLE IF EXISTS ${this.qualified(table)}`);
  }

  async indexes(table: string, conn?: PgConn): Promise<IndexDef[]> {
    const on = conn?.client ?? this.pool;
    const result = await on.query<{ name: string; unique: boolean; columns: string[] }>(
      `SELECT i.relname AS name, ix.indisunique AS unique,
              array_agg(a.attname::text ORDER BY k.ord) AS columns
       FROM pg_catalog.pg_class t
       JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
       JOIN pg_catalog.pg_index ix ON ix.indrelid = t.oid
       JOIN pg_catalog.pg_class i ON i.oid = ix.indexrelid
       CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord)
       JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
       WHERE n.nspname = $1 AND t.relname = $2 AND NOT ix.indisprimary
       GROUP BY i.relname, ix.indisunique`,
      [this.schema, table],
    );
    return result.rows;
  }

  async readPairs(
    table: string,
    columns: [string, string],
    filter?: PairFilter,
  ): Promise<[unknown, unknown][]> {
    const { text, values } = pairsStatement(this.qualified(table), columns, filter, (i) => `$${i}`);
    const client = await this.#connect();
    try {
      const result = await client.query({ text, values, rowMode: 'array' });
      return result.rows as [unknown, unknown][];
    } finally {
      this.#active.delete(client);
      client.release(this.#brokenBy(client));
    }
  }

  /**
   * A session-level advisory lock on a connection of its own, held for the run: the server
   * releases it when that session ends, however the process ends. Waiting polls, so that a
   * signal stops the wait at once.
   */
  async lock(name: string, options: LockOptions): Promise<Lock> {
    const key = lockKey(`sluice:lock:${this.schema}:${name}`);
    const where = `advisory lock ${key} on ${this.description}`;
    const client = await this.pool.connect();
    client.on('error', () => {});
    let announced = false;
    try {
      for (;;) {
        const result = await client.query<{ locked: boolean }>(
          'SELECT pg_try_advisory_lock($1::bigint) AS locked',
          [key],
        );
        if (result.rows[0]?.locked) break;
        if (!options.wait) {
          throw new SluiceError(`the ${where} is held by another run`, {
            code: 'SLUICE_LOCKED',
          });
        }
        if (!announced) {
          announced = true;
          options.onWait?.(where);
        }
        await sleep(options.pollMs ?? 1000, options.signal);
      }
    } catch (error) {
      client.release(isConnectionError(error) ? (error as Error) : undefined);
      throw error;
    }
    let released = false;
    return {
      where,
      release: async () => {
        if (released) return;
        released = true;
        try {
          await client.query('SELECT pg_advisory_unlock($1::bigint)', [key]);
          client.release();
        } catch (error) {
          // The session ends with the client, and the lock with the session.
          client.release(error instanceof Error ? error : true);
        }
      },
    };
  }

  async waitAtMost(conn: PgConn, ms: number): Promise<void> {
    await conn.client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(ms))}`);
  }

  translate(error: unknown): unknown {
    return translatePostgresError(scrub(error, this.secrets), this.description);
  }

  async close(): Promise<void> {
    clearInterval(this.#watch);
    await this.db.destroy();
  }
}

/** A signed 64-bit advisory lock key for `name`, as decimal text. */
function lockKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}

/**
 * Connects to PostgreSQL at `url` and returns the destination: writable, the schema (default
 * `public`) is created when missing; read-only, nothing is created and every transaction is
 * read-only. Connection problems surface here, as one clear DestinationError without password.
 */
export async function openPostgresDestination(
  url: string,
  options: { schema?: string; readOnly?: boolean; signal?: AbortSignal; logger?: Logger } = {},
): Promise<Destination> {
  const schema = options.schema ?? 'public';
  const readOnly = options.readOnly === true;
  const { description: where, secrets } = redact(url);
  const description = `${where} (schema ${schema})`;
  const config: pg.PoolConfig = {
    ...connectionConfig(url, schema, readOnly),
    types: typeParsers,
    connectionTimeoutMillis: 15_000,
    max: CAPABILITIES.concurrentWriters + 2,
  };
  let pool = new pg.Pool(config);
  // An idle client that loses its connection emits here; the next query reports the problem.
  pool.on('error', () => {});
  try {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      // sslmode=prefer: TLS where the server has it, else a plain connection (as libpq).
      if (tlsModeOf(url) !== 'prefer' || !/does not support SSL/i.test(String(error))) throw error;
      await pool.end().catch(() => {});
      pool = new pg.Pool({ ...config, ssl: false });
      pool.on('error', () => {});
      client = await pool.connect();
    }
    try {
      if (!readOnly) {
        const exists = await client.query(
          'SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1',
          [schema],
        );
        if (exists.rows.length === 0) {
          await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
        }
      }
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end().catch(() => {});
    throw translatePostgresError(scrub(error, secrets), description);
  }
  return new Loader(
    new PostgresDialect(
      pool,
      schema,
      description,
      readOnly,
      secrets,
      options.signal,
      options.logger,
    ),
  );
}
