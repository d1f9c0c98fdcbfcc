import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import type { Attempt } from '../../../src/load/destination.js';
import { loadChanges } from '../../../src/pipeline/spec/load-changes.js';
import { parsePipeline } from '../../../src/pipeline/spec/spec.js';

/**
 * SLUICE_JOB_CHANGED said "changed how it loads (now merge into texasHomes, was merge into
 * texasHomes)" after a `columns:` or `naming:` change: it now names each setting that changed.
 */

const HEAD = `version: 1
name: p
source: { api: v4, url: 'http://x.test/v4', email: e, password: p }
`;

function job(settings: string, top = '') {
  const spec = parsePipeline(
    `${HEAD}${top}jobs:\n  texasHomes:\n    type: properties\n    query: '*'\n${settings
      .split('\n')
      .filter(Boolean)
      .map((line) => `    ${line}\n`)
      .join('')}`,
    'p.yaml',
    {},
  );
  return spec.jobs[0]!;
}

/** The attempt a download of `was` recorded (`settings: false`: one of an older sluice). */
function attemptOf(was: ReturnType<typeof job>, settings = true): Attempt {
  return {
    target_table: was.table,
    write_mode: was.write,
    load_hash: was.loadHash,
    load_settings: settings ? JSON.stringify(was.loadSettings) : null,
  } as Attempt;
}

describe('what changed in how a job loads', () => {
  test('the load hash of a file written before is what it was, so its half-loaded downloads finish', () => {
    // Hashes of sluice before the settings were recorded (6a5305a).
    assert.equal(job('').loadHash, '88a6340dc831976b');
    const full = parsePipeline(
      `${HEAD}naming: snake_case\njobs:\n  texasHomes:\n    type: properties\n    query: '*'\n    write: replace\n    key: [id, province]\n    nested: json\n    auto_trace: true\n    people_table: owners_people\n    columns: { numBathroom: double, latitude: double, yearBuilt: integer }\n`,
      'p.yaml',
      {},
    );
    assert.equal(full.jobs[0]!.loadHash, '727c303c120f2b40');
  });

  test('a columns: change names each pin that changed, with its old and new type', () => {
    const was = job('columns: { latitude: double, yearBuilt: integer }');
    const now = job('columns: { latitude: text, numBathroom: double }');
    assert.deepEqual(loadChanges(attemptOf(was), now), [
      'columns.latitude is now text, was real',
      'columns.numBathroom is now real, was not pinned',
      'columns.yearBuilt is now not pinned, was integer',
    ]);
  });

  test('a naming: change, and the table, write mode, nesting and key', () => {
    const was = job('');
    assert.deepEqual(loadChanges(attemptOf(was), job('', 'naming: snake_case\n')), [
      'naming is now snake_case, was keep',
    ]);
    const now = job('table: homes\nwrite: append\nnested: json\nkey: [id, province]');
    assert.deepEqual(loadChanges(attemptOf(was), now), [
      'table is now homes, was texasHomes',
      'write is now append, was merge',
      'nested is now json, was tables',
      'key is now [id, province], was id',
    ]);
    assert.deepEqual(loadChanges(attemptOf(was), was), []);
  });

  test('a download of an older sluice, which recorded its table and write mode only', () => {
    const was = job('');
    assert.deepEqual(loadChanges(attemptOf(was, false), job('write: append')), [
      'write is now append, was merge',
    ]);
    const [unknown] = loadChanges(attemptOf(was, false), job('columns: { latitude: double }'));
    assert.match(unknown!, /one of nested, key, people_table, columns or naming .*older sluice/);
  });
});
