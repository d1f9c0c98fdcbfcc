import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { maxRecordBytes } from '../../../src/pipeline/load/normalize.js';

test('SLUICE_MAX_RECORD_BYTES sets the record size limit; 4 MiB unset; anything else but bytes is a usage error', () => {
  assert.equal(maxRecordBytes({}), 4 << 20);
  assert.equal(maxRecordBytes({ SLUICE_MAX_RECORD_BYTES: '' }), 4 << 20);
  assert.equal(maxRecordBytes({ SLUICE_MAX_RECORD_BYTES: '1000' }), 1000);
  for (const bad of ['0', '-5', '1.5', '16MB', 'many']) {
    assert.throws(
      () => maxRecordBytes({ SLUICE_MAX_RECORD_BYTES: bad }),
      (error: Error & { code?: string }) =>
        error.code === 'SLUICE_USAGE' && error.message.includes(`not '${bad}'`),
      bad,
    );
  }
});
