import { strict as assert } from 'node:assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FIELDS } from '../../../src/catalog.js';
import { Dataset } from '../../../src/emulator/data/dataset.js';
import { csvCell } from '../../../src/emulator/render.js';
import {
  CellCutter,
  csvCellValue,
  csvHeader,
  csvLineCheck,
} from '../../../src/load/duckdb/csv-scan.js';
import type { CheckedField } from '../../../src/load/duckdb/line-checks.js';
import { columnOf } from '../../../src/load/duckdb/read-checks.js';
import { csvRecordsOf } from '../../../src/load/duckdb/read-file.js';
import { csvBlock } from '../../../src/records/csv.js';
import { jsonColumns } from '../../../src/records/shape.js';
import { duckDbScratch } from '../../helpers/duckdb-scratch.js';

/**
 * The CSV lines DuckDB may read itself (src/load/duckdb/csv-scan.ts): for every line the check
 * takes, `read_csv` and the cell's SQL give the value sluice's own reading (records/csv.ts)
 * writes; what sluice would reject, widen or read otherwise is in doubt.
 */

const scratch = duckDbScratch('sluice-csv-checks-');

const props = FIELDS.properties;
const fieldOf = (key: string): CheckedField => {
  const def = Object.hasOwn(props, key) ? props[key] : undefined;
  return { key, type: columnOf(def), ...(def ? { def } : {}) };
};

/** The value sluice's own reading of a one-column file writes, or why it rejects the line. */
function sluiceReads(key: string, line: string): { value: unknown } | { rejected: string } {
  const { reader } = csvBlock(
    `${key}\n${line}\n`,
    1,
    { final: true, forced: false, columns: undefined },
    'properties',
    jsonColumns,
  );
  if (reader.rejects.length > 0) return { rejected: reader.rejects[0]!.reason };
  assert.equal(reader.rows.length, 1, line);
  return { value: reader.rows[0]!.row[key] ?? null };
}

/** What DuckDB reads of the line's cell as read-file.ts reads a file. */
async function duckdbReads(field: CheckedField, line: string): Promise<unknown> {
  const path = join(scratch.dir(), 'one.csv');
  writeFileSync(path, `${field.key}\n${line}\n`);
  const result = await scratch
    .conn()
    .runAndReadAll(`SELECT ${csvCellValue('c0', field)} FROM ${csvRecordsOf(path, 1, 10_000)}`);
  const rows = result.getRowsJS() as [unknown][];
  assert.equal(rows.length, 1, line);
  return rows[0]![0];
}

/** Whether DuckDB's value `got` is sluice's `value`, in a column of `field`'s type. */
function same(field: CheckedField, value: unknown, got: unknown): boolean {
  if (value === null || got === null) return value === got;
  switch (field.type) {
    case 'integer':
      return (typeof value === 'number' || typeof value === 'bigint') && BigInt(value) === got;
    case 'real':
      return typeof value === 'number' && value === got;
    case 'timestamp':
      return typeof value === 'string' && (got as Date).getTime() === Date.parse(value);
    default:
      return value === got;
  }
}

/** Checks one line of one field: in doubt, or read alike. Returns whether it was taken. */
async function taken(key: string, line: string): Promise<boolean> {
  const field = fieldOf(key);
  if (csvLineCheck([field], 10_000)(Buffer.from(line)) !== undefined) return false;
  const sluice = sluiceReads(key, line);
  assert.ok(
    'value' in sluice,
    `${key}: ${line} taken, but sluice rejects it: ${JSON.stringify(sluice)}`,
  );
  const got = await duckdbReads(field, line);
  assert.ok(
    same(field, sluice.value, got),
    `${key}: ${line}: sluice writes ${JSON.stringify(String(sluice.value))}, DuckDB ${String(got)}`,
  );
  return true;
}

