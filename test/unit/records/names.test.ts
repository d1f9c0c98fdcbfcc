import { strict as assert } from 'node:assert';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { packBatch, packedBatches, recordBatches } from '../../../src/records/index.js';
import { OwnNames } from '../../../src/records/shape.js';
import { JobTables } from '../../../src/records/tables.js';
import type { PackedBatch } from '../../../src/records/types.js';
import { ParserPool } from '../../../src/records/workers/parallel.js';
import { type Row, unpackRow } from '../../../src/schema/types.js';
import { propertiesPlan } from '../../helpers/pipeline.js';

/**
 * Fields that would meet in one column before any naming layer: a field named as a column
 * sluice writes in the same row, and a CSV header that names a column twice.
 */

function source(text: string, size = 97): Readable {
  const buffer = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let i = 0; i < buffer.length; i += size) chunks.push(buffer.subarray(i, i + size));
  return Readable.from(chunks);
}

async function collect<B>(batches: AsyncIterable<B>): Promise<B[]> {
  const out: B[] = [];
  for await (const batch of batches) out.push(batch);
  return out;
}

/** Each batch's rows of `table` (the job's own by default), with only the fields that hold a value. */
function rowsOf(batches: PackedBatch[], table?: string): Row[] {
  const valued = (row: Row) =>
    Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null)) as Row;
  return batches.flatMap((b) => {
    const packed = table === undefined ? b.rows : b.related?.find((r) => r.table === table)?.rows;
    if (packed === undefined) return [];
    return Array.from({ length: packed.count }, (_, i) => valued(unpackRow(packed, i)));
  });
}

