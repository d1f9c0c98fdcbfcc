import { strict as assert } from 'node:assert';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { csvRow } from '../../src/emulator/render.js';
import { parseWorkers, warmParsers } from '../../src/pipeline/load/normalize.js';
import { packBatch, packedBatches, recordBatches } from '../../src/records/index.js';
import { tooLongReason } from '../../src/records/record-size.js';
import { JobTables, type ShapePlan } from '../../src/records/tables.js';
import type { PackedBatch, RecordBatch } from '../../src/records/types.js';
import { ParserPool, SpareWorkers } from '../../src/records/workers/parallel.js';
import { plainRows } from '../../src/schema/copy-text.js';
import { type Row, unpackRow } from '../../src/schema/types.js';
import { propertiesPlan } from '../helpers/pipeline.js';

const plan = propertiesPlan('format: csv\nauto_trace: true');
/** A CSV file of `plan` parsed into batches of 500 rows, at most two blocks ahead. */
const CSV_REQUEST = { format: 'csv' as const, plan, batchSize: 500, maxBuffered: 2 };

function csvFile(n: number): string {
  const columns = ['id', 'yearBuilt', 'prices', 'people'];
  let text = `${columns.join(',')}\n`;
  for (let i = 0; i < n; i++) {
    if (i % 97 === 5) {
      text += 'broken,row,with,too,many,cells\n';
      continue;
    }
    text += csvRow(
      columns,
      {
        id: `p${i}`,
        yearBuilt: 1950 + (i % 70),
        prices: [{ amountMin: i * 10, currency: 'USD' }],
        people: [
          {
            name: `Owner ${i}`,
            title: 'owner',
            firstName: 'A',
            lastName: `B${i % 13}`,
            people_keys: [`a/b${i % 13}/x`],
          },
        ],
      },
      true,
    );
  }
  return text;
}

/** A source that hands the text over in uneven chunks. */
function source(text: string): Readable {
  return sourceOf(Buffer.from(text));
}

function sourceOf(buffer: Buffer): Readable {
  const chunks: Buffer[] = [];
  for (let i = 0, size = 1000; i < buffer.length; i += size, size = (size * 7) % 5000 || 999) {
    chunks.push(buffer.subarray(i, i + size));
  }
  return Readable.from(chunks);
}

async function collect<B>(batches: AsyncIterable<B>) {
  const out: B[] = [];
  for await (const batch of batches) out.push(batch);
  return out;
}

/** Batches as the writing thread takes them, as parsing in this thread packs them. */
function packedHere(batches: RecordBatch[], tables: JobTables): PackedBatch[] {
  return batches.map((b) => packBatch(b, tables));
}

/** A CSV file of `plan` parsed in this thread, in batches of 500 rows, packed. */
async function csvHere(text: string): Promise<PackedBatch[]> {
  const tables = new JobTables(plan);
  const batches = recordBatches(source(text), 'csv', 'properties', {
    batchSize: 500,
    shape: tables.shape,
  });
  return packedHere(await collect(batches), tables);
}

/** A row's fields that hold a value (a batch's columns are those some row has a value in). */
function valuesOf(row: Row): Row {
  return Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null));
}

/** The related rows of record `index` of a batch, by table (undefined when it has none). */
function relatedOf(batch: PackedBatch, index: number): Map<string, Row[]> | undefined {
  const out = new Map<string, Row[]>();
  for (const group of batch.related ?? []) {
    const rows = group.parents.flatMap((p, i) =>
      p === index ? [valuesOf(unpackRow(group.rows, i))] : [],
    );
    if (rows.length > 0) out.set(group.table, rows);
  }
  return out.size > 0 ? out : undefined;
}

/** Every row of packed batches, whatever the batch boundaries. */
function flat(batches: PackedBatch[]) {
  return {
    rows: batches.flatMap((b) =>
      b.lines.map((line, i) => ({
        line,
        row: valuesOf(unpackRow(b.rows, i)),
        related: relatedOf(b, i),
      })),
    ),
    rejects: batches.flatMap((b) => b.rejects),
  };
}

