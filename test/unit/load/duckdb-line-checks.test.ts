import { strict as assert } from 'node:assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FIELDS } from '../../../src/catalog.js';
import { Dataset } from '../../../src/emulator/data/dataset.js';
import { quoteIdent } from '../../../src/load/dialect.js';
import { lineCheck } from '../../../src/load/duckdb/line-checks.js';
import { lineScan, UNSURE } from '../../../src/load/duckdb/line-scan.js';
import { cellValue, columnOf } from '../../../src/load/duckdb/read-checks.js';
import { recordsOf } from '../../../src/load/duckdb/read-file.js';
import { declaredColumnType } from '../../../src/schema/types.js';
import { duckDbScratch } from '../../helpers/duckdb-scratch.js';

/**
 * The lines DuckDB may read itself (src/load/duckdb/line-checks.ts, the values of
 * read-checks.ts): what sluice's decoding would change, refuse or widen is in doubt; what it
 * keeps as sent reads alike.
 */

const scratch = duckDbScratch('sluice-line-checks-');

const props = FIELDS.properties;

/** Whether field `name`'s value `json` (its JSON text in a line) reads without doubt. */
async function reads(name: string, json: string): Promise<{ ok: boolean; value: unknown }> {
  const def = Object.hasOwn(props, name) ? props[name] : undefined;
  const fields = [{ key: name, type: columnOf(def), ...(def ? { def } : {}) }];
  const line = `{${JSON.stringify(name)}:${json}}`;
  const path = join(scratch.dir(), 'line.ndjson');
  writeFileSync(path, `${line}\n`);
  const ok = lineCheck(fields, 10_000)(line, Buffer.byteLength(line)) === undefined;
  if (!ok) return { ok, value: undefined };
  // Read as read-file.ts reads a file.
  const result = await scratch
    .conn()
    .runAndReadAll(
      `SELECT CAST(${cellValue(quoteIdent(name), fields[0]!.type)} AS VARCHAR) FROM ${recordsOf(path, fields, 10_000)}`,
    );
  const [row] = result.getRowsJS() as [unknown][];
  return { ok, value: row![0] };
}

