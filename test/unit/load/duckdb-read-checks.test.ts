import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import type { DuckDBConnection } from '@duckdb/node-api';
import { FIELDS } from '../../../src/catalog.js';
import { cellOf, columnOf, lineKept } from '../../../src/load/duckdb/read-checks.js';

/**
 * The cells DuckDB may read itself (src/load/duckdb/read-checks.ts): what sluice's decoding
 * would change, refuse or widen is in doubt; what it keeps as sent reads alike.
 */

let conn: DuckDBConnection;
before(async () => {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  conn = await (await DuckDBInstance.create(':memory:')).connect();
  await conn.run("SET TimeZone = 'UTC'");
});
after(() => conn?.closeSync());

const props = FIELDS.properties;

/** Whether field `name`'s value `json` (its JSON text in a line) reads without doubt. */
async function reads(name: string, json: string): Promise<{ ok: boolean; value: unknown }> {
  const def = Object.hasOwn(props, name) ? props[name] : undefined;
  const { ok, value } = cellOf('c', columnOf(def), def);
  const line = `{${JSON.stringify(name)}:${json}}`.replaceAll("'", "''");
  const result = await conn.runAndReadAll(
    `SELECT ${ok}, CAST(${value} AS VARCHAR) FROM (SELECT json_extract('${line}', ${`'$.${JSON.stringify(name)}'`}) AS c)`,
  );
  const [row] = result.getRowsJS() as [boolean, unknown][];
  return { ok: row![0], value: row![1] };
}

describe('what DuckDB reads of a line as sluice decodes it', () => {
  test('fields of the catalogue, as the service sends them, read alike', async () => {
    const cases: [string, string, unknown][] = [
      ['address', '"6277 Prospect Rd"', '6277 Prospect Rd'],
      ['yearBuilt', '1991', '1991'],
      ['yearBuilt', '1991.0', '1991'],
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

  test('a line not an object, with a key twice or not known, a NUL, or too long, is in doubt', async () => {
    const kept = async (line: string) => {
      const l = `'${line.replaceAll("'", "''")}'`;
      const result = await conn.runAndReadAll(
        `SELECT ${lineKept(l, `json_keys(${l})`, 1000, ["'a'", "'b'"])}`,
      );
      return (result.getRowsJS() as [boolean][])[0]![0];
    };
    assert.equal(await kept('{"a":1.5,"b":"x \\" y"}'), true);
    for (const line of [
      '{"a":1,"a":2}',
      '{"c":1}',
      '[1]',
      '{"a":"\\u0000"}',
      `{"a":"${'x'.repeat(1000)}"}`,
    ]) {
      assert.equal(await kept(line), false, line);
    }
  });
});
