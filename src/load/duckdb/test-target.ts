import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { lockFileOf } from '../core/lock-file.js';
import type { TestTarget, TestTargets } from '../entry.js';

/**
 * DuckDB for tests (see `DestinationEntry.testTargets`): a new file in the test's folder, read
 * back over a connection of the test's own. In this process it shares the instance sluice opened
 * (DuckDB's instance cache): two instances of one file would each write it as if alone.
 */
export const duckdbTargets: TestTargets = {
  oneProcess: true,
  refusesValues: true,
  caseTwins: false,
  declared: {
    integer: 'bigint',
    real: 'double',
    boolean: 'boolean',
    timestamp: 'timestamp with time zone',
    json: 'json',
    text: 'varchar',
  },
  skipReason: async () => undefined,
  fresh: async (dir, name) => duckdbTarget(join(dir, `${name}.duckdb`)),
};

/** Runs `work` on a connection of the test's own to `file`, in UTC. */
async function withConnection<T>(
  file: string,
  work: (conn: DuckDBConnection) => Promise<T>,
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
function queryDuckDb<T = Record<string, unknown>>(file: string, sql: string): Promise<T[]> {
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

function execDuckDb(file: string, statements: readonly string[]): Promise<void> {
  return withConnection(file, async (conn) => {
    for (const statement of statements) await conn.run(statement);
  });
}

function duckdbTarget(file: string): TestTarget {
  const q = (text: string) => text.replaceAll("'", "''");
  const all = <T>(sql: string) => queryDuckDb<T>(file, sql);
  return {
    url: `duckdb:${file}`,
    settings: {},
    destinationYaml: `duckdb:${file}`,
    file,
    all,
    exec: (...statements) => execDuckDb(file, statements),
    columns: async (table) =>
      (
        await all<{ name: string; type: string }>(
          `select column_name as name, data_type as type from information_schema.columns where table_name = '${q(table)}' order by ordinal_position`,
        )
      ).map((c) => ({ name: c.name, type: c.type.toLowerCase() })),
    indexes: async (table) =>
      (
        await all<{ name: string }>(
          `select index_name as name from duckdb_indexes() where table_name = '${q(table)}' order by 1`,
        )
      ).map((i) => i.name),
    tables: async (prefix) =>
      (
        await all<{ name: string }>(
          `select table_name as name from information_schema.tables where table_schema = 'main' and table_name like '${q(prefix)}%' order by 1`,
        )
      ).map((t) => t.name),
    breakLock: async (name) => rmSync(lockFileOf(file, name)),
    dispose: async () => {},
  };
}