describe("field names that meet sluice's own or each other", () => {
  it("a field named as sluice's own column gets one more _, one to one, case aside", () => {
    const own = new OwnNames(['_position', '_parent_id', '_sluice_loaded_at']);
    const names = [
      '_position',
      '_position_',
      '_position__',
      '_POSITION',
      '_Parent_Id_',
      '_sluice_loaded_at',
      '_positionx',
      '_position_x',
      '_parent_idx',
      'position',
      '_',
      '',
      'city',
    ];
    const columns = names.map((n) => own.column(n));
    assert.deepEqual(columns, [
      '_position_',
      '_position__',
      '_position___',
      '_POSITION_',
      '_Parent_Id__',
      '_sluice_loaded_at_',
      '_positionx',
      '_position_x',
      '_parent_idx',
      'position',
      '_',
      '',
      'city',
    ]);
    assert.equal(new Set(columns).size, names.length, 'no two fields meet');
    for (const column of columns) {
      const folded = column.toLowerCase();
      assert.ok(!['_position', '_parent_id', '_sluice_loaded_at'].includes(folded), column);
    }
  });

  const record = {
    id: 'p1',
    _position: 7,
    _parent_id: 'top',
    _sluice_download_id: 'mine',
    _sluice_loaded_at: 'then',
    _position_: 'real',
    prices: [
      {
        amountMin: 1,
        _position: 9,
        _parent_id: 'item',
        _parent_position: 4,
        _SLUICE_DOWNLOAD_ID: 'item-dl',
      },
      { amountMin: 2, _sluice_loaded_at: 'later' },
      { amountMin: 3 },
    ],
  };
  const lines = `${JSON.stringify(record)}\n${JSON.stringify({ ...record, id: 'p2', prices: null })}\n`;

  it("nested: tables: data fields keep their values beside sluice's positions and links", async () => {
    const tables = new JobTables(propertiesPlan('nested: tables'));
    const batches = await collect(packedBatches(source(lines), 'json', tables, 500));
    const [main] = rowsOf(batches);
    assert.deepEqual(
      { ...main },
      {
        id: 'p1',
        // The job's own table: sluice writes only its load columns there.
        _position: 7,
        _parent_id: 'top',
        _sluice_download_id_: 'mine',
        _sluice_loaded_at_: 'then',
        _position_: 'real',
      },
    );
    const prices = rowsOf(batches, 'homes__prices').map((r) => ({ ...r }));
    assert.deepEqual(prices, [
      {
        _position: 0,
        amountMin: 1,
        _position_: 9,
        _parent_id_: 'item',
        _parent_position_: 4,
        _SLUICE_DOWNLOAD_ID_: 'item-dl',
        _parent_id: 'p1',
      },
      { _position: 1, amountMin: 2, _sluice_loaded_at_: 'later', _parent_id: 'p1' },
      { _position: 2, amountMin: 3, _parent_id: 'p1' },
    ]);
  });

  it('nested: json: the load columns are escaped alike, packed straight from lines or shaped', async () => {
    const tables = new JobTables(propertiesPlan('nested: json'));
    assert.ok(tables.plainJson);
    const packed = await collect(packedBatches(source(lines), 'json', tables, 500));
    const shaped = (
      await collect(
        recordBatches(source(lines), 'json', 'properties', { batchSize: 500, shape: tables.shape }),
      )
    ).map((b) => packBatch(b, tables));
    assert.deepEqual(rowsOf(packed), rowsOf(shaped));
    const [main] = rowsOf(packed);
    assert.equal(main!._sluice_download_id_, 'mine');
    assert.equal(main!._sluice_loaded_at_, 'then');
    assert.equal(main!._position, 7);
    assert.ok(!('_sluice_download_id' in main!) && !('_sluice_loaded_at' in main!));
    assert.ok(packed[0]!.columns.has('_sluice_loaded_at_'));
    assert.equal(packed[0]!.columns.get('_sluice_loaded_at_'), 'text', 'typed by its values');
  });

  const header = 'id,city,yearBuilt,city__2,city,yearBuilt,';
  const csv = `${header}\n${Array.from(
    { length: 60 },
    (_, i) => `p${i},Austin ${i},2001.0,two ${i},AUSTIN ${i},${1990 + i}.0,\n`,
  ).join('')}`;
  const expected = Array.from({ length: 60 }, (_, i) => ({
    id: `p${i}`,
    city: `Austin ${i}`,
    yearBuilt: 2001,
    city__2: `two ${i}`,
    city__3: `AUSTIN ${i}`,
    yearBuilt__2: 1990 + i,
  }));
  const warning =
    'the header names a column more than once; each later one loads as a column of its own: city (column 5) as city__3, yearBuilt (column 6) as yearBuilt__2';

  it('a CSV header that names a column twice keeps both cells, said once per file', async () => {
    const tables = new JobTables(propertiesPlan('format: csv\nnested: json'));
    const here = await collect(packedBatches(source(csv), 'csv', tables, 7));
    assert.deepEqual(
      rowsOf(here).map((r) => ({ ...r })),
      expected,
      'each later one its own column, decoded as the field it names',
    );
    assert.deepEqual(
      here.flatMap((b) => b.warnings ?? []),
      [warning],
    );
    assert.deepEqual(
      here.flatMap((b) => b.rejects),
      [],
    );
    // In parse workers: the file streamed to one, and cut into blocks for two (the header goes
    // to the blocks after the one that read it, which alone says what it renamed).
    for (const [workers, blockBytes] of [
      [1, undefined],
      [2, 256],
    ] as const) {
      const pool = new ParserPool(workers);
      try {
        const request = {
          format: 'csv' as const,
          plan: tables.plan,
          batchSize: 7,
          maxBuffered: 2,
          ...(blockBytes === undefined ? {} : { blockBytes }),
        };
        const batches = await collect(pool.parse(source(csv), request).batches);
        if (blockBytes !== undefined) assert.ok(batches.length > 5, 'several blocks');
        assert.deepEqual(rowsOf(batches), rowsOf(here), `${workers} worker(s)`);
        assert.deepEqual(
          batches.flatMap((b) => b.warnings ?? []),
          [warning],
          `${workers} worker(s): once`,
        );
      } finally {
        await pool.close();
      }
    }
  });
});
