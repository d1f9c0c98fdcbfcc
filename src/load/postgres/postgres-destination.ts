/**
 * PostgreSQL as a destination: `pg` through Kysely's PostgresDialect for DDL, state tables and
 * merges; rows go in through COPY FROM STDIN (text format) on the transaction's own client.
 *
 * Every table, the `_sluice_*` state tables included, lives in one schema (default `public`),
 * created when missing. Names are always quoted and schema-qualified in the SQL built here; each
 * connection also starts with `search_path` set to the schema (and `TimeZone` to UTC, so ISO
 * timestamps without an offset mean UTC), and the Kysely instances use `withSchema`.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { SluiceError } from '../../errors.js';
import { widen } from '../../records/infer.js';
import type { Row, RowValue } from '../../records/types.js';
import type {
  Column,
  ColumnType,
  Destination,
  DestinationCapabilities,
  LoadTransaction,
  StateDatabase,
  TableSpec,
} from '../destination.js';
import { keyIndexName, quoteIdent } from '../schema.js';

const INT8_OID = 20;
const JSON_OID = 114;
const JSONB_OID = 3802;

/** bigint columns come back as JS numbers when they fit (state counters, counts), else as text. */
function parseInt8(value: string): number | string {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}

const asText = (value: string) => value;

/**
 * Type parsers for this destination's pool only; the global `pg.types` is left alone. json and
 * jsonb come back as JSON text, as they went in (and as SQLite gives them back).
 */
const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (format !== 'binary') {
      if (oid === INT8_OID) return parseInt8;
      if (oid === JSON_OID || oid === JSONB_OID) return asText;
    }
    // biome-ignore lint/suspicious/noExplicitAny: pg's overloads do not accept a union format
    return pg.types.getTypeParser(oid, format as any);
  },
} as pg.CustomTypesConfig;

export const PG_TYPE: Record<ColumnType, string> = {
  boolean: 'boolean',
  integer: 'bigint',
  real: 'double precision',
  timestamp: 'timestamptz',
  json: 'jsonb',
  text: 'text',
};

/** Maps a PostgreSQL type (as `information_schema.columns.data_type` spells it) to a ColumnType. */
function columnTypeOf(dataType: string): ColumnType {
  switch (dataType) {
    case 'boolean':
      return 'boolean';
    case 'bigint':
    case 'integer':
    case 'smallint':
      return 'integer';
    case 'double precision':
    case 'real':
    case 'numeric':
      return 'real';
    case 'timestamp with time zone':
    case 'timestamp without time zone':
    case 'date':
      return 'timestamp';
    case 'json':
    case 'jsonb':
      return 'json';
    default:
      return 'text';
  }
}

