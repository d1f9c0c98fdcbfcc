import { strict as assert } from 'node:assert';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { csvCell, csvRow } from '../../../src/emulator/render.js';
import { recordBatches } from '../../../src/records/index.js';
import type { RecordBatch } from '../../../src/records/types.js';
import { inferColumnType, widen } from '../../../src/schema/types.js';

/** A stream that hands over `text` in small chunks, so records straddle chunk boundaries. */
function chunked(text: string, size = 7): Readable {
  const buffer = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let i = 0; i < buffer.length; i += size) chunks.push(buffer.subarray(i, i + size));
  return Readable.from(chunks);
}

async function collect(batches: AsyncIterable<RecordBatch>) {
  const rows: RecordBatch['rows'] = [];
  const rejects: RecordBatch['rejects'] = [];
  let batchCount = 0;
  let bytes = 0;
  for await (const batch of batches) {
    batchCount++;
    rows.push(...batch.rows);
    rejects.push(...batch.rejects);
    bytes = batch.bytesRead;
  }
  return { rows, rejects, batchCount, bytes };
}

const records = [
  {
    id: 'p1',
    address: '1 Main St, Apt "B"',
    yearBuilt: 2022,
    numBathroom: 2.5,
    floorSizeValue: 1800,
    dateAdded: '2021-05-01T10:00:00Z',
    prices: [{ amountMin: 100000, amountMax: 120000, currency: 'USD', isSale: true }],
    statuses: null,
    people: [{ name: 'Ann Lee', title: 'Owner', people_keys: ['k1', 'k2'] }],
    features: [{ key: 'Pool', value: ['Yes', 'Heated'] }],
  },
  {
    id: 'p2',
    address: 'line one\nline two',
    yearBuilt: 1999,
    numBathroom: 1,
    floorSizeValue: 900.5,
    dateAdded: '2020-01-01T00:00:00Z',
    prices: [],
    statuses: null,
    people: null,
    features: null,
  },
];
const columns = Object.keys(records[0]!);

function csvOf(real: boolean): string {
  return `${columns.join(',')}\n${records.map((r) => csvRow(columns, r, real)).join('')}`;
}
function ndjsonOf(): string {
  return records.map((r) => JSON.stringify(r)).join('\n');
}

