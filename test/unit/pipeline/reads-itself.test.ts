import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { plannedTables } from '../../../src/pipeline/load/job-columns.js';
import { readsItself } from '../../../src/pipeline/load/native-file.js';
import { parsePipeline } from '../../../src/pipeline/spec/spec.js';

/**
 * Which jobs' files a destination that reads result files itself (DuckDB) is offered, known
 * from the pipeline file before the job's load begins: the run warms no parse workers for them.
 */

const env = {
  SLUICE_API_URL: 'http://127.0.0.1:1/v4',
  SLUICE_EMAIL: 'a@b.c',
  SLUICE_PASSWORD: 'pw',
};

function offered(job: string, readsFiles = true): boolean {
  const spec = parsePipeline(
    `version: 1
name: test
source:
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
destination: duckdb:./x.duckdb
jobs:
  homes:
    type: properties
    query: 'city:Austin'
${job.replace(/^/gm, '    ')}
`,
    'p.yaml',
    env,
  );
  const ctx = { destination: { capabilities: { readsFiles } } } as Parameters<
    typeof readsItself
  >[0];
  return readsItself(ctx, plannedTables(spec, spec.jobs[0]!));
}

describe('files a destination reads itself', () => {
  it('one table a record, appended or merged by its key, in either format', () => {
    assert.equal(offered('nested: json'), true);
    assert.equal(offered('nested: json\nformat: csv'), true);
    assert.equal(offered('nested: json\nwrite: merge\nkey: [id]'), true);
  });

  it('not nested tables, pinned columns, autotrace, or a destination that reads none', () => {
    assert.equal(offered('nested: tables'), false);
    assert.equal(offered('nested: json\ncolumns: { yearBuilt: text }'), false);
    assert.equal(offered('nested: json\nauto_trace: true'), false);
    assert.equal(offered('nested: json', false), false);
  });
});
