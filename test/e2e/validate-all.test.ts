import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { SLUICE_BIN, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * The README's promise: `validate` says all of a file's mistakes at once, each with its file,
 * line and field, so that one round fixes them. A file with mistakes of every stage (YAML, the
 * schema, ${VAR}, the jobs' own checks, the tables) is validated once, by the built CLI.
 */

const MISTAKES = `version: 1
name: many
source:
  api: v4
  url: http://127.0.0.1:8787/v4
  email: a@b.c
  password: \${SLUICE_PASSWORD}
  emial: x
destination: sqlite:many.sqlite
budget: { property: 100/month, people: lots }
views:
  v1:
    fields: [id, address]
jobs:
  a:
    type: properties
    query: "city:Austin"
    recods: 10
  b:
    type: propertees
    query: "*"
  c:
    type: properties
    query: "city:(Austin"
    view: v1
    key: nosuch
  d:
    type: businesses
    query: "*"
    auto_trace: true
  e:
    type: people
    people_keys_from: zz
  f:
    type: properties
    query: "*"
    table: _sluice_x
    incremental: { cursor: id }
  g:
    type: properties
    query: "*"
    view: nosuchview
    max_credits: \${SLUICE_TEST_NEVER_SET}
  h:
    type: properties
    query: "*"
    records: 5
    records: 6
  i:
    type: properties
    query: "*"
    table: A
`;

/** [line, field] of each mistake above, in the file's order. */
const EXPECTED: [number, string, RegExp][] = [
  [8, 'source.emial', /unknown key 'emial'; did you mean 'email'\?/],
  [10, 'budget.people', /expected credits per period/],
  [18, 'jobs.a.recods', /unknown key 'recods'; did you mean 'records'\?/],
  [20, 'jobs.b.type', /got 'propertees'; did you mean 'properties'\?/],
  [24, 'jobs.c.query', /expected '\)'/],
  [26, 'jobs.c.key', /merge key 'nosuch' is not a field of view 'v1'/],
  [30, 'jobs.d.auto_trace', /applies to properties only/],
  [33, 'jobs.e.people_keys_from', /no job 'zz' in this file/],
  [37, 'jobs.f.table', /'_sluice_x' is reserved/],
  [38, 'jobs.f.incremental.cursor', /cursor 'id' is not a date field/],
  [42, 'jobs.g.view', /view 'nosuchview' is not declared/],
  [43, 'jobs.g.max_credits', /SLUICE_TEST_NEVER_SET is not set/],
  [48, 'jobs.h.records', /^duplicate key 'records' \(first at line 47\): keep one$/],
  [52, 'jobs.i.table', /'A'/],
];

describe('validate: every mistake of a file in one round', () => {
  test('a file with 14 mistakes of every kind: all of them, each at its line and field', () => {
    const file = writePipeline(tempDir('sluice-validate-'), 'many', MISTAKES);
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, SLUICE_PASSWORD: 'pw' };
    const json = spawnSync(process.execPath, [SLUICE_BIN, 'validate', file, '--json'], {
      env,
      encoding: 'utf8',
    });
    assert.equal(json.status, 2, json.stderr);
    const { error } = JSON.parse(json.stdout);
    assert.equal(error.code, 'SLUICE_SPEC');
    assert.equal(error.file, file);
    const problems = error.problems as { line: number; field: string; message: string }[];
    assert.deepEqual(
      problems.map((p) => [p.line, p.field]),
      EXPECTED.map(([line, field]) => [line, field]),
      JSON.stringify(problems, null, 2),
    );
    EXPECTED.forEach(([, , message], i) => {
      assert.match(problems[i]!.message, message);
    });

    // In text: one line per mistake, each naming the file, the line and the field.
    const text = spawnSync(process.execPath, [SLUICE_BIN, 'validate', file], {
      env,
      encoding: 'utf8',
    });
    assert.equal(text.status, 2);
    for (const [line, field] of EXPECTED) {
      assert.ok(text.stderr.includes(`${file}:${line}: ${field}: `), `${line} ${field}`);
    }
    assert.doesNotMatch(text.stderr, /\n\s+at /, 'no stack trace');
  });

  test('a duplicate key names the key; fixing every mistake shown leaves none', () => {
    const dir = tempDir('sluice-validate-');
    const file = writePipeline(
      dir,
      'twice',
      'version: 1\nname: twice\nname: again\nsource: { api: v4, url: http://x/v4, token: t }\njobs:\n  a: { type: properties, query: "*" }\n',
    );
    const env = { PATH: process.env.PATH, HOME: process.env.HOME };
    const once = spawnSync(process.execPath, [SLUICE_BIN, 'validate', file], {
      env,
      encoding: 'utf8',
    });
    assert.equal(once.status, 2);
    assert.match(once.stderr, /:3: name: duplicate key 'name' \(first at line 2\): keep one/);
    const fixed = writePipeline(
      dir,
      'twice',
      'version: 1\nname: twice\nsource: { api: v4, url: http://x/v4, token: t }\njobs:\n  a: { type: properties, query: "*" }\n',
    );
    const again = spawnSync(process.execPath, [SLUICE_BIN, 'validate', fixed], {
      env,
      encoding: 'utf8',
    });
    assert.equal(again.status, 0, again.stderr);
  });
});