describe('records', () => {
  it('decodes CSV (both wire forms) and NDJSON of the same records to the same rows', async () => {
    const contract = await collect(recordBatches(chunked(csvOf(false)), 'csv', 'properties'));
    const real = await collect(recordBatches(chunked(csvOf(true)), 'csv', 'properties'));
    const ndjson = await collect(recordBatches(chunked(ndjsonOf()), 'json', 'properties'));
    assert.deepEqual(contract.rejects, []);
    assert.deepEqual(real.rejects, []);
    assert.deepEqual(ndjson.rejects, []);
    const strip = (rows: RecordBatch['rows']) => rows.map((r) => r.row);
    assert.deepEqual(strip(real.rows), strip(contract.rows));
    assert.deepEqual(strip(ndjson.rows), strip(contract.rows));
    const [first, second] = contract.rows;
    assert.equal(first?.row.yearBuilt, 2022, '2022.0 is the number 2022');
    assert.equal(first?.row.numBathroom, 2.5);
    assert.equal(first?.row.address, '1 Main St, Apt "B"');
    assert.equal(first?.row.statuses, null);
    assert.deepEqual(JSON.parse(String(first?.row.prices)), records[0]!.prices);
    assert.deepEqual(JSON.parse(String(first?.row.features)), records[0]!.features);
    assert.equal(second?.row.address, 'line one\nline two');
    assert.equal(
      second?.row.prices,
      null,
      'an empty list is null, as CSV cannot tell it from a missing one',
    );
  });

  it('gives each row the line it starts on, counting quoted newlines', async () => {
    const { rows } = await collect(recordBatches(chunked(csvOf(false)), 'csv', 'properties'));
    assert.deepEqual(
      rows.map((r) => r.line),
      [2, 3],
    );
    const ndjson = await collect(recordBatches(chunked(`\n${ndjsonOf()}\n`), 'json', 'properties'));
    assert.deepEqual(
      ndjson.rows.map((r) => r.line),
      [2, 3],
    );
  });

  it('keeps malformed CSV lines aside with line, raw text and reason, and goes on', async () => {
    const text =
      'id,yearBuilt,prices\np1,2000,\nx0,x1,x2,x3\np2,2001,"[{""amountMin"": 5"\np3,2002,\n';
    const { rows, rejects } = await collect(recordBatches(chunked(text), 'csv', 'properties'));
    assert.deepEqual(
      rows.map((r) => r.row.id),
      ['p1', 'p3'],
    );
    assert.equal(rejects.length, 2);
    assert.deepEqual(rejects[0], {
      line: 3,
      raw: 'x0,x1,x2,x3',
      reason: 'expected 3 cells as in the header, got 4',
    });
    assert.equal(rejects[1]?.line, 4);
    assert.match(rejects[1]?.reason ?? '', /not valid JSON/);
    assert.equal(rejects[1]?.raw, 'p2,2001,"[{""amountMin"": 5"');
  });

  it('keeps a CSV quoting error aside with what the parser said', async () => {
    const text = 'id,city\np1,Austin\np2,"Dal"las\n';
    const { rows, rejects } = await collect(recordBatches(chunked(text), 'csv', 'properties'));
    assert.deepEqual(
      rows.map((r) => r.row.id),
      ['p1'],
    );
    assert.ok(rejects.length >= 1);
    assert.equal(rejects[0]?.line, 3);
    assert.match(rejects[0]?.reason ?? '', /quote/i);
    assert.match(rejects[0]?.raw ?? '', /p2,"Dal"/);
  });

  it('a broken quote costs only its own record: the lines after it are read again', async () => {
    const text = 'id,city\n1,x\n2,"bro"ken\n3,y\n4,"unclosed\n5,z\n6,"multi\nline"\n7,w';
    const { rows, rejects } = await collect(recordBatches(chunked(text), 'csv', 'properties'));
    assert.deepEqual(
      rows.map((r) => [r.line, r.row.id, r.row.city]),
      [
        [2, '1', 'x'],
        [4, '3', 'y'],
        [6, '5', 'z'],
        [7, '6', 'multi\nline'],
        [9, '7', 'w'],
      ],
    );
    assert.deepEqual(
      rejects.map((r) => [r.line, r.raw]),
      [
        [3, '2,"bro"ken'],
        [5, '4,"unclosed'],
      ],
    );
    assert.match(rejects[0]!.reason, /Invalid Closing Quote.* at line 3 /);
    assert.match(rejects[1]!.reason, /quote/i);
  });

  it('every record of a large file is loaded or rejected, across blocks and chunks', async () => {
    const lines = ['id,city'];
    const broken = new Set([700, 4200, 9100]);
    for (let i = 1; i <= 12_000; i++) {
      if (broken.has(i)) lines.push(`r${i},"unclosed ${'x'.repeat(40)}`);
      else if (i % 1000 === 0) lines.push(`r${i},"two\nlines, ""quoted"""`);
      else lines.push(`r${i},${'c'.repeat(40)}`);
    }
    const text = `${lines.join('\n')}\n`;
    const { rows, rejects } = await collect(
      recordBatches(chunked(text, 4096), 'csv', 'properties', { batchSize: 500 }),
    );
    assert.equal(rows.length + rejects.length, 12_000);
    assert.deepEqual(
      rejects.map((r) => r.raw.split(',')[0]),
      ['r700', 'r4200', 'r9100'],
    );
    // Each record's line is where it starts in the file: one more per two-line record before it.
    const lineOf = (i: number) => i + 1 + Math.floor((i - 1) / 1000);
    for (const row of rows) {
      const i = Number((row.row.id as string).slice(1));
      assert.equal(row.line, lineOf(i), `line of ${row.row.id}`);
    }
    assert.deepEqual(
      rejects.map((r) => r.line),
      [700, 4200, 9100].map(lineOf),
    );
    assert.equal(rows.find((r) => r.row.id === 'r2000')?.row.city, 'two\nlines, "quoted"');
  });

  it('reads the last record without a newline whatever the chunks; batches keep their size', async () => {
    const lines = ['id,city'];
    for (let i = 1; i <= 6000; i++) lines.push(`r${i},${'c'.repeat(40)}`);
    const text = lines.join('\n');
    for (const size of [Buffer.byteLength(text), 65_536, 4096]) {
      const { rows, rejects, batchCount } = await collect(
        recordBatches(chunked(text, size), 'csv', 'properties', { batchSize: 500 }),
      );
      assert.equal(rows.length, 6000, `chunks of ${size}`);
      assert.equal(rejects.length, 0);
      assert.equal(rows.at(-1)?.row.id, 'r6000');
      assert.equal(batchCount, 12, 'batches of 500 rows');
    }
    // An unclosed quote early in a large file costs its line, not the rest of the file.
    const broken = [lines[0], '0,"unclosed', ...lines.slice(1)].join('\n');
    const { rows, rejects } = await collect(
      recordBatches(chunked(broken, Buffer.byteLength(broken)), 'csv', 'properties'),
    );
    assert.equal(rows.length, 6000);
    assert.deepEqual(
      rejects.map((r) => [r.line, r.raw]),
      [[2, '0,"unclosed']],
    );
  });

  it('skips blank lines, before the header too; a broken header fails the file', async () => {
    const { rows } = await collect(
      recordBatches(chunked('\nid\r\n1\n\n2\r\n\r\n'), 'csv', 'properties'),
    );
    assert.deepEqual(
      rows.map((r) => [r.line, r.row.id]),
      [
        [3, '1'],
        [5, '2'],
      ],
    );
    await assert.rejects(
      collect(recordBatches(chunked('id,"city\n1,x\n2,y\n'), 'csv', 'properties')),
      /header line of the file cannot be read/,
    );
  });

  it("says where a quote breaks in a record's later line", async () => {
    const { rejects } = await collect(
      recordBatches(chunked('id,city\n1,"a\nb"c\n2,d\n'), 'csv', 'properties'),
    );
    assert.equal(rejects[0]?.line, 2);
    assert.match(rejects[0]?.reason ?? '', /at line 3\b/);
  });

  it('keeps broken NDJSON lines aside and goes on', async () => {
    const text =
      '{"id":"a"}\n{"id": "broken-1", "address": "12 Truncated St\n[1,2]\n{"id":"b"}\r\n';
    const { rows, rejects } = await collect(recordBatches(chunked(text, 5), 'json', 'properties'));
    assert.deepEqual(
      rows.map((r) => [r.line, r.row.id]),
      [
        [1, 'a'],
        [4, 'b'],
      ],
    );
    assert.deepEqual(
      rejects.map((r) => [r.line, r.raw.slice(0, 17)]),
      [
        [2, '{"id": "broken-1"'],
        [3, '[1,2]'],
      ],
    );
    assert.match(rejects[0]?.reason ?? '', /not valid JSON/);
    assert.equal(rejects[1]?.reason, 'not a JSON object');
  });

  it('batches by size and reports the bytes read', async () => {
    const lines = Array.from({ length: 25 }, (_, i) => JSON.stringify({ id: `r${i}` })).join('\n');
    const { rows, batchCount, bytes } = await collect(
      recordBatches(chunked(lines, 64), 'json', 'properties', { batchSize: 10 }),
    );
    assert.equal(rows.length, 25);
    assert.ok(batchCount >= 3, `batches: ${batchCount}`);
    assert.equal(bytes, Buffer.byteLength(lines));
  });

  it('strips a byte-order mark and accepts CRLF line ends in CSV', async () => {
    const text = '\uFEFFid,yearBuilt\r\np1,1990.0\r\n';
    const { rows } = await collect(recordBatches(chunked(text), 'csv', 'properties'));
    assert.deepEqual({ ...rows[0]?.row }, { id: 'p1', yearBuilt: 1990 });
  });

  it('writes a CSV cell the way the service does', () => {
    assert.equal(csvCell(['a', 'b'], false), '"a,b"');
  });
});

describe('column types', () => {
  it('infers from the value and the catalogue hint', () => {
    assert.equal(inferColumnType(true), 'boolean');
    assert.equal(inferColumnType(3), 'integer');
    assert.equal(inferColumnType(3, { kind: 'number' }), 'real');
    assert.equal(inferColumnType(3.5), 'real');
    assert.equal(inferColumnType('2021-05-01T10:00:00Z', { kind: 'date' }), 'timestamp');
    assert.equal(inferColumnType('last week', { kind: 'date' }), 'text');
    assert.equal(inferColumnType('[]', { kind: 'list', of: 'string' }), 'json');
    assert.equal(inferColumnType('01234', { kind: 'string' }), 'text');
    assert.equal(inferColumnType('x'), 'text');
  });

  it('widens along boolean < integer < real < text', () => {
    assert.equal(widen('integer', 'integer'), 'integer');
    assert.equal(widen('boolean', 'integer'), 'integer');
    assert.equal(widen('integer', 'real'), 'real');
    assert.equal(widen('real', 'boolean'), 'real');
    assert.equal(widen('integer', 'text'), 'text');
    assert.equal(widen('timestamp', 'text'), 'text');
    assert.equal(widen('json', 'integer'), 'text');
  });
});
