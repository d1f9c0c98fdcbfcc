import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { PipelineSpecError } from '../../../src/errors.js';
import { parsePipeline } from '../../../src/pipeline/spec/spec.js';
import { DecodeError } from '../../../src/records/decode.js';
import { pinValue } from '../../../src/records/pins.js';
import { JobTables } from '../../../src/records/tables.js';

describe('column hints (columns:)', () => {
  it('reads the service text as the pinned type', () => {
    assert.equal(pinValue('30.2672', 'real'), 30.2672);
    assert.equal(pinValue(7, 'real'), 7);
    assert.equal(pinValue('1999', 'integer'), 1999);
    assert.equal(pinValue('2000.0', 'integer'), 2000);
    assert.equal(pinValue('9223372036854775807', 'integer'), 9223372036854775807n);
    assert.equal(pinValue('TRUE', 'boolean'), true);
    assert.equal(pinValue(0, 'boolean'), false);
    assert.equal(pinValue(1999, 'text'), '1999');
    assert.equal(pinValue({ a: [1] }, 'text'), '{"a":[1]}');
    assert.equal(pinValue({ a: [1] }, 'json'), '{"a":[1]}');
    assert.equal(pinValue('plain', 'json'), '"plain"');
    // JSON text (a CSV cell) stays as it is: CSV and NDJSON give the same value.
    assert.equal(pinValue('[1, 2]', 'json'), '[1, 2]');
    assert.equal(pinValue('[not json', 'json'), '"[not json"');
    assert.equal(pinValue('2024-03-04T05:06:07Z', 'timestamp'), '2024-03-04T05:06:07Z');
    assert.equal(pinValue('', 'integer'), null);
    assert.equal(pinValue(null, 'timestamp'), null);
  });

  it('a value that does not fit says why', () => {
    const misfits: [unknown, Parameters<typeof pinValue>[1], RegExp][] = [
      ['north', 'real', /'north' is not a double/],
      ['1.5', 'integer', /'1.5' is not an integer/],
      ['99999999999999999999', 'integer', /is not an integer/],
      ['yes please', 'boolean', /is not a boolean/],
      ['last week', 'timestamp', /is not a timestamp/],
      ['2021-02-30', 'timestamp', /is not a timestamp/],
      [[1, 2], 'integer', /'\[1,2\]' is not an integer/],
    ];
    for (const [value, type, reason] of misfits) {
      assert.throws(
        () => pinValue(value, type),
        (e: Error) => e instanceof DecodeError && reason.test(e.message),
      );
    }
  });

  it('a pinned double stores a number as written or rejects it, never rounds an integer or a tiny number', () => {
    // Each as text (the service's latitudes), and as the parse reads a number (bigint past 2^53).
    const refused: [unknown, string][] = [
      ['9007199254740993', 'a double holds it as 9007199254740992'],
      [9007199254740993n, 'a double holds it as 9007199254740992'],
      ['9223372036854775807', 'a double holds it as 9223372036854776000'],
      [9223372036854775807n, 'a double holds it as 9223372036854776000'],
      ['18446744073709551616', 'a double holds it as 18446744073709552000'],
      ['9.007199254740993e15', 'a double holds it as 9007199254740992'],
      ['9007199254740993.0', 'a double holds it as 9007199254740992'],
      ['1e-400', 'a double rounds it to 0'],
      ['1e400', "beyond a double's range"],
    ];
    for (const [value, why] of refused) {
      assert.throws(
        () => pinValue(value, 'real'),
        (e: Error) =>
          e instanceof DecodeError &&
          e.message ===
            `the number ${String(value)} cannot be stored exactly: ${why} (its type is pinned by columns:)`,
        String(value),
      );
    }
    // The same numbers however written; a fraction is a double, as in any floating-point column.
    const kept: [unknown, number][] = [
      ['1.10', 1.1],
      ['1e2', 100],
      ['9007199254740994', 9007199254740994],
      [9007199254740994n, 9007199254740994],
      ['1e23', 1e23],
      [' 30.2672 ', 30.2672],
      ['0.1234567890123456789', 0.12345678901234568],
      ['0e-400', 0],
    ];
    for (const [value, number] of kept)
      assert.equal(pinValue(value, 'real'), number, String(value));
    // -0 is 0 on every destination (SQLite would drop the sign, the others keep it).
    for (const zero of ['-0', '-0.0', -0]) assert.ok(Object.is(pinValue(zero, 'real'), 0));
  });

  it('pins the job table: declared up front, a pinned object one column, records rejected by field', () => {
    const tables = new JobTables({
      type: 'properties',
      table: 'homes',
      key: ['id'],
      write: 'merge',
      nested: 'tables',
      fields: ['id', 'latitude', 'prices', 'features'],
      columns: { latitude: 'real', prices: 'json' },
    });
    const main = tables.definitions()[0]!;
    const types = Object.fromEntries(main.columns.map((c) => [c.name, c.type]));
    assert.equal(types.latitude, 'real');
    assert.equal(types.prices, 'json');
    const names = tables.definitions().map((d) => d.name);
    assert.ok(!names.includes('homes__prices') && names.includes('homes__features'), names.join());
    assert.equal(tables.plainJson, false);
    const record = Object.assign(Object.create(null), {
      id: 'a',
      latitude: '30.5',
      prices: [{ amountMax: 1 }],
    });
    const { row, related } = tables.shape(record);
    assert.equal(row.latitude, 30.5);
    assert.equal(row.prices, '[{"amountMax":1}]');
    assert.equal(related?.has('homes__prices') ?? false, false);
    assert.throws(
      () => tables.shape(Object.assign(Object.create(null), { id: 'b', latitude: 'n/a' })),
      /^Error: latitude: 'n\/a' is not a double/,
    );
  });
});

