/**
 * PostgreSQL for tests: where it is (`SLUICE_TEST_POSTGRES_URL`, default a local trust-auth
 * server), whether it answers, and throwaway schemas so tests never see each other's tables.
 *
 * When PostgreSQL cannot be reached, tests skip with one line, except on CI
 * (`CI=true`), where an unreachable server is a failure: `postgresSkipReason()` throws there.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const DEFAULT_POSTGRES_URL = 'postgresql://postgres@127.0.0.1:5432/test';

export function postgresUrl(): string {
  return process.env.SLUICE_TEST_POSTGRES_URL || DEFAULT_POSTGRES_URL;
}

/** The URL with any password replaced, for messages. */
export function redactedPostgresUrl(url = postgresUrl()): string {
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
export function postgresAvailable(url = postgresUrl()): Promise<boolean> {
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
 * Undefined when PostgreSQL answers; otherwise the line to skip with. On CI it throws instead,
 * so a missing service fails the build rather than silently skipping.
 */
export async function postgresSkipReason(url = postgresUrl()): Promise<string | undefined> {
  if (await postgresAvailable(url)) return undefined;
  const reason = `PostgreSQL not reachable at ${redactedPostgresUrl(url)}: set SLUICE_TEST_POSTGRES_URL`;
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

/** Runs one query on a short-lived connection (for assertions that bypass the destination). */
export async function queryPostgres<R extends pg.QueryResultRow = pg.QueryResultRow>(
  text: string,
  values: unknown[] = [],
  url = postgresUrl(),
): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}
