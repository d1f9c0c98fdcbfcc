import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { openDuckDb } from '../../../src/load/duckdb/connection.js';
import { DEFAULT_MEMORY_LIMIT, duckDbBudget } from '../../../src/load/duckdb/settings.js';

/**
 * DuckDB's buffer pool and threads in a run: what the run may use beside its parse workers,
 * unless the environment says otherwise; a setting that is no size or count is a usage error.
 */
describe("DuckDB's budget", () => {
  test('defaults: 256 MB, and the cores the parse workers leave', () => {
    assert.deepEqual(duckDbBudget({}, 2), { memoryLimit: DEFAULT_MEMORY_LIMIT, threads: 1 });
    assert.deepEqual(duckDbBudget({}, 1), { memoryLimit: DEFAULT_MEMORY_LIMIT, threads: 1 });
    assert.equal(duckDbBudget({}, 8).threads, 7);
  });

  test('the environment sets them', () => {
    assert.deepEqual(
      duckDbBudget({ SLUICE_DUCKDB_MEMORY_LIMIT: '1GiB', SLUICE_DUCKDB_THREADS: '3' }, 2),
      { memoryLimit: '1GiB', threads: 3 },
    );
    assert.deepEqual(
      duckDbBudget({ SLUICE_DUCKDB_MEMORY_LIMIT: '', SLUICE_DUCKDB_THREADS: '' }, 2),
      {
        memoryLimit: DEFAULT_MEMORY_LIMIT,
        threads: 1,
      },
    );
  });

  test('a setting that is no size or count is a usage error', () => {
    for (const env of [
      { SLUICE_DUCKDB_MEMORY_LIMIT: 'lots' },
      { SLUICE_DUCKDB_MEMORY_LIMIT: "1GB'; DROP TABLE x; --" },
      { SLUICE_DUCKDB_THREADS: '0' },
      { SLUICE_DUCKDB_THREADS: '1.5' },
    ]) {
      assert.throws(() => duckDbBudget(env, 2), { code: 'SLUICE_USAGE' });
    }
  });

  test('a DuckDB file opened for writing runs with them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-budget-'));
    const before = { ...process.env };
    process.env.SLUICE_DUCKDB_MEMORY_LIMIT = '300MB';
    process.env.SLUICE_DUCKDB_THREADS = '1';
    try {
      const session = await openDuckDb(join(dir, 'out.duckdb'), {});
      try {
        const result = await session.writer.runAndReadAll(
          "SELECT current_setting('memory_limit'), current_setting('threads')",
        );
        const [memory, threads] = result.getRows()[0]!;
        // DuckDB shows the limit in its own units (300 MB is 286.1 MiB).
        assert.match(String(memory), /^286\.\d MiB$/);
        assert.equal(Number(threads), 1);
      } finally {
        session.close();
      }
    } finally {
      process.env = before;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