/** The USING expression that converts column `col` from `from` to `to`. */
function castExpression(col: string, from: ColumnType, to: ColumnType): string {
  if (to === 'text') {
    if (from === 'timestamp') {
      return `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
    }
    if (from === 'boolean') return `CASE WHEN ${col} THEN 'true' WHEN NOT ${col} THEN 'false' END`;
    return `${col}::text`;
  }
  if (from === 'boolean') return `${col}::integer::${PG_TYPE[to]}`;
  return `${col}::${PG_TYPE[to]}`;
}

// COPY text format: backslash, newline, carriage return and tab are escaped; `\N` is null.
const NEEDS_ESCAPE = /[\\\n\r\t]/;
const ESCAPES = /[\\\n\r\t]/g;
const ESCAPE_OF: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeCopyText(text: string): string {
  return NEEDS_ESCAPE.test(text) ? text.replace(ESCAPES, (c) => ESCAPE_OF[c]!) : text;
}

/** One value as COPY text for a column of `type`. */
function copyValue(value: RowValue | undefined, type: ColumnType): string {
  if (value === null || value === undefined) return '\\N';
  switch (typeof value) {
    case 'string':
      return escapeCopyText(value);
    case 'boolean':
      if (type === 'boolean') return value ? 't' : 'f';
      if (type === 'integer' || type === 'real') return value ? '1' : '0';
      return value ? 'true' : 'false';
    case 'number':
      if (type === 'boolean') return value === 0 ? 'f' : 't';
      if (type === 'json' && !Number.isFinite(value)) return '\\N';
      return String(value);
    default:
      return escapeCopyText(JSON.stringify(value));
  }
}

const CHUNK_CHARS = 256 * 1024;

/** COPY text lines for `rows`, in chunks of about 256 kB. */
function* copyChunks(rows: Row[], columns: Column[]): Generator<string> {
  let chunk = '';
  for (const row of rows) {
    let line = '';
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i]!;
      if (i > 0) line += '\t';
      line += copyValue(row[column.name], column.type);
    }
    chunk += line + '\n';
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk.length > 0) yield chunk;
}

/** The URL without its password (user info and `password=` query parameter). */
function redact(url: string): { description: string; secrets: string[] } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SluiceError(
      'invalid PostgreSQL URL (expected postgresql://user@host:port/database)',
      {
        code: 'SLUICE_USAGE',
      },
    );
  }
  const secrets: string[] = [];
  if (parsed.password) {
    secrets.push(parsed.password);
    try {
      secrets.push(decodeURIComponent(parsed.password));
    } catch {
      // keep the encoded form only
    }
    parsed.password = '';
  }
  const queryPassword = parsed.searchParams.get('password');
  if (queryPassword) {
    secrets.push(queryPassword);
    parsed.searchParams.delete('password');
  }
  return { description: parsed.toString(), secrets: secrets.filter((s) => s.length > 0) };
}

/** A Kysely pool over one already checked-out client, so tx.db runs inside the transaction. */
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

interface TableCache {
  columns: Column[];
  /** Key columns whose unique index is known to exist in this transaction. */
  keyIndex?: string;
  /** The temp staging table for merges, created LIKE the table as it was then. */
  staging?: string;
}

class PostgresLoadTransaction implements LoadTransaction {
  readonly db: Kysely<StateDatabase>;
  private readonly tables = new Map<string, TableCache>();
  private queue: Promise<unknown> = Promise.resolve();
  private stagingCount = 0;

  constructor(
    readonly client: pg.PoolClient,
    private readonly owner: PostgresDestination,
  ) {
    this.db = new Kysely<StateDatabase>({
      dialect: new PostgresDialect({ pool: singleClientPool(client) }),
    }).withSchema(owner.schema);
  }

  /** Runs `step` after every earlier step of this transaction (one client, one statement at a time). */
  private serial<T>(step: () => Promise<T>): Promise<T> {
    const next = this.queue.then(step, step);
    this.queue = next.catch(() => {});
    return next;
  }

  forget(table: string): void {
    this.tables.delete(table);
  }

  writeRows(table: TableSpec, rows: Row[], mode: 'append' | 'merge'): Promise<void> {
    return this.serial(async () => {
      const cache = await this.ensureTable(table);
      if (rows.length === 0 && mode === 'append') return;
      const columns = table.columns.map((c) => ({
        name: c.name,
        type: cache.columns.find((e) => e.name === c.name)?.type ?? c.type,
      }));
      const target = this.owner.qualified(table.name);
      if (mode === 'append') {
        await this.copy(target, columns, rows);
        return;
      }
      if (table.key.length === 0) {
        throw new SluiceError(`cannot merge into ${table.name}: the table has no key`, {
          code: 'SLUICE_DESTINATION',
        });
      }
      for (const key of table.key) {
        if (!columns.some((c) => c.name === key)) {
          throw new SluiceError(
            `cannot merge into ${table.name}: key column ${key} is not among its columns`,
            {
              code: 'SLUICE_DESTINATION',
            },
          );
        }
      }
      const keyList = table.key.map(quoteIdent).join(', ');
      if (cache.keyIndex !== keyList) {
        // Look first: CREATE INDEX IF NOT EXISTS takes a SHARE lock even when the index is there,
        // which deadlocks two transactions merging into the same table at once.
        const indexName = keyIndexName(table.name);
        const found = await this.client.query<{ present: boolean }>(
          'SELECT to_regclass($1) IS NOT NULL AS present',
          [this.owner.qualified(indexName)],
        );
        if (!found.rows[0]?.present) {
          await this.client.query(
            `CREATE UNIQUE INDEX IF NOT EXISTS ${quoteIdent(indexName)} ON ${target} (${keyList})`,
          );
        }
        cache.keyIndex = keyList;
      }
      if (rows.length === 0) return;
      if (cache.staging === undefined) {
        const staging = quoteIdent(`_sluice_stage_${++this.stagingCount}`);
        await this.client.query(
          `CREATE TEMP TABLE ${staging} (LIKE ${target} INCLUDING DEFAULTS) ON COMMIT DROP`,
        );
        await this.client.query(`ALTER TABLE ${staging} ADD COLUMN "__sluice_pos" bigserial`);
        cache.staging = staging;
      }
      const staging = cache.staging;
      await this.copy(staging, columns, rows);
      const list = columns.map((c) => quoteIdent(c.name)).join(', ');
      const keys = new Set(table.key);
      const updates = columns
        .filter((c) => !keys.has(c.name))
        .map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`);
      const action = updates.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${updates.join(', ')}`;
      // The last row of the batch wins when a key repeats: DISTINCT ON keeps the first row of
      // each key in the order given, and the order is by key then position, newest first.
      await this.client.query(
        `INSERT INTO ${target} (${list}) SELECT DISTINCT ON (${keyList}) ${list} FROM ${staging} ` +
          `ORDER BY ${keyList}, "__sluice_pos" DESC ON CONFLICT (${keyList}) ${action}`,
      );
      await this.client.query(`TRUNCATE ${staging}`);
    });
  }

  deleteWhereIn(
    table: string,
    column: string,
    values: readonly (string | number)[],
  ): Promise<void> {
    return this.serial(async () => {
      if (values.length === 0) return;
      if (!(await this.owner.tableExistsOn(this.client, table))) return;
      // `= ANY($1)` lets PostgreSQL type the array as the column's, so an index on it is used.
      await this.client.query(
        `DELETE FROM ${this.owner.qualified(table)} WHERE ${quoteIdent(column)} = ANY($1)`,
        [[...values]],
      );
    });
  }

  private async copy(target: string, columns: Column[], rows: Row[]): Promise<void> {
    if (rows.length === 0) return;
    const list = columns.map((c) => quoteIdent(c.name)).join(', ');
    const stream = this.client.query(copyStreams.from(`COPY ${target} (${list}) FROM STDIN`));
    await pipeline(Readable.from(copyChunks(rows, columns)), stream);
  }

  /** Creates the table, adds missing columns and widens narrower ones. */
  private async ensureTable(table: TableSpec): Promise<TableCache> {
    let cache = this.tables.get(table.name);
    if (cache === undefined) {
      const columns = await this.owner.describeOn(this.client, table.name);
      if (columns === undefined) {
        if (table.columns.length === 0) {
          throw new SluiceError(`cannot create table ${table.name} without columns`, {
            code: 'SLUICE_DESTINATION',
          });
        }
        const defs = table.columns
          .map((c) => `${quoteIdent(c.name)} ${PG_TYPE[c.type]}`)
          .join(', ');
        await this.client.query(`CREATE TABLE ${this.owner.qualified(table.name)} (${defs})`);
        cache = { columns: table.columns.map((c) => ({ ...c })) };
        this.tables.set(table.name, cache);
        return cache;
      }
      cache = { columns };
      this.tables.set(table.name, cache);
    }
    const alters: string[] = [];
    for (const wanted of table.columns) {
      const existing = cache.columns.find((c) => c.name === wanted.name);
      const col = quoteIdent(wanted.name);
      if (existing === undefined) {
        alters.push(`ADD COLUMN ${col} ${PG_TYPE[wanted.type]}`);
        cache.columns.push({ ...wanted });
        continue;
      }
      const widened = widen(existing.type, wanted.type);
      if (widened !== existing.type) {
        alters.push(
          `ALTER COLUMN ${col} TYPE ${PG_TYPE[widened]} USING ${castExpression(col, existing.type, widened)}`,
        );
        existing.type = widened;
      }
    }
    if (alters.length > 0) {
      await this.client.query(
        `ALTER TABLE ${this.owner.qualified(table.name)} ${alters.join(', ')}`,
      );
      if (cache.staging !== undefined) {
        // The staging table was made LIKE the old shape; make a new one on the next merge.
        await this.client.query(`DROP TABLE IF EXISTS ${cache.staging}`);
        cache.staging = undefined;
      }
    }
    return cache;
  }
}

class PostgresDestination implements Destination {
  readonly kind = 'postgres' as const;
  readonly capabilities: DestinationCapabilities = {
    transactionalDdl: true,
    bulkLoad: true,
    alterColumnType: true,
  };
  readonly db: Kysely<StateDatabase>;

  constructor(
    private readonly pool: pg.Pool,
    readonly schema: string,
    readonly description: string,
    private readonly secrets: string[],
  ) {
    this.db = new Kysely<StateDatabase>({ dialect: new PostgresDialect({ pool }) }).withSchema(
      schema,
    );
  }

  qualified(table: string): string {
    return `${quoteIdent(this.schema)}.${quoteIdent(table)}`;
  }

  /** Runs `work`, making sure no error it throws carries the password. */
  async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw scrub(error, this.secrets);
    }
  }

  async describeOn(client: pg.PoolClient | pg.Pool, name: string): Promise<Column[] | undefined> {
    const result = await client.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
      [this.schema, name],
    );
    if (result.rows.length === 0) {
      return (await this.tableExistsOn(client, name)) ? [] : undefined;
    }
    return result.rows.map((r) => ({ name: r.column_name, type: columnTypeOf(r.data_type) }));
  }

  async tableExistsOn(client: pg.PoolClient | pg.Pool, name: string): Promise<boolean> {
    const result = await client.query(
      `SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`,
      [this.schema, name],
    );
    return result.rows.length > 0;
  }

  ensureStateTables(): Promise<void> {
    const s = quoteIdent(this.schema);
    const statements = [
      `CREATE TABLE IF NOT EXISTS ${s}."_sluice_runs" (
        run_id text PRIMARY KEY,
        pipeline text NOT NULL,
        started_at text NOT NULL,
        finished_at text,
        status text NOT NULL,
        summary text)`,
      `CREATE TABLE IF NOT EXISTS ${s}."_sluice_downloads" (
        attempt_id text PRIMARY KEY,
        pipeline text NOT NULL,
        job text NOT NULL,
        spec_hash text NOT NULL,
        api text NOT NULL,
        download_id text,
        status text NOT NULL,
        target_table text NOT NULL,
        load_table text NOT NULL,
        num_found bigint,
        num_records bigint,
        requested_at text NOT NULL,
        started_at text,
        updated_at text NOT NULL,
        finished_at text,
        run_id text NOT NULL,
        message text)`,
      `CREATE TABLE IF NOT EXISTS ${s}."_sluice_files" (
        download_id text NOT NULL,
        file_index bigint NOT NULL,
        file_name text NOT NULL,
        table_name text NOT NULL,
        rows_loaded bigint NOT NULL,
        rows_rejected bigint NOT NULL,
        bytes bigint NOT NULL,
        loaded_at text NOT NULL,
        run_id text NOT NULL,
        UNIQUE (download_id, file_index))`,
      `CREATE TABLE IF NOT EXISTS ${s}."_sluice_rejects" (
        download_id text NOT NULL,
        job text NOT NULL,
        file_name text NOT NULL,
        line bigint NOT NULL,
        raw text NOT NULL,
        reason text NOT NULL,
        created_at text NOT NULL)`,
      `CREATE INDEX IF NOT EXISTS "_sluice_downloads__pipeline" ON ${s}."_sluice_downloads" (pipeline, job)`,
      `CREATE INDEX IF NOT EXISTS "_sluice_rejects__download" ON ${s}."_sluice_rejects" (download_id)`,
    ];
    return this.guard(() =>
      this.withClient(async (client) => {
        await client.query('BEGIN');
        try {
          // Two processes creating the same tables at once would otherwise collide in pg_type.
          await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [
            lockKey(`sluice:ddl:${this.schema}`),
          ]);
          for (const statement of statements) await client.query(statement);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        }
      }),
    );
  }

  describeTable(name: string): Promise<Column[] | undefined> {
    return this.guard(() => this.describeOn(this.pool, name));
  }

  tableExists(name: string): Promise<boolean> {
    return this.guard(() => this.tableExistsOn(this.pool, name));
  }

  transaction<T>(work: (tx: LoadTransaction) => Promise<T>): Promise<T> {
    return this.guard(async () => {
      const client = await this.pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const tx = new PostgresLoadTransaction(client, this);
        try {
          const result = await work(tx);
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
      } finally {
        client.release(broken);
      }
    });
  }

  swapTable(staging: string, target: string, tx: LoadTransaction): Promise<void> {
    if (!(tx instanceof PostgresLoadTransaction)) {
      return Promise.reject(
        new SluiceError('swapTable needs a transaction of the same destination', {
          code: 'SLUICE_DESTINATION',
        }),
      );
    }
    return this.guard(async () => {
      const { client } = tx;
      await client.query(`DROP TABLE IF EXISTS ${this.qualified(target)}`);
      await client.query(`ALTER TABLE ${this.qualified(staging)} RENAME TO ${quoteIdent(target)}`);
      await client.query(
        `ALTER INDEX IF EXISTS ${this.qualified(keyIndexName(staging))} RENAME TO ${quoteIdent(keyIndexName(target))}`,
      );
      tx.forget(staging);
      tx.forget(target);
    });
  }

  dropTable(name: string): Promise<void> {
    return this.guard(async () => {
      await this.pool.query(`DROP TABLE IF EXISTS ${this.qualified(name)}`);
    });
  }

  lock(name: string, wait: boolean): Promise<{ release(): Promise<void> } | undefined> {
    return this.guard(async () => {
      const key = lockKey(`sluice:lock:${this.schema}:${name}`);
      const client = await this.pool.connect();
      try {
        if (wait) {
          await client.query('SELECT pg_advisory_lock($1::bigint)', [key]);
        } else {
          const result = await client.query<{ locked: boolean }>(
            'SELECT pg_try_advisory_lock($1::bigint) AS locked',
            [key],
          );
          if (!result.rows[0]?.locked) {
            client.release();
            return undefined;
          }
        }
      } catch (error) {
        client.release(error instanceof Error ? error : true);
        throw error;
      }
      let released = false;
      return {
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
    });
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      return await work(client);
    } finally {
      client.release();
    }
  }
}

/** A signed 64-bit advisory lock key for `name`, as decimal text. */
function lockKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}

/** The error, with every occurrence of a secret replaced by `***`. */
function scrub(error: unknown, secrets: string[]): unknown {
  if (secrets.length === 0 || !(error instanceof Error)) return error;
  const clean = (text: string) => secrets.reduce((t, s) => t.split(s).join('***'), text);
  error.message = clean(error.message);
  if (error.stack) error.stack = clean(error.stack);
  const record = error as unknown as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const value = record[key];
    if (typeof value === 'string' && secrets.some((s) => value.includes(s)))
      record[key] = clean(value);
  }
  if (error.cause !== undefined) scrub(error.cause, secrets);
  return error;
}

/**
 * The pool's connection settings. Session settings go in each connection's startup packet, so
 * every pooled connection has them before its first query: `search_path` to the schema (then
 * public) and `TimeZone` to UTC, so ISO timestamps read back the same everywhere. `options`
 * already in the URL are kept, ahead of these (pg would let the URL's replace them otherwise).
 */
function connectionConfig(url: string, schema: string): pg.PoolConfig {
  // In the startup options, a backslash escapes a space or a backslash inside one value.
  const path = `${quoteIdent(schema)},public`.replace(/[\\ ]/g, '\\$&');
  const ours = `-c search_path=${path} -c TimeZone=UTC`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL; pg reports it when connecting.
    return { connectionString: url, options: ours };
  }
  const inUrl = parsed.searchParams.get('options');
  parsed.searchParams.delete('options');
  return {
    connectionString: parsed.toString(),
    options: inUrl ? `${inUrl} ${ours}` : ours,
  };
}

/**
 * Connects to PostgreSQL at `url`, creates `options.schema` (default `public`) when missing and
 * returns the destination. Fails with a SluiceError (code `SLUICE_DESTINATION_UNREACHABLE`, no
 * password in it) when the server cannot be reached.
 */
export async function openPostgresDestination(
  url: string,
  options: { schema?: string } = {},
): Promise<Destination> {
  const schema = options.schema ?? 'public';
  const { description: where, secrets } = redact(url);
  const description = `${where} (schema ${schema})`;
  const pool = new pg.Pool({ ...connectionConfig(url, schema), types: typeParsers });
  // An idle client that loses its connection emits here; the next query reports the problem.
  pool.on('error', () => {});
  try {
    const client = await pool.connect();
    try {
      const exists = await client.query(
        'SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1',
        [schema],
      );
      if (exists.rows.length === 0) {
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
      }
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end().catch(() => {});
    const cleaned = scrub(error, secrets);
    const reason = cleaned instanceof Error ? cleaned.message : String(cleaned);
    const code = (cleaned as { code?: unknown }).code;
    const unreachable =
      typeof code === 'string' &&
      /^(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH|EAI_AGAIN)$/.test(code);
    throw new SluiceError(`cannot open PostgreSQL destination ${description}: ${reason}`, {
      code: unreachable ? 'SLUICE_DESTINATION_UNREACHABLE' : 'SLUICE_DESTINATION',
      retryable: unreachable,
    });
  }
  return new PostgresDestination(pool, schema, description, secrets);
}