describe('what DuckDB reads of a line as sluice decodes it', () => {
  test('fields of the catalogue, as the service sends them, read alike', async () => {
    const cases: [string, string, unknown][] = [
      ['address', '"6277 Prospect Rd"', '6277 Prospect Rd'],
      ['yearBuilt', '1991', '1991'],
      ['yearBuilt', '"1991"', '1991'],
      ['mostRecentPriceAmount', '1217000', '1217000.0'],
      ['latitude', '"29.514005"', '29.514005'],
      ['dateAdded', '"2015-09-04T12:27:58Z"', '2015-09-04 12:27:58+00'],
      ['dateAdded', '"2020-02-29T23:59:59Z"', '2020-02-29 23:59:59+00'],
      ['prices', '[{"date":"2020-02-29"}]', '[{"date":"2020-02-29"}]'],
      ['address', '""', null],
      ['address', 'null', null],
      ['parking', '["Carport"]', '["Carport"]'],
      ['parking', '[]', null],
      [
        'prices',
        '[{"amountMax":1228505,"date":"2022-04-03T15:26:14Z","dateSeen":["2023-06-10T01:34:56Z"],"isSale":true,"pricePerSquareFoot":383.19}]',
        '[{"amountMax":1228505,"date":"2022-04-03T15:26:14Z","dateSeen":["2023-06-10T01:34:56Z"],"isSale":true,"pricePerSquareFoot":383.19}]',
      ],
    ];
    for (const [name, json, value] of cases) {
      assert.deepEqual(await reads(name, json), { ok: true, value }, `${name}: ${json}`);
    }
  });

  test('what sluice would decode otherwise, reject or widen is in doubt', async () => {
    const cases: [string, string][] = [
      ['address', '12'], // a number in a text column: sluice writes its own spelling
      ['yearBuilt', '2.5'], // widens the column
      ['yearBuilt', '1991.0'], // not as JSON.stringify writes it
      ['yearBuilt', '1991 '],
      ['yearBuilt', '"1991x"'],
      ['yearBuilt', '12345678901234567'], // past 2^53
      ['yearBuilt', 'true'],
      ['mostRecentPriceAmount', '-0.0'],
      ['dateAdded', '"2021-02-30T00:00:00Z"'], // no such day: a reject
      ['dateAdded', '"2021-02-03"'], // another form
      ['dateAdded', '"2021-02-29T00:00:00Z"'],
      ['dateAdded', '"2021-01-01T24:00:00Z"'],
      ['dateAdded', '"0000-01-01T00:00:00Z"'],
      ['prices', '[{"date":"2021-13-01T00:00:00Z"}]'],
      ['prices', '[{"date":"2021-02-29"}]'],
      ['parking', '"Carport,Garage"'], // comma-joined: split by sluice
      ['parking', '["a",""]'],
      ['parking', '["\\u0001"]'],
      ['prices', '[{"amountMax":2.0}]'], // JSON.stringify writes 2
      ['prices', '[{"amountMax":1e21}]'],
      ['prices', '[{"amountMax":1e-400}]'],
      ['mostRecentPriceAmount', '1e-400'],
      ['mostRecentPriceAmount', '12345678901234567890123'],
      ['prices', '[{"amountMax":"12"}]'], // decoded into a number
      ['prices', '[{"date":"2021-02-30T00:00:00Z"}]'],
      ['prices', '[{"dateSeen":"2021-02-03T00:00:00Z"}]'], // a list field's text
      ['prices', '[{"dateSeen":["2021-02-30T00:00:00Z"]}]'],
      ['prices', '[{"isSale":"true"}]'],
      ['prices', '[{"a":1,"a":2}]'], // a key twice
      ['prices', '[{"x":{"a":1,"a":2}}]'],
      ['prices', '[{"a":"x\\"y"}]'],
      ['prices', '{"a":[]}'],
    ];
    for (const [name, json] of cases) {
      assert.equal((await reads(name, json)).ok, false, `${name}: ${json}`);
    }
  });

  test('a line not an object, not as JSON.stringify writes it, with a key not known, an escape, or too long, is in doubt', () => {
    const check = lineCheck(
      [
        { key: 'a', type: 'real', def: { kind: 'number' } },
        { key: 'b', type: 'text', def: { kind: 'string' } },
      ],
      1000,
    );
    const kept = (line: string) => check(line, Buffer.byteLength(line)) === undefined;
    assert.equal(kept('{"a":1.5,"b":"x \\" y"}'), true);
    for (const line of [
      '{"a":1,"a":2}',
      '{"a":1, "b":"x"}',
      '{"c":1}',
      '[1]',
      '{"a":1}\r',
      '{"b":"\\u0000"}',
      '{"b":"\\u0001"}',
      '{"b":"\ufffd"}',
      `{"b":"${'x'.repeat(1000)}"}`,
      '{"a":1',
    ]) {
      assert.equal(kept(line), false, line);
    }
    const merging = lineCheck([{ key: 'a', type: 'text', def: { kind: 'string' } }], 1000, ['a']);
    assert.notEqual(merging('{"a":""}', 8), undefined);
    assert.equal(merging('{"a":"k"}', 9), undefined);
  });

  test("DuckDB's JSON writer spells a nested value as JSON.stringify does, where the check keeps it", async () => {
    // Numbers of every size and precision, texts with every escape JSON.stringify writes short.
    const values: unknown[] = [];
    for (let i = 0; i < 3000; i++) {
      const x = Math.random() * 10 ** ((i % 24) - 8);
      values.push([Number(x.toFixed(i % 16)), -Number(x.toPrecision(1 + (i % 15))), i]);
    }
    values.push(
      ['a\bb', 'a\fb', 'a\nb', 'a\rb', 'a\tb', 'a/b', 'a\\b', 'a"b', 'é', '\u2028', '😀'],
      { z: 1, a: [true, false, null], m: { k: 0.000001 } },
    );
    const check = lineCheck([{ key: 'v', type: 'json', def: { kind: 'list', of: 'string' } }], 1e6);
    let compared = 0;
    for (const value of values) {
      const line = JSON.stringify({ v: value });
      const j = JSON.stringify(value);
      // The escaped quote is refused by the check of a list's text; the writers are compared still.
      if (check(line, Buffer.byteLength(line)) !== undefined && !j.includes('\\"')) continue;
      const result = await scratch
        .conn()
        .runAndReadAll(
          `SELECT CAST(json_extract('${line.replaceAll("'", "''")}', '$.v') AS VARCHAR)`,
        );
      assert.equal((result.getRowsJS() as [string][])[0]![0], j);
      compared++;
    }
    assert.ok(compared > 1000, `${compared} values compared`);
  });

  test('the scan of a line takes none the check refuses: the lines the service writes, changed in every way the checks look at', () => {
    const fields = Object.entries(props).map(([key, def]) => ({
      key,
      type: declaredColumnType(def),
      def,
    }));
    const dataset = new Dataset({ seed: 7, scale: 0.05 });
    let seed = 41;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const pick = <T>(items: readonly T[]) => items[random(items.length)]!;
    const VALUES = [
      '2.0',
      '1e5',
      '1E5',
      '-0',
      '-0.0',
      '0.0000001',
      '0.000001',
      '12345678901234567',
      '1234567890123456',
      '123456789012345',
      '1.50',
      '0.1',
      '-12.25',
      '007',
      '"12"',
      '"1991.0"',
      'true',
      'false',
      'null',
      '[]',
      '""',
      '{}',
      '"a\\"b"',
      '"[]"',
      '"x]"',
      '"\\u0041"',
      '"\\/"',
      '"a\\nb"',
      '"2021-02-30T00:00:00Z"',
      '"2021-02-29"',
      '"2020-02-29T23:59:59Z"',
      '"2020-02-29"',
      '"0000-01-01T00:00:00Z"',
      '"2021-01-01T24:00:00Z"',
      '"true"',
      '"TRUE"',
      '["a"]',
      '[1]',
      '["2021-02-30"]',
      '["2020-01-01T00:00:00Z"]',
      '[{"date":"2021-02-30"}]',
      '[{"isSale":"true"}]',
      '[{"amountMax":"12"}]',
      '[{"dateSeen":"2021-01-01"}]',
      '[[1]]',
      '[{"7":1}]',
      '{"a":[]}',
      '[{"":1}]',
      '["a",""]',
      '[true,null]',
      '[1,"x"]',
      '"a\\\\u"',
      '"é1"',
      '[{"größe":"12"}]',
    ];
    const KEYS = [
      '"date"',
      '"dateSeen"',
      '"isSale"',
      '"amountMax"',
      '"7"',
      '""',
      '"a[]"',
      '"x\\"y"',
      '"3d"',
      '"größe"',
    ];
    const TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null/g;
    /** One change of `line`: a value, a key, a key twice, a space, a character less. */
    const change = (line: string): string => {
      const tokens = [...line.matchAll(TOKEN)];
      const at = pick(tokens);
      const start = at.index!;
      const end = start + at[0].length;
      const isKey = line[end] === ':';
      switch (random(6)) {
        case 0:
        case 1:
          return line.slice(0, start) + (isKey ? pick(KEYS) : pick(VALUES)) + line.slice(end);
        case 2: {
          // The member again (a key twice), or a key of the catalogue's nested objects.
          if (!isKey) return `${line.slice(0, start)}${pick(VALUES)}${line.slice(end)}`;
          const next = line.indexOf(',', end);
          const member = next < 0 ? '' : line.slice(start, next + 1);
          return line.slice(0, start) + member + line.slice(start);
        }
        case 3:
          return `${line.slice(0, end)} ${line.slice(end)}`;
        case 4:
          return line.slice(0, start) + line.slice(start + 1);
        default:
          return `${line.slice(0, start)}${pick(KEYS)}:${pick(VALUES)},${line.slice(start)}`;
      }
    };
    for (const keyed of [[], ['id']]) {
      const scan = lineScan(fields, 100_000, keyed);
      const check = lineCheck(fields, 100_000, keyed);
      let taken = 0;
      let changedTaken = 0;
      for (let i = 0; i < 400; i++) {
        const line = JSON.stringify(dataset.record('properties', i));
        const verdict = check(line, Buffer.byteLength(line));
        // The service's own lines: the scan decides them, as the check does.
        assert.equal(scan(Buffer.from(line)), verdict, line);
        if (verdict === undefined) taken++;
        let changed = line;
        for (let n = 0; n < 12; n++) {
          changed = random(3) === 0 ? change(line) : change(changed);
          const scanned = scan(Buffer.from(changed));
          if (scanned === UNSURE) continue;
          const checked = check(changed, Buffer.byteLength(changed));
          if (scanned === undefined) {
            assert.equal(checked, undefined, `the scan took what the check refuses: ${changed}`);
            changedTaken++;
          }
        }
      }
      assert.equal(taken, 400, `${taken} of the service's lines taken`);
      // Enough changed lines taken that the rule is tried where it matters.
      assert.ok(changedTaken > 200, `${changedTaken} changed lines taken`);
    }
  });
});
