/**
 * PostgreSQL for tests: where it is (`SLUICE_TEST_POSTGRES_URL`, default a local trust-auth
 * server), whether it answers, and throwaway schemas, as the PostgreSQL destination's folder
 * makes its test targets (`src/load/postgres/test-target.ts`); and one query on a connection of
 * the test's own.
 */
import pg from 'pg';
import { postgresUrl } from '../../src/load/postgres/test-target.js';

export {
  dropSchema,
  postgresSkipReason,
  postgresUrl,
  randomSchemaName,
} from '../../src/load/postgres/test-target.js';

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
