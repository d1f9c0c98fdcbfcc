import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * An in-memory DuckDB connection (times in UTC) and a temporary folder for the files it reads,
 * made before the file's tests and removed after them.
 */
export function duckDbScratch(prefix: string): { conn(): DuckDBConnection; dir(): string } {
  let conn: DuckDBConnection | undefined;
  let dir: string | undefined;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    const { DuckDBInstance } = await import('@duckdb/node-api');
    conn = await (await DuckDBInstance.create(':memory:')).connect();
    await conn.run("SET TimeZone = 'UTC'");
  });
  after(() => {
    conn?.closeSync();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
  return { conn: () => conn!, dir: () => dir! };
}