const env = {
  SLUICE_API_URL: 'http://127.0.0.1:1/v4',
  SLUICE_EMAIL: 'a@b.c',
  SLUICE_PASSWORD: 'pw',
};
const HEAD = `version: 1
name: test
source:
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
`;

function problems(text: string): { line?: number; field: string; message: string }[] {
  try {
    parsePipeline(text, 'p.yaml', env);
  } catch (error) {
    if (!(error instanceof PipelineSpecError)) throw error;
    return error.problems.map((p) => ({ line: p.line, field: p.path, message: p.message }));
  }
  throw new Error('expected a PipelineSpecError');
}

describe('pipeline keys for pinned schemas', () => {
  it('columns:, schema: and naming: resolve, the job contract over the pipeline one', () => {
    const spec = parsePipeline(
      `${HEAD}naming: snake_case
schema: { new_columns: freeze }
jobs:
  homes:
    type: properties
    query: 'city:Austin'
    columns: { latitude: double, yearBuilt: integer, geoLocation: text }
    schema: { type_changes: freeze }
  shops:
    type: businesses
    query: 'city:Austin'
`,
      'p.yaml',
      env,
    );
    assert.equal(spec.naming, 'snake_case');
    const [homes, shops] = spec.jobs;
    assert.deepEqual(
      { ...homes!.columns },
      { latitude: 'real', yearBuilt: 'integer', geoLocation: 'text' },
    );
    assert.deepEqual(homes!.schema, { newColumns: 'freeze', typeChanges: 'freeze' });
    assert.deepEqual(shops!.schema, { newColumns: 'freeze', typeChanges: 'widen' });
    assert.deepEqual({ ...shops!.columns }, {});
  });

  it('a file without the keys keeps its jobs as they were (the same load hash)', () => {
    const file = `${HEAD}jobs:\n  homes:\n    type: properties\n    query: 'city:Austin'\n`;
    const before = parsePipeline(file, 'p.yaml', env).jobs[0]!;
    // As sluice computed it before these keys: a half-loaded download finishes after the upgrade.
    const earlier = {
      table: 'homes',
      write: 'merge',
      nested: 'tables',
      key: ['id'],
      people_table: null,
    };
    const hash = createHash('sha256').update(JSON.stringify(earlier)).digest('hex').slice(0, 16);
    assert.equal(before.loadHash, hash);
    const pinned = parsePipeline(
      file.replace("'city:Austin'\n", "'city:Austin'\n    columns: { latitude: double }\n"),
      'p.yaml',
      env,
    ).jobs[0]!;
    assert.notEqual(pinned.loadHash, before.loadHash);
    assert.equal(pinned.downloadHash, before.downloadHash, 'a hint buys nothing new');
  });

  it('mistakes name the line and field', () => {
    const found = problems(`${HEAD}naming: camel
jobs:
  homes:
    type: properties
    query: 'city:Austin'
    columns: { latitude: float }
    schema: { new_columns: frozen, typo: 1 }
`);
    const by = Object.fromEntries(found.map((p) => [p.field, p]));
    assert.match(by.naming!.message, /'keep', 'snake_case'/);
    assert.equal(by.naming!.line, 7);
    assert.match(
      by['jobs.homes.columns.latitude']!.message,
      /'text', 'integer', 'double', 'real', 'boolean', 'timestamp', 'json', got 'float'/,
    );
    assert.equal(by['jobs.homes.columns.latitude']!.line, 12);
    assert.match(
      by['jobs.homes.schema.new_columns']!.message,
      /expected one of 'evolve', 'freeze', 'discard', got 'frozen'/,
    );
    assert.match(by['jobs.homes.schema.typo']!.message, /unknown key 'typo'/);
  });

  it('an owner lookup takes no columns:, autotrace people cannot be pinned, reserved names are checked as spelt', () => {
    const found = problems(`${HEAD}naming: snake_case
jobs:
  pgStats:
    type: properties
    query: 'city:Austin'
  homes:
    type: properties
    query: 'city:Austin'
    auto_trace: true
    columns: { people: json }
  owners:
    type: people
    people_keys_from: homes
    columns: { firstName: text }
`);
    const by = Object.fromEntries(found.map((p) => [p.field, p.message]));
    assert.match(by['jobs.pgStats.table']!, /is reserved: PostgreSQL/);
    assert.match(by['jobs.homes.columns.people']!, /cannot be pinned/);
    assert.match(by['jobs.owners.columns']!, /an owner lookup merges into the people table/);
  });

  it('tables that snake_case spells alike are refused; an unknown hinted field is a warning', () => {
    const found = problems(`${HEAD}naming: snake_case
jobs:
  homesTx:
    type: properties
    query: 'city:Austin'
  homes_tx:
    type: properties
    query: 'city:Dallas'
`);
    assert.match(
      found[0]!.message,
      /table 'homes_tx' .*is also the table of job 'homesTx' \(both are 'homes_tx' under naming: snake_case\)/,
    );
    const spec = parsePipeline(
      `${HEAD}jobs:\n  homes:\n    type: properties\n    query: 'city:Austin'\n    columns: { yearBuit: integer }\n`,
      'p.yaml',
      env,
    );
    assert.ok(
      spec.warnings.some((w) =>
        /columns\.yearBuit: not a field of properties \(did you mean 'yearBuilt'\?\)/.test(w),
      ),
      spec.warnings.join('\n'),
    );
  });
});
