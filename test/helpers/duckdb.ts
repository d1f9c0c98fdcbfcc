/**
 * A test's own connection to a DuckDB file, as an analyst's would be. In this process it shares
 * the instance sluice opened (DuckDB's instance cache): two instances of one file would each
 * write it as if alone.
 */
import { DuckDBInstance } from '@duckdb/node-api';

async function withConnection<T>(
  file: string,
  work: (conn: Awaited<ReturnType<DuckDBInstance['connect']>>) => Promise<T>,
): Promise<T> {
  const instance = await DuckDBInstance.fromCache(file);
  const conn = await instance.connect();
  try {
    await conn.run("SET TimeZone = 'UTC'");
    return await work(conn);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/** Rows of a query, numbers as numbers (BIGINT within 2^53), JSON as its text. */
export function queryDuckDb<T = Record<string, unknown>>(file: string, sql: string): Promise<T[]> {
  return withConnection(file, async (conn) => {
    const rows = await (await conn.runAndReadAll(sql)).getRowObjectsJS();
    for (const row of rows) {
      for (const [name, value] of Object.entries(row)) {
        if (typeof value === 'bigint' && Number.isSafeInteger(Number(value))) {
          row[name] = Number(value);
        }
      }
    }
    return rows as T[];
  });
}

export function execDuckDb(file: string, statements: readonly string[]): Promise<void> {
  return withConnection(file, async (conn) => {
    for (const statement of statements) await conn.run(statement);
  });
}
