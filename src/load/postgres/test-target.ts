import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestTarget, TestTargets } from '../entry.js';
import { lockKey } from './connection.js';

/**
 * PostgreSQL for tests (see `DestinationEntry.testTargets`): the server of
 * `SLUICE_TEST_POSTGRES_URL` (default a local trust-auth one), and a new schema for each target,
 * dropped afterwards, so that tests never see each other's tables. When the server does not
 * answer, tests of this kind skip with one line, except with `CI=true`, where they fail.
 */
export const postgresTargets: TestTargets = {
  oneProcess: false,
  refusesValues: true,
  caseTwins: true,
  declared: {
    integer: 'bigint',
    real: 'double precision',
    boolean: 'boolean',
    timestamp: 'timestamp with time zone',
    json: 'jsonb',
    text: 'text',
  },
  skipReason: () => postgresSkipReason(),
  async fresh(_dir, name) {
    return postgresTarget(randomSchemaName(`e2e_${name.replace(/\W/g, '_')}`.slice(0, 30)));
  },
};

const DEFAULT_POSTGRES_URL = 'postgresql://postgres@127.0.0.1:5432/test';

/** The tests' server. */
export function postgresUrl(): string {
  return process.env.SLUICE_TEST_POSTGRES_URL || DEFAULT_POSTGRES_URL;
}

/** The URL with any password replaced, for messages. */
function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(invalid URL)';
  }
}

const availability = new Map<string, Promise<boolean>>();

/** Whether a connection to `url` succeeds within a few seconds (checked once per process). */
function available(url: string): Promise<boolean> {
  let known = availability.get(url);
  if (known === undefined) {
    known = (async () => {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('SELECT 1');
        return true;
      } catch {
        return false;
      } finally {
        await client.end().catch(() => {});
      }
    })();
    availability.set(url, known);
  }
  return known;
}

/**
 * Undefined when the server answers; otherwise the line to skip with. On CI it throws instead,
 * so a missing service fails the build rather than silently skipping.
 */
export async function postgresSkipReason(url = postgresUrl()): Promise<string | undefined> {
  if (await available(url)) return undefined;
  const reason = `PostgreSQL not reachable at ${redacted(url)}: set SLUICE_TEST_POSTGRES_URL`;
  if (process.env.CI === 'true') throw new Error(`${reason} (CI=true, so this is a failure)`);
  return reason;
}

/** A fresh schema name, unique enough for parallel test files. */
export function randomSchemaName(prefix = 'sluice_test'): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** Drops `schema` and everything in it. */
export async function dropSchema(schema: string, url = postgresUrl()): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema.replaceAll('"', '""')}" CASCADE`);
  } finally {
    await client.end();
  }
}

const INT8 = 20;
const NUMERIC = 1700;
const JSON_OIDS = [114, 3802];
/**
 * Numbers as numbers (the tests' values stay within 2^53), JSON as its text (as every kind's
 * test target reads it).
 */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 || oid === NUMERIC
      ? (v: string) => Number(v)
      : JSON_OIDS.includes(oid)
        ? (v: string) => v
        : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
};

/** The schema `schema` of the tests' server as a test target. */
function postgresTarget(schema: string): TestTarget {
  const url = postgresUrl();
  const q = (text: string) => text.replaceAll("'", "''");
  const all = async <T>(sql: string): Promise<T[]> => {
    const client = new pg.Client({ connectionString: url, types });
    client.on('error', () => {});
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(`SET search_path TO "${schema}"`);
      return (await client.query(sql)).rows as T[];
    } finally {
      await client.end();
    }
  };
  return {
    url,
    settings: { schema },
    destinationYaml: `{ url: '${url}', schema: ${schema} }`,
    all,
    exec: async (...statements) => {
      for (const statement of statements) await all(statement);
    },
    columns: (table) =>
      all<{ name: string; type: string }>(
        `select column_name as name, data_type as type from information_schema.columns where table_schema = '${schema}' and table_name = '${q(table)}' order by ordinal_position`,
      ),
    indexes: async (table) =>
      (
        await all<{ name: string }>(
          `select indexname as name from pg_indexes where schemaname = '${schema}' and tablename = '${q(table)}' order by indexname`,
        )
      ).map((i) => i.name),
    tables: async (prefix) =>
      (
        await all<{ name: string }>(
          `select table_name as name from information_schema.tables where table_schema = '${schema}' and table_name like '${q(prefix)}%' order by table_name`,
        )
      ).map((t) => t.name),
    session: async () => {
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => {});
      await client.connect();
      await client.query(`SET search_path TO "${schema}"`);
      return { query: (sql) => client.query(sql), end: () => client.end() };
    },
    urlWithSettings: (settings) => {
      const withOptions = new URL(url);
      withOptions.searchParams.set('options', settings);
      return withOptions.toString();
    },
    breakLock: (name) => endLockSession(url, schema, name),
    dispose: () => dropSchema(schema, url),
  };
}

/**
 * Ends the session holding the run lock `name` of `schema`, as `idle_session_timeout` or an
 * administrator would. A bigint advisory lock shows in pg_locks as its high and low 32 bits.
 */
async function endLockSession(url: string, schema: string, name: string): Promise<void> {
  const unsigned = BigInt.asUintN(64, BigInt(lockKey(`sluice:lock:${schema}:${name}`)));
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    const { rows } = await client.query(
      `select pg_terminate_backend(pid) as ended from pg_locks
       where locktype = 'advisory' and granted and objsubid = 1
         and classid::bigint = $1 and objid::bigint = $2`,
      [String(unsigned >> 32n), String(unsigned & 0xffffffffn)],
    );
    if (!rows.some((r: { ended: boolean }) => r.ended)) {
      throw new Error(`no session holds the lock ${name} of schema ${schema}`);
    }
  } finally {
    await client.end();
  }
}