/**
 * A file parsed each way a run parses one: in this thread, streamed to one worker, and cut into
 * blocks for two workers (blocks of 4 kB, so that a small file makes several, and rows as COPY
 * text, as for PostgreSQL); the rows and rejects of each way, by its name.
 */
async function everyWay(
  file: string | Buffer,
  format: 'csv' | 'json',
  shapePlan: ShapePlan,
  maxRecordBytes?: number,
) {
  const buffer = typeof file === 'string' ? Buffer.from(file) : file;
  const tables = new JobTables(shapePlan);
  const batches = packedBatches(sourceOf(buffer), format, tables, 500, maxRecordBytes);
  const ways: Record<string, ReturnType<typeof flat>> = {
    'this thread': flat(await collect(batches)),
  };
  for (const workers of [1, 2]) {
    const pool = new ParserPool(workers);
    try {
      const request = {
        format,
        plan: shapePlan,
        batchSize: 500,
        maxBuffered: 2,
        blockBytes: 4096,
        encoding: { name: 'copy-text' as const, keep: tables.keysRead() },
        ...(maxRecordBytes === undefined ? {} : { maxRecordBytes }),
      };
      const batches = await collect(pool.parse(sourceOf(buffer), request).batches);
      ways[`${workers} worker(s)`] = flat(batches.map((b) => ({ ...b, rows: plainRows(b.rows) })));
    } finally {
      await pool.close();
    }
  }
  return ways;
}

