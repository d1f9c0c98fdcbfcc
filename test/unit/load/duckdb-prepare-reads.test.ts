import { strict as assert } from 'node:assert';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openDuckDb } from '../../../src/load/duckdb/connection.js';
import { DuckDbWriter } from '../../../src/load/duckdb/writer.js';
import { tempDir } from '../../helpers/pipeline.js';

/**
 * A job whose files DuckDB reads itself starts the line-check worker while its download is
 * prepared (`Destination.prepareReads`), not at its first file; nothing starts for a handle that
 * does not read files itself, or opened read-only.
 */

const root = tempDir('sluice-prepare-reads-');
after(() => rmSync(root, { recursive: true, force: true }));

test('prepareReads starts the check worker of a writable handle that reads files itself', async () => {
  const path = join(root, 'reads.duckdb');
  const session = await openDuckDb(path, {});
  try {
    new DuckDbWriter(session, false).prepareReads();
    assert.equal(session.checks.started, false);
    new DuckDbWriter(session, true).prepareReads();
    assert.equal(session.checks.started, true);
  } finally {
    await session.checks.close();
    session.close();
  }
  assert.equal(session.checks.started, false);
  const readOnly = await openDuckDb(path, { readOnly: true });
  try {
    new DuckDbWriter(readOnly, true).prepareReads();
    assert.equal(readOnly.checks.started, false);
  } finally {
    await readOnly.checks.close();
    readOnly.close();
  }
});
