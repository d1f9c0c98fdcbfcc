import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { shapePlanOf } from '../../../src/pipeline/context.js';
import { filesAtOnce } from '../../../src/pipeline/load.js';
import { parsePipeline } from '../../../src/pipeline/spec.js';
import { JobTables } from '../../../src/records/tables.js';

/** The job tables of one properties job with these extra settings. */
function tablesOf(extra: string): JobTables {
  const spec = parsePipeline(
    `version: 1
name: p
source: { api: v4, url: 'http://x.test/v4', email: e, password: p }
jobs:
  homes:
    type: properties
    query: '*'
${extra
  .split('\n')
  .map((line) => `    ${line}`)
  .join('\n')}
`,
    'p.yaml',
    {},
  );
  return new JobTables(shapePlanOf(spec.jobs[0]!, spec));
}

describe('files loaded at once', () => {
  test('only jobs whose rows are all appended may load their files in any order', () => {
    assert.equal(tablesOf('write: append').appendsOnly, true);
    assert.equal(tablesOf('write: append\nnested: tables').appendsOnly, true);
    assert.equal(tablesOf('write: replace').appendsOnly, true);
    assert.equal(tablesOf('write: merge\nkey: id').appendsOnly, false, 'a later record wins');
    assert.equal(
      tablesOf('write: append\nauto_trace: true').appendsOnly,
      false,
      'people are merged',
    );
  });

  test('one for every two cores, at most the writers; one for SQLite and for merges', () => {
    const append = { appendsOnly: true };
    assert.equal(filesAtOnce({}, 4, append, 2), 1, 'two cores: one');
    assert.equal(filesAtOnce({}, 4, append, 4), 2);
    assert.equal(filesAtOnce({}, 4, append, 16), 4, "the destination's writers");
    assert.equal(filesAtOnce({}, 1, append, 16), 1, 'SQLite: one writer');
    assert.equal(filesAtOnce({}, 4, { appendsOnly: false }, 16), 1, 'a merge');
  });

  test('SLUICE_FILES_AT_ONCE sets it, within the same bounds', () => {
    const append = { appendsOnly: true };
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '3' }, 4, append, 2), 3);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '9' }, 4, append, 2), 4);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '3' }, 1, append, 2), 1);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '3' }, 4, { appendsOnly: false }, 2), 1);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: 'lots' }, 4, append, 8), 1);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '' }, 4, append, 8), 4);
  });
});
