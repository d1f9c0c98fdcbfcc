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

  /** The line numbers a reject's reason names ("... at line N"). */
  const linesIn = (reason: string) =>
    [...reason.matchAll(/\bline (\d+)/g)].map((m) => Number(m[1]));

  for (const [eol, name] of [
    ['\n', 'LF'],
    ['\r\n', 'CRLF'],
  ] as const) {
    it(`rejects and their reasons name lines of the file, far into it and after multi-line cells (${name})`, async () => {
      // Over half a megabyte: parsed in several blocks. Every 997th record has a cell of three
      // lines, so a record's line is not its number plus one.
      const lines = ['id,city'];
      for (let i = 1; i <= 20_000; i++) {
        if (i % 997 === 0) lines.push(`m${i},"multi${eol}line${eol}cell"`);
        else if (i === 3 || i === 15_000) lines.push(`b${i},"bro"ken`);
        else if (i === 16_000) lines.push(`u${i},"unclosed`);
        else if (i === 17_000) lines.push(`q${i},"a${eol}b"c`);
        else lines.push(`r${i},${'c'.repeat(20)}`);
      }
      const text = `${lines.join(eol)}${eol}`;
      const lineOf = (i: number) => i + 1 + 2 * Math.floor((i - 1) / 997);
      const { rows, rejects } = await collect(
        recordBatches(chunked(text, 4096), 'csv', 'properties', { batchSize: 1000 }),
      );
      const lineOfRow = (id: string) => rows.find((r) => r.row.id === id)?.line;
      // Read again after the unclosed quote of record 16000 was rejected.
      assert.equal(lineOfRow('m16949'), lineOf(16_949));
      // Record 17000 has two lines.
      assert.equal(lineOfRow('r19999'), lineOf(19_999) + 1);
      assert.deepEqual(
        rejects.slice(0, 4).map((r) => [r.raw.split(',')[0], r.line, linesIn(r.reason)]),
        [
          ['b3', lineOf(3), [lineOf(3)]],
          ['b15000', lineOf(15_000), [lineOf(15_000)]],
          // The quote left open pairs with the next one in the file, which opens the cell of
          // record 16949; the text after it is no delimiter. Lines after the reject's own are
          // read again as records.
          ['u16000', lineOf(16_000), [lineOf(16_949)]],
          // The closing quote on the record's second line is followed by text.
          ['q17000', lineOf(17_000), [lineOf(17_000) + 1]],
        ],
      );
      assert.match(rejects[0]!.reason, /^Invalid Closing Quote: got "k" at line 4 /);
    });
  }

  it('a CR inside a cell is not a line end in the line a reason names', async () => {
    const { rejects } = await collect(
      recordBatches(
        chunked('id,city\r\n1,"a\rb"c\r\n2,x\r\n3,"d\r\ne\rf"g\r\n4,y\r\n5,h\ri"j\n'),
        'csv',
        'properties',
      ),
    );
    assert.deepEqual(
      rejects.map((r) => [r.line, linesIn(r.reason)]),
      [
        [2, [2]],
        // Record 3's quote closes on line 5; that line is then read again as a record.
        [4, [5]],
        [5, [5]],
        [7, [7]],
      ],
    );
  });

  for (const [eol, name] of [
    ['\n', 'LF'],
    ['\r\n', 'CRLF'],
  ] as const) {
    it(`a quote still open after megabytes says at which line of the file it gave up (${name})`, async () => {
      const lines = ['id,city', '0,"unclosed'];
      // Long lines: after the reject, the rest of the text is read again one record at a time.
      for (let i = 1; i <= 1500; i++) lines.push(`r${i},${'c'.repeat(4000)}`);
      const text = lines.join(eol);
      const { rows, rejects } = await collect(
        recordBatches(chunked(text, 65_536), 'csv', 'properties'),
      );
      assert.equal(rows.length, 1500);
      assert.equal(rejects.length, 1);
      const { line, reason } = rejects[0]!;
      assert.equal(line, 2);
      // Not "the parsing is finished": only the text gathered to look for the quote ended.
      const m = /^Quote Not Closed: still open at line (\d+), ([\d,]+) characters further on$/.exec(
        reason,
      );
      assert.ok(m, reason);
      // The text it read from the start of line 2 ends within the line it names.
      const read = Number(m[2]!.replaceAll(',', ''));
      const startOf = (n: number) =>
        lines.slice(1, n - 1).reduce((sum, l) => sum + l.length + eol.length, 0);
      const at = Number(m[1]);
      assert.ok(startOf(at) < read && read <= startOf(at + 1), `${read} chars end in line ${at}`);
    });
  }

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