describe('what DuckDB reads of a CSV line as sluice reads it', () => {
  test('cells as the service writes them are taken, and read alike', async () => {
    const cases: [string, string][] = [
      ['address', '6277 Prospect Rd'],
      ['address', '"Flat 2, ""The Mews"""'],
      ['address', 'é😀/\\'],
      ['yearBuilt', '1991'],
      ['yearBuilt', '1991.0'],
      ['mostRecentPriceAmount', '1217000'],
      ['mostRecentPriceAmount', '1.5'],
      ['latitude', '-12.25'],
      ['dateAdded', '2021-03-04T05:06:07Z'],
      ['keys', '"a,b,c"'],
      ['keys', 'one'],
      ['keys', '"a,b"'],
      ['sourceURLs', 'https://x.example/a?b=1'],
      ['features', csvCell([{ key: 'Pool', value: ['yes'] }], false)],
      [
        'prices',
        csvCell([{ amountMax: 12, isSale: false, dateSeen: ['2021-01-01T00:00:00Z'] }], false),
      ],
    ];
    for (const [key, line] of cases) {
      assert.ok(Object.hasOwn(props, key), key);
      assert.ok(await taken(key, line), `${key}: ${line} is in doubt`);
    }
  });

  test('cells sluice would reject, widen or read otherwise are in doubt', async () => {
    const cases: [string, string][] = [
      ['yearBuilt', '1991.5'],
      ['yearBuilt', 'abc'],
      ['yearBuilt', '12345678901234567'],
      ['yearBuilt', '1e3'],
      ['mostRecentPriceAmount', '1E5'],
      ['dateAdded', '2021-02-30T00:00:00Z'],
      ['dateAdded', '2021-02-03'],
      ['address', 'a"b'],
      ['address', '"a"b'],
      ['address', '"a'],
      ['address', 'a\rb'],
      ['address', 'a\u0000b'],
      ['address', 'a\\u0000b'],
      ['keys', '"a,,b"'],
      ['keys', '[a'],
      ['keys', '"[a,b"'],
      ['keys', '"a,""b"'],
      ['keys', '[ "a"]'],
      ['features', 'null'],
      ['features', '[{"key":"a","key":"b"}]'],
      ['features', '{"key": 1}'],
      ['features', 'plain'],
      ['keys', '[tru'],
      ['features', '"[{""a"":fals"'],
    ];
    for (const [key, line] of cases) {
      assert.ok(Object.hasOwn(props, key), key);
      assert.equal(await taken(key, line), false, `${key}: ${line} was taken`);
    }
    // Cells not as many as the header's, an empty line, and bytes not UTF-8.
    const two = [fieldOf('address'), fieldOf('city')];
    assert.match(csvLineCheck(two, 100)(Buffer.from('a,b,c'))!, /more cells/);
    assert.match(csvLineCheck(two, 100)(Buffer.from('a'))!, /1 cells/);
    assert.match(csvLineCheck(two, 100)(Buffer.from(''))!, /empty/);
    assert.match(csvLineCheck(two, 100)(Buffer.from([0x61, 0x2c, 0xff]))!, /UTF-8/);
    assert.match(csvLineCheck(two, 2)(Buffer.from('a,b'))!, /size limit/);
    assert.equal(csvLineCheck(two, 3)(Buffer.from('a,b')), undefined);
  });

  test('every field of the records the service writes, and those cells changed, is in doubt or read alike', async () => {
    const dataset = new Dataset({ seed: 11, scale: 0.05 });
    let seed = 7;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const CHANGES = [
      '',
      '2.0',
      '-0',
      '007',
      '1.50',
      'True',
      'TRUE',
      'yes',
      '2021-02-29',
      'a,,b',
      '[]',
      '[1]',
      '["a"]',
      'null',
      '{}',
      ' 1',
      '1,x',
      'true,False',
      '"x"',
    ];
    let seen = 0;
    let took = 0;
    for (let i = 0; i < 40; i++) {
      const record = dataset.record('properties', i) as Record<string, unknown>;
      for (const [key, value] of Object.entries(record)) {
        if (!Object.hasOwn(props, key)) continue;
        const cells = [csvCell(value, false), csvCell(value, true)];
        cells.push(csvCell(CHANGES[random(CHANGES.length)], false));
        for (const cell of cells) {
          seen++;
          if (await taken(key, cell)) took++;
        }
      }
    }
    assert.ok(seen > 500 && took > seen / 2, `${took} of ${seen} taken`);
  });

  test('a line is cut into its cells as csv-parse cuts it, or is in doubt', () => {
    const csvCells = (line: string) => {
      const cells: string[] = [];
      const cut = new CellCutter().cut(Buffer.from(line), 10, (b, start, end) => {
        cells.push(b.toString('utf8', start, end));
        return undefined;
      });
      return typeof cut === 'string' ? cut : cells;
    };
    assert.deepEqual(csvCells('a,"b,c",,"d""e"'), ['a', 'b,c', '', 'd"e']);
    assert.deepEqual(csvCells(''), ['']);
    assert.deepEqual(csvCells('a,'), ['a', '']);
    assert.deepEqual(csvCells('"",x'), ['', 'x']);
    assert.match(csvCells('"a"b') as string, /after a closing quote/);
    assert.match(csvCells('a"b') as string, /inside a cell/);
    assert.deepEqual(csvHeader(Buffer.from('id,name')), ['id', 'name']);
    assert.match(csvHeader(Buffer.from('id,id')) as string, /twice/);
    assert.match(csvHeader(Buffer.from('id,_sluice_x')) as string, /sluice names/);
  });
});