describe('parsing in worker threads', () => {
  it('workers kept between loads parse the next files as new ones would, also after a file given up', async () => {
    const text = csvFile(3000);
    const here = flat(await csvHere(text));
    const request = { ...CSV_REQUEST, blockBytes: 16 << 10 };
    const spares = new SpareWorkers(2);
    try {
      // Two workers taking blocks, then given back.
      const first = new ParserPool(2, 1, spares);
      assert.deepEqual(flat(await collect(first.parse(source(text), request).batches)), here);
      await first.close();
      assert.equal(spares.idle, 2, 'both kept');
      // One of them takes the next file streamed to it; the other stays kept.
      const streamed = new ParserPool(1, 1, spares);
      assert.deepEqual(flat(await collect(streamed.parse(source(text), request).batches)), here);
      assert.equal(spares.idle, 1);
      await streamed.close();
      // A file given up after its first batch (its load failed): blocks of it may still be on
      // their way to the workers, and the next file's rows are all its own.
      const givenUp = new ParserPool(2, 1, spares);
      const job = givenUp.parse(source(text), request);
      const iterator = job.batches[Symbol.asyncIterator]();
      assert.equal((await iterator.next()).done, false);
      job.cancel();
      await iterator.return?.(undefined);
      await givenUp.close();
      const next = new ParserPool(2, 1, spares);
      assert.deepEqual(flat(await collect(next.parse(source(text), request).batches)), here);
      await next.close();
      assert.ok(spares.idle <= 2, 'never more than its bound');
    } finally {
      await spares.close();
    }
    assert.equal(spares.idle, 0, 'ended with the run');
  });

  it('workers started ahead of a load (warm) parse its file; warmed only for several jobs or a large download', async () => {
    const text = csvFile(3000);
    const here = flat(await csvHere(text));
    const request = { ...CSV_REQUEST, blockBytes: 16 << 10 };
    const warmed = (jobs: number, records: number) => {
      const spares = new SpareWorkers(2);
      const ctx = {
        env: {},
        parsers: spares,
        spec: { jobs: Array.from({ length: jobs }) },
      } as unknown as Parameters<typeof warmParsers>[0];
      warmParsers(ctx, records);
      return spares;
    };
    // A pipeline of several jobs, or one large download: two workers wait for the load.
    for (const spares of [warmed(3, 100), warmed(1, 50_000)]) {
      try {
        assert.equal(spares.idle, 2);
        const pool = new ParserPool(parseWorkers({}, 100, spares.idle), 1, spares);
        assert.deepEqual(flat(await collect(pool.parse(source(text), request).batches)), here);
        await pool.close();
        assert.equal(spares.idle, 2, 'kept for the next load');
      } finally {
        await spares.close();
      }
    }
    // One small download: none started.
    const small = warmed(1, 100);
    assert.equal(small.idle, 0);
    await small.close();
  });

  it('writes the job rows as COPY text when asked (one worker or several), keeping the keys as values', async () => {
    const text = csvFile(3000);
    const here = flat(await csvHere(text));
    for (const workers of [1, 2]) {
      const pool = new ParserPool(workers);
      try {
        const request = {
          ...CSV_REQUEST,
          blockBytes: 16 << 10,
          encoding: { name: 'copy-text' as const, keep: ['id'] },
        };
        const batches = await collect(pool.parse(source(text), request).batches);
        for (const batch of batches.filter((b) => b.rows.count > 0)) {
          const { rows } = batch;
          assert.ok(rows.text, `${workers} worker(s): the batch is COPY text`);
          assert.ok(rows.text.bytes instanceof Uint8Array);
          assert.deepEqual(rows.names, ['id'], 'only the key stays a value');
          assert.equal(rows.values.length, rows.count);
        }
        const back = batches.map((b) => ({ ...b, rows: plainRows(b.rows) }));
        assert.deepEqual(flat(back), here, `${workers} worker(s): the same rows read back`);
      } finally {
        await pool.close();
      }
    }
  });

  it('gives exactly the batches of parsing in this thread, related rows included', async () => {
    const text = csvFile(3000);
    const here = await csvHere(text);
    // One worker: the file streamed to it, batch for batch as here; then the next file.
    const pool = new ParserPool(1);
    try {
      const request = CSV_REQUEST;
      const a = await collect(pool.parse(source(text), request).batches);
      const b = await collect(pool.parse(source(text), request).batches);
      // Byte counts come at other chunk boundaries; everything else is the same.
      const strip = (batches: PackedBatch[]) =>
        batches.map(({ rows, columns, lines, related, rejects }) => ({
          rows,
          columns,
          lines,
          related,
          rejects,
        }));
      assert.deepEqual(strip(a), strip(here));
      assert.deepEqual(strip(b), strip(here));
      assert.equal(a.at(-1)?.bytesRead, Buffer.byteLength(text));
      const rows = a.reduce((n, batch) => n + batch.rows.count, 0);
      const rejects = a.reduce((n, batch) => n + batch.rejects.length, 0);
      assert.equal(rows + rejects, 3000);
      assert.ok(rejects > 0);
      const people = a[0]?.related?.find((r) => r.table === 'people');
      assert.ok(people?.rows.count, 'autotrace people rows come across, packed');
      assert.equal(people.parents.length, people.rows.count, 'each with the record it came from');
      assert.ok(people.rows.names.includes('people_key'));
    } finally {
      await pool.close();
    }
  });

  it('an NDJSON file parsed by several workers at once gives the batches of one thread, in order', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 6000; i++) {
      if (i % 211 === 7) lines.push('{"id": broken');
      else if (i % 509 === 3) lines.push('');
      else
        lines.push(
          JSON.stringify({
            id: `p${i}`,
            yearBuilt: 1950 + (i % 70),
            // Big enough that the file makes several blocks of whole lines.
            address: `${i} ${'Long Street Name '.repeat(20)}`,
            prices: [{ amountMin: i * 10, currency: 'USD', date: '2021-02-03T04:05:06Z' }],
            people: [{ name: `Owner ${i}`, firstName: 'A', lastName: `B${i % 13}` }],
          }),
        );
    }
    const text = `${lines.join('\r\n')}\n`;
    const tables = new JobTables(plan);
    const here = packedHere(
      await collect(
        recordBatches(source(text), 'json', 'properties', { batchSize: 500, shape: tables.shape }),
      ),
      tables,
    );
    const pool = new ParserPool(3);
    try {
      const split = pool.parse(source(text), {
        format: 'json',
        plan,
        batchSize: 500,
        maxBuffered: 2,
      });
      const batches = await collect(split.batches);
      assert.ok(batches.length >= 3, 'several blocks');
      assert.deepEqual(flat(batches), flat(here));
      assert.equal(batches.at(-1)?.bytesRead, Buffer.byteLength(text));
      const seen = batches.map((b) => b.bytesRead);
      assert.deepEqual(
        seen,
        [...seen].sort((a, b) => a - b),
        'bytes read grow batch by batch',
      );
      assert.equal(flat(batches).rejects[0]?.line, 8);
      const columns = batches[0]!.columns;
      assert.equal(columns.get('yearBuilt'), 'integer', 'column types come with the batch');
      // The pool's workers are free again for the next file.
      const again = await collect(
        pool.parse(source(text), { format: 'json', plan, batchSize: 500, maxBuffered: 1 }).batches,
      );
      assert.deepEqual(flat(again), flat(here));
    } finally {
      await pool.close();
    }
  });

  it('a CSV file parsed by several workers at once gives the batches of one thread, broken quotes and all', async () => {
    const header = csvFile(0);
    const body = csvFile(1200).slice(header.length).split('\n').filter(Boolean);
    const lines: string[] = [];
    body.forEach((line, i) => {
      lines.push(line);
      if (i % 151 === 20) lines.push(`u${i},"unclosed quote, pairs with one further down`);
      if (i % 173 === 40) lines.push(`b${i},"bro"ken,x,y`);
      if (i % 97 === 11) lines.push(`m${i},1990,"[]","multi\r\nline ""cell"""`);
      if (i % 211 === 60) lines.push('');
      if (i % 307 === 70) lines.push(`n${i},1990,[],nul \u0000 here`);
    });
    const invalid = Buffer.from([0xe2, 0x82, 0x0a]); // a truncated UTF-8 character, then a newline
    const files = {
      hostile: Buffer.concat([
        Buffer.from(`\ufeff\r\n${header}${lines.slice(0, 600).join('\r\n')}\r\n`),
        invalid,
        Buffer.from(`${lines.slice(600).join('\n')}\n9,1990,[],"last record, no newline`),
      ]),
      // No record ends after an unclosed quote: read as one record, then again.
      unclosed: Buffer.from(
        header + `0,"unclosed\n${csvFile(2600).slice(header.length)}`.repeat(2),
      ),
    };
    const tables = new JobTables(plan);
    const next = csvFile(400);
    const nextHere = await collect(packedBatches(source(next), 'csv', tables, 500));
    for (const [name, text] of Object.entries(files)) {
      const here = await collect(packedBatches(sourceOf(text), 'csv', tables, 500));
      const pool = new ParserPool(3);
      try {
        // Blocks cut at every few records, every few hundred, and once; records with no end
        // read as one beyond 20 kB, and beyond 4 MB as in a run.
        for (const [blockBytes, maxRecordBytes] of [
          [700, 20_000],
          [5000, 20_000],
          [1 << 20, undefined],
        ]) {
          const request = { ...CSV_REQUEST, blockBytes, maxRecordBytes };
          const batches = await collect(pool.parse(sourceOf(text), request).batches);
          assert.deepEqual(flat(batches), flat(here), `${name}, blocks of ${blockBytes} bytes`);
          assert.equal(batches.at(-1)?.bytesRead, text.byteLength);
          // The next file on the same workers gets its own batches, whatever blocks of this one
          // were dropped after a broken record and parsed all the same.
          const after = await collect(pool.parse(source(next), request).batches);
          assert.deepEqual(flat(after), flat(nextHere), `the file after ${name}`);
        }
      } finally {
        await pool.close();
      }
      const { rows, rejects } = flat(here);
      assert.ok(rows.length > 1000 && rejects.length > 10, `${name}: rows and rejects`);
    }
  });

  it('NDJSON of nested: json is packed straight from its lines, as shaping then packing gives', async () => {
    const { autotrace: _, ...rest } = plan;
    const plain = { ...rest, nested: 'json' as const };
    const tables = new JobTables(plain);
    assert.equal(tables.plainJson, true);
    const lines: string[] = [];
    for (let i = 0; i < 3000; i++) {
      if (i % 97 === 5) lines.push('{"id": broken');
      else if (i % 89 === 3) lines.push('[1]');
      else if (i % 83 === 2) lines.push(JSON.stringify({ id: `p${i}`, dateAdded: '2021-02-30' }));
      else if (i % 301 === 4) lines.push('   ');
      else
        lines.push(
          JSON.stringify({
            id: `p${i}`,
            ...(i % 2 ? { yearBuilt: i % 3 ? 1950 + (i % 70) : `${1950 + (i % 70)}.0` } : {}),
            address: `${i} ${'Long Street Name '.repeat(40)}`,
            prices: i % 5 ? [{ amountMin: i * 10, currency: 'USD' }] : [],
            ...(i % 7 ? {} : { isNew: 'true', __proto__: 'x', constructor: i }),
            ...(i === 2999 ? { late: 'a column only the last row has' } : {}),
          }),
        );
    }
    const text = `${lines.join('\n')}\n`;
    const shaped = packedHere(
      await collect(
        recordBatches(source(text), 'json', 'properties', { batchSize: 500, shape: tables.shape }),
      ),
      tables,
    );
    const here = await collect(packedBatches(source(text), 'json', tables, 500));
    assert.deepEqual(flat(here), flat(shaped));
    assert.deepEqual(
      here.map((b) => b.bytesRead),
      shaped.map((b) => b.bytesRead),
    );
    assert.equal(here[0]!.columns.get('yearBuilt'), 'integer');
    assert.equal(flat(here).rejects.length, flat(shaped).rejects.length);
    for (const workers of [1, 3]) {
      const pool = new ParserPool(workers);
      try {
        const request = { format: 'json' as const, plan: plain, batchSize: 500, maxBuffered: 2 };
        assert.deepEqual(
          flat(await collect(pool.parse(source(text), request).batches)),
          flat(shaped),
        );
      } finally {
        await pool.close();
      }
    }
  });

  it('two files parsed at once share the workers, each getting its own batches; one given up half way leaves the other whole', async () => {
    const tables = new JobTables(plan);
    const texts = [csvFile(2500), csvFile(1800), csvFile(900)];
    const here = await Promise.all(
      texts.map(async (text) =>
        flat(await collect(packedBatches(source(text), 'csv', tables, 500))),
      ),
    );
    const pool = new ParserPool(2, 2);
    try {
      const request = { ...CSV_REQUEST, blockBytes: 8 << 10 };
      // Both files' batches are taken in turns, as two writers would take them.
      const a = pool.parse(source(texts[0]!), request);
      const b = pool.parse(source(texts[1]!), request);
      const [fromA, fromB] = await Promise.all([collect(a.batches), collect(b.batches)]);
      assert.ok(fromA.length > 5 && fromB.length > 5, 'each file in several blocks');
      assert.deepEqual(flat(fromA), here[0]);
      assert.deepEqual(flat(fromB), here[1]);
      // A file given up after its first batch (its load failed) does not disturb the one beside
      // it, and the workers stay for the next file: they are not stopped, only told to drop it.
      const dropped = pool.parse(source(texts[0]!), request);
      const kept = pool.parse(source(texts[1]!), request);
      const iterator = dropped.batches[Symbol.asyncIterator]();
      assert.equal((await iterator.next()).done, false);
      const keptBatches = collect(kept.batches);
      dropped.cancel();
      assert.equal((await iterator.next()).done, true, 'a file given up yields no more');
      assert.deepEqual(flat(await keptBatches), here[1]);
      const next = await collect(pool.parse(source(texts[2]!), request).batches);
      assert.deepEqual(flat(next), here[2]);
    } finally {
      await pool.close();
    }
  });

  it('a file given up half way frees its worker for the next one', async () => {
    const pool = new ParserPool(1);
    try {
      const request = { format: 'csv' as const, plan, batchSize: 100, maxBuffered: 1 };
      const first = pool.parse(source(csvFile(2000)), request);
      const iterator = first.batches[Symbol.asyncIterator]();
      assert.equal((await iterator.next()).done, false);
      first.cancel();
      const second = pool.parse(source(csvFile(300)), request);
      const batches = await collect(second.batches);
      assert.equal(
        batches.reduce((n, b) => n + b.rows.count + b.rejects.length, 0),
        300,
      );
    } finally {
      await pool.close();
    }
  });

  it('an NDJSON file that begins with a byte order mark keeps its first record, every way it is parsed', async () => {
    const lines = Array.from({ length: 300 }, (_, i) =>
      JSON.stringify({ id: `p${i}`, address: `${i} ${'Main Street '.repeat(10)}` }),
    );
    const text = `\ufeff${lines.join('\n')}\n`;
    for (const nested of ['json', 'tables']) {
      const ways = await everyWay(text, 'json', propertiesPlan(`nested: ${nested}`));
      for (const [way, { rows, rejects }] of Object.entries(ways)) {
        assert.deepEqual(rejects, [], `${nested}, ${way}`);
        assert.equal(rows.length, 300, `${nested}, ${way}`);
        assert.deepEqual(rows[0], {
          line: 1,
          row: { id: 'p0', address: `0 ${'Main Street '.repeat(10)}` },
          related: undefined,
        });
      }
    }
  });

  it('a record beyond the size limit is one reject with its size, never gathered, every way it is parsed', async () => {
    const limit = 5000;
    const reject = (line: number, text: string) => ({
      line,
      raw: text.slice(0, 10_000),
      reason: tooLongReason(Buffer.byteLength(text), limit),
    });
    // NDJSON: lines past the limit in one piece and over many chunks, one of characters of two
    // bytes, one ended by CRLF, one that ends the file; one at the limit exactly loads.
    const json = (id: string, address: string) => JSON.stringify({ id, address });
    const at = json('at', 'x'.repeat(limit - json('at', '').length));
    const long = {
      6: json('over', 'x'.repeat(limit)),
      40: json('huge', 'y'.repeat(60_000)),
      41: json('wide', 'é'.repeat(2600)),
      90: json('crlf', 'z'.repeat(30_000)),
      120: json('last', 'w'.repeat(70_000)),
    } as Record<number, string>;
    const lines: string[] = [];
    for (let n = 1; n <= 120; n++)
      lines.push(long[n] ?? (n === 7 ? at : json(`p${n}`, `${n} Main St`)));
    const ndjson = lines
      .map((l, i) => (i === 89 ? `${l}\r\n` : `${l}\n`))
      .join('')
      .slice(0, -1);
    for (const nested of ['json', 'tables']) {
      const ways = await everyWay(ndjson, 'json', propertiesPlan(`nested: ${nested}`), limit);
      for (const [way, { rows, rejects }] of Object.entries(ways)) {
        const what = `NDJSON, nested ${nested}, ${way}`;
        assert.deepEqual(
          rejects,
          Object.entries(long).map(([n, text]) => reject(Number(n), text)),
          what,
        );
        assert.equal(rows.length, 115, what);
        assert.equal(rows[6]?.line, 8, `${what}: lines are counted past a skipped one`);
        assert.equal(
          rows.find((r) => r.row.id === 'at')?.line,
          7,
          `${what}: a record at the limit loads`,
        );
      }
    }
    // CSV: a record of one line past the limit, unquoted and quoted, is one reject; the
    // records around it, one over several lines among them, load.
    const csvLong = {
      4: `u1,${'a'.repeat(40_000)}`,
      5: `q1,"${'b,'.repeat(20_000)}"`,
      9: `u2,${'c'.repeat(6000)}`,
    } as Record<number, string>;
    const csvLines = ['id,address'];
    for (let n = 2; n <= 60; n++) {
      csvLines.push(csvLong[n] ?? (n === 7 ? 'm1,"two\nlines"' : `c${n},${n} Elm Rd`));
    }
    const csv = `${csvLines.join('\n')}\n`;
    const ways = await everyWay(csv, 'csv', plan, limit);
    for (const [way, { rows, rejects }] of Object.entries(ways)) {
      assert.deepEqual(
        rejects,
        // The record of two lines moves the file lines of those after it by one.
        Object.entries(csvLong).map(([n, text]) =>
          reject(Number(n) + (Number(n) > 7 ? 1 : 0), text),
        ),
        `CSV, ${way}`,
      );
      assert.equal(rows.length, 56, `CSV, ${way}`);
      assert.deepEqual(rows.find((r) => r.row.id === 'm1')?.row.address, 'two\nlines');
      assert.equal(rows.at(-1)?.line, 61, `CSV, ${way}: lines are counted past a skipped one`);
    }
  });

  it('a line beyond the limit among blocks cut again after a broken quote: the rows and rejects of one thread', async () => {
    // The cutter takes the lines from the stray quote to the next quote for one record; its
    // worker rejects the first of them and the file is cut again from the line of that next
    // quote, with the blocks sent after it: among them, sooner or later, the line beyond the
    // limit, which must be sent again as it was.
    const limit = 20_000;
    const tables = new JobTables(plan);
    for (const between of [5, 40, 120]) {
      const lines = ['id,yearBuilt'];
      for (let i = 0; i < 300; i++) lines.push(`h${i},${1900 + (i % 100)}`);
      lines.push('0,"stray quote');
      for (let i = 1; i < 20; i++) lines.push(`a${i},${1900 + i}`);
      lines.push('x,1"9');
      for (let i = 0; i < between; i++) lines.push(`b${i},${1950 + (i % 50)}`);
      lines.push(`long,${'9'.repeat(30_000)}`);
      for (let i = 0; i < 300; i++) lines.push(`c${i},2000`);
      const text = Buffer.from(`${lines.join('\n')}\n`);
      const here = flat(await collect(packedBatches(sourceOf(text), 'csv', tables, 500, limit)));
      assert.deepEqual(
        here.rejects.map((r) => r.line),
        [302, 322, 323 + between],
        'the stray quote, the line of the next one, the line beyond the limit',
      );
      for (const workers of [2, 3]) {
        const pool = new ParserPool(workers);
        try {
          const request = { ...CSV_REQUEST, blockBytes: 200, maxRecordBytes: limit };
          const batches = await collect(pool.parse(sourceOf(text), request).batches);
          assert.deepEqual(flat(batches), here, `${workers} workers, ${between} lines between`);
          assert.equal(batches.at(-1)?.bytesRead, text.byteLength);
        } finally {
          await pool.close();
        }
      }
    }
  });

  it('numbers past a double: exact as bigints or rejected as written, top level and nested, every way a file is parsed', async () => {
    const lines = [
      '{"id":"p1","yearBuilt":9007199254740993,"prices":[{"amountMin":1.5,"listingId":9007199254740993}],"extra":{"big":9007199254740995}}',
      '{"id":"p2","yearBuilt":-9223372036854775808}',
      '{"id":"p3","yearBuilt":1e400}',
      '{"id":"p4","numBedroom":99999999999999999999999}',
      '{"id":"p5","floorSizeValue":1.5,"address":"1234567890123456789 Main St, Suite e400"}',
      '{"id":"p6","prices":[{"amountMin":1e-400}]}',
    ];
    const reasons = [
      {
        line: 3,
        reason: "yearBuilt: the number 1e400 cannot be stored exactly: beyond a double's range",
      },
      {
        line: 4,
        reason:
          'numBedroom: the number 99999999999999999999999 cannot be stored exactly: an integer beyond 64 bits',
      },
      {
        line: 6,
        reason:
          'prices.amountMin: the number 1e-400 cannot be stored exactly: a double rounds it to 0',
      },
    ];
    const ndjson = `${lines.join('\n')}\n`;
    for (const nested of ['json', 'tables'] as const) {
      const ways = await everyWay(ndjson, 'json', propertiesPlan(`nested: ${nested}`));
      for (const [way, { rows, rejects }] of Object.entries(ways)) {
        const what = `NDJSON, nested ${nested}, ${way}`;
        assert.deepEqual(
          rejects.map(({ line, reason }) => ({ line, reason })),
          reasons,
          what,
        );
        assert.deepEqual(
          rows.map((r) => r.row.id),
          ['p1', 'p2', 'p5'],
          what,
        );
        const [p1, p2, p5] = rows;
        assert.equal(p1!.row.yearBuilt, 9007199254740993n, what);
        assert.equal(p2!.row.yearBuilt, -9223372036854775808n, what);
        assert.equal(p5!.row.floorSizeValue, 1.5, what);
        assert.equal(p5!.row.address, '1234567890123456789 Main St, Suite e400', what);
        if (nested === 'json') {
          assert.equal(p1!.row.prices, '[{"amountMin":1.5,"listingId":9007199254740993}]', what);
          assert.equal(p1!.row.extra, '{"big":9007199254740995}', what);
        } else {
          assert.equal(p1!.row.extra__big, 9007199254740995n, what);
          assert.deepEqual(
            p1!.related?.get('homes__prices'),
            [{ _parent_id: 'p1', _position: 0, amountMin: 1.5, listingId: 9007199254740993n }],
            what,
          );
        }
      }
    }
    // CSV: number cells and numbers in JSON cells alike (a field the catalogue does not know
    // stays text, as ever).
    const columns = 'id,yearBuilt,numBedroom,prices';
    const csv = [
      columns,
      'p1,9007199254740993,,"[{""amountMin"":1.5,""listingId"":9007199254740993}]"',
      'p2,-9223372036854775808.0,,',
      'p3,1e400,,',
      'p4,,99999999999999999999999,',
      'p5,1999,1.5e0,',
      'p6,,,"[{""amountMin"":1e-400}]"',
    ].join('\n');
    const ways = await everyWay(`${csv}\n`, 'csv', plan);
    for (const [way, { rows, rejects }] of Object.entries(ways)) {
      assert.deepEqual(
        rejects.map(({ line, reason }) => ({ line, reason })),
        [
          {
            line: 4,
            reason: "yearBuilt: the number 1e400 cannot be stored exactly: beyond a double's range",
          },
          {
            line: 5,
            reason:
              'numBedroom: the number 99999999999999999999999 cannot be stored exactly: an integer beyond 64 bits',
          },
          {
            line: 7,
            reason:
              'prices: amountMin: the number 1e-400 cannot be stored exactly: a double rounds it to 0',
          },
        ],
        `CSV, ${way}`,
      );
      const [p1, p2, p5] = rows;
      assert.equal(p1!.row.yearBuilt, 9007199254740993n, `CSV, ${way}`);
      assert.deepEqual(
        p1!.related?.get('homes__prices'),
        [{ _parent_id: 'p1', _position: 0, amountMin: 1.5, listingId: 9007199254740993n }],
        `CSV, ${way}`,
      );
      assert.equal(p2!.row.yearBuilt, -9223372036854775808n, `CSV, ${way}`);
      assert.equal(p5!.row.numBedroom, 1.5, `CSV, ${way}`);
    }
  });

  it('a CSV header beyond the size limit fails the file as unreadable, every way it is parsed', async () => {
    const csv = `id,${'x'.repeat(9000)}\n1,2\n`;
    const tables = new JobTables(plan);
    await assert.rejects(
      collect(packedBatches(sourceOf(Buffer.from(csv)), 'csv', tables, 500, 5000)),
      /header line of the file cannot be read: a record of 9,003 bytes/,
    );
    for (const workers of [1, 2]) {
      const pool = new ParserPool(workers);
      try {
        const request = { ...CSV_REQUEST, blockBytes: 4096, maxRecordBytes: 5000 };
        await assert.rejects(
          collect(pool.parse(sourceOf(Buffer.from(csv)), request).batches),
          /header line of the file cannot be read: a record of 9,003 bytes/,
        );
      } finally {
        await pool.close();
      }
    }
  });

  it('a source that fails fails the parse with its error', async () => {
    const pool = new ParserPool(1);
    try {
      const failing = new Readable({
        read() {
          this.destroy(new Error('connection reset'));
        },
      });
      const job2 = pool.parse(failing, { format: 'json', plan, batchSize: 10, maxBuffered: 1 });
      await assert.rejects(collect(job2.batches), /connection reset/);
    } finally {
      await pool.close();
    }
  });
});
