import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import {
  Kysely,
  PostgresDialect as KyselyPostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
} from 'kysely';
import pg from 'pg';
import { SluiceError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { sleep } from '../../util/sleep.js';
import type { Lock, LockOptions } from '../destination.js';
import { type DialectConnection, quoteIdent } from '../dialect.js';
import { scrub } from '../errors.js';
import type { StateDatabase } from '../state-tables.js';
import { isConnectionError, LOCK_TIMEOUT, translatePostgresError } from './errors.js';
import { typeParsers } from './types.js';
import { connectionConfig, redact, tlsModeOf } from './url.js';

/** One transaction's connection, and the temporary tables its merges stage rows in. */
export interface PgConn {
  client: pg.PoolClient;
  /** Target table -> its temporary staging table, made LIKE the target as it was then. */
  stagings: Map<string, string>;
  stagingsAtSavepoint?: Map<string, string>;
  count: number;
}

/** How often a transaction looks whether it waits on another session's lock. */
const LOCK_WATCH_MS = 3000;

/**
 * The pool of one PostgreSQL destination, shared by the dialect's parts. Every table, the state
 * tables included, lives in one schema; names are always quoted and schema-qualified.
 */
export class PostgresSession {
  /** Clients checked out now: a signal ends their statements; the watch looks at their waits. */
  readonly #active = new Set<pg.PoolClient>();
  /** Clients whose connections an interrupt closed: released as broken, never reused. */
  readonly #stopped = new WeakSet<pg.PoolClient>();
  /** State statements go through clients this session hands out, stopped and watched alike. */
  readonly db: Kysely<StateDatabase>;
  #ended: Promise<void> | undefined;

  constructor(
    readonly pool: pg.Pool,
    readonly schema: string,
    readonly description: string,
    readonly readOnly: boolean,
    readonly secrets: string[],
    readonly signal?: AbortSignal,
    readonly log?: Logger,
  ) {
    const tracked: PostgresPool = {
      connect: async () => {
        const client = await this.connect();
        const release = client.release.bind(client);
        return Object.assign(client, {
          release: (error?: Error | boolean) => {
            this.#active.delete(client);
            release(error || this.brokenBy(client));
          },
        }) as unknown as PostgresPoolClient;
      },
      end: () => this.end(),
    };
    this.db = new Kysely<StateDatabase>({
      dialect: new KyselyPostgresDialect({ pool: tracked }),
    }).withSchema(schema);
    signal?.addEventListener('abort', () => this.#stopAll(), { once: true });
  }

  /**
   * Ends the pool, once, whoever asks first. Kysely ends it only when a state statement went
   * through it; a look that found no state tables (`status`) never sends one, and an idle
   * client left in the pool kept the process alive until pg's idle timeout (10 s).
   */
  end(): Promise<void> {
    this.#ended ??= endPool(this.pool);
    return this.#ended;
  }

  qualified(table: string): string {
    return `${quoteIdent(this.schema)}.${quoteIdent(table)}`;
  }

  /** A pooled client, tracked while checked out; release it with `release`. */
  // Not refused once interrupted: the run still records how it ended, on a fresh connection.
  async connect(): Promise<pg.PoolClient> {
    const client = await this.pool.connect();
    // A backend that dies (terminated, idle timeout) makes its client emit 'error'; without a
    // listener that would end the process. The query in flight rejects too.
    if (client.listenerCount('error') === 0) client.on('error', () => {});
    this.#active.add(client);
    return client;
  }

  release(client: pg.PoolClient, broken?: Error): void {
    this.#active.delete(client);
    client.release(broken ?? this.brokenBy(client));
  }

  brokenBy(client: pg.PoolClient): Error | undefined {
    return this.#stopped.has(client) ? new Error('interrupted') : undefined;
  }

  /** Backend process ids of the clients checked out now. */
  activePids(): number[] {
    return [...this.#active]
      .map((c) => (c as unknown as { processID?: number }).processID)
      .filter((pid): pid is number => typeof pid === 'number');
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
}

/**
 * Connects to PostgreSQL at `url`: writable, the schema (default `public`) is created when
 * missing; read-only, nothing is created and every transaction is read-only. Connection
 * problems surface here, as one clear DestinationError without password.
 */
export async function openPostgres(
  url: string,
  options: {
    schema?: string;
    readOnly?: boolean;
    signal?: AbortSignal;
    logger?: Logger;
    /** Connections in the pool: the writers', the run's lock's, one for state statements. */
    connections: number;
  },
): Promise<PostgresSession> {
  const schema = options.schema ?? 'public';
  const readOnly = options.readOnly === true;
  const { description: where, secrets } = redact(url);
  const description = `${where} (schema ${schema})`;
  const config: pg.PoolConfig = {
    ...connectionConfig(url, schema, readOnly),
    types: typeParsers,
    connectionTimeoutMillis: 15_000,
    max: options.connections,
  };
  let pool = newPool(config);
  try {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      // sslmode=prefer: TLS where the server has it, else a plain connection (as libpq).
      if (tlsModeOf(url) !== 'prefer' || !/does not support SSL/i.test(String(error))) throw error;
      await endPool(pool).catch(() => {});
      pool = newPool({ ...config, ssl: false });
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
    await endPool(pool).catch(() => {});
    throw translatePostgresError(scrub(error, secrets), description);
  }
  return new PostgresSession(
    pool,
    schema,
    description,
    readOnly,
    secrets,
    options.signal,
    options.logger,
  );
}

/** The sockets of each pool's connections not closed yet (see endPool). */
const openSockets = new WeakMap<pg.Pool, Set<Socket>>();

function newPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  // An idle client that loses its connection emits here; the next query reports the problem.
  pool.on('error', () => {});
  const sockets = new Set<Socket>();
  openSockets.set(pool, sockets);
  pool.on('connect', (client) => {
    const socket = (client as unknown as { connection: { stream: Socket } }).connection.stream;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return pool;
}

/**
 * Ends a pool and waits until its connections' sockets are closed: `pool.end()` asks its clients
 * to end without waiting for them, so a destination closed would still hold sockets open.
 */
async function endPool(pool: pg.Pool): Promise<void> {
  await pool.end();
  const closing = [...(openSockets.get(pool) ?? [])];
  // 'close' comes after an 'error' too (which `events.once` would throw).
  await Promise.all(closing.map((socket) => new Promise((closed) => socket.once('close', closed))));
}

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

export class PostgresConnection implements DialectConnection<PgConn> {
  readonly leaseHold = 'share' as const;
  readonly #watch: NodeJS.Timeout | undefined;

  constructor(readonly session: PostgresSession) {
    this.#watch = session.log ? this.#watchLocks(session.log) : undefined;
  }

  async transaction<T>(work: (conn: PgConn, db: Kysely<StateDatabase>) => Promise<T>): Promise<T> {
    const { session } = this;
    const client = await session.connect();
    let broken: Error | undefined;
    try {
      // Read committed whatever the role's or database's default: a table is looked at again,
      // after its lock or beside other files, as committed now, not as the transaction began.
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      const conn: PgConn = { client, stagings: new Map(), count: 0 };
      const db = new Kysely<StateDatabase>({
        dialect: new KyselyPostgresDialect({ pool: singleClientPool(client) }),
      }).withSchema(session.schema);
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
      session.release(client, broken);
    }
  }

  migrationTransaction<T>(work: (conn: PgConn, db: Kysely<StateDatabase>) => Promise<T>) {
    return this.transaction(async (conn, db) => {
      // Two processes creating the same tables at once would otherwise collide in pg_type.
      await conn.client.query('SELECT pg_advisory_xact_lock($1::bigint)', [
        lockKey(`sluice:ddl:${this.session.schema}`),
      ]);
      return work(conn, db);
    });
  }

  /**
   * While a statement waits for a lock another session holds, says so (and who holds it),
   * instead of a run that is silent until the lock timeout.
   */
  #watchLocks(log: Logger): NodeJS.Timeout {
    const said = new Map<number, string>();
    const timer = setInterval(() => {
      const pids = this.session.activePids();
      if (pids.length === 0) return;
      this.session.pool
        .query<{ pid: number; blockers: number[] }>(
          'SELECT pid, pg_blocking_pids(pid) AS blockers FROM unnest($1::int[]) AS pid',
          [pids],
        )
        .then(({ rows }) => {
          for (const { pid, blockers } of rows) {
            const now = blockers.join(', ');
            if (blockers.length > 0 && now !== said.get(pid)) {
              log.warn(
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

  /**
   * A session-level advisory lock on a connection of its own, held for the run: the server
   * releases it when that session ends, however the process ends. Waiting polls, so that a
   * signal stops the wait at once.
   */
  async lock(name: string, options: LockOptions): Promise<Lock> {
    const { session } = this;
    const key = lockKey(`sluice:lock:${session.schema}:${name}`);
    const where = `advisory lock ${key} on ${session.description}`;
    const client = await session.pool.connect();
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

  async close(): Promise<void> {
    clearInterval(this.#watch);
    await this.session.db.destroy();
    await this.session.end();
  }
}

/** A signed 64-bit advisory lock key for `name`, as decimal text. */
export function lockKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}
