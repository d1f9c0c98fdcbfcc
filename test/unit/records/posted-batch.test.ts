import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { PackedBatch } from '../../../src/records/types.js';
import {
  fromWire,
  type PostedBatch,
  packValues,
  toWire,
  unpackValues,
} from '../../../src/records/workers/posted-batch.js';
import type { RowValue } from '../../../src/schema/types.js';

/** Posts `batch` as a parse worker does, through a real message port, and takes it back. */
async function postAndTake(batch: PackedBatch): Promise<{ taken: PackedBatch; wire: PostedBatch }> {
  const { port1, port2 } = new MessageChannel();
  try {
    const received = new Promise<PostedBatch>((resolve) =>
      (port2 as MessagePort).once('message', resolve),
    );
    const wire = toWire(batch);
    port1.postMessage(wire.batch, wire.transfer);
    return { taken: fromWire(await received), wire: wire.batch };
  } finally {
    port1.close();
    port2.close();
  }
}

/** Same values, slot by slot: -0 is not 0, NaN is NaN, an empty slot stays empty. */
function assertSameValues(actual: readonly RowValue[], expected: readonly RowValue[]): void {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Object.is(actual[i], expected[i]), `value ${i}: ${actual[i]} for ${expected[i]}`);
  }
}

const EVERY_KIND: RowValue[] = [
  'plain',
  '',
  'tab\tnew\nline\\back',
  'naïve 東京 🏠',
  '\ud800 a lone surrogate',
  '{"nested":[1,2,{"a":"b"}]}',
  0,
  -0,
  1.5e300,
  -42,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  false,
  null,
  9007199254740993n,
  -9223372036854775808n,
  'last',
];

describe('values between threads (posted-batch.ts)', () => {
  it('gives back every kind of value as it was, in order', () => {
    assertSameValues(unpackValues(packValues(EVERY_KIND)), EVERY_KIND);
    assertSameValues(unpackValues(packValues([])), []);
    assertSameValues(unpackValues(packValues([null, 7, null])), [null, 7, null]);
  });

  it('keeps an undefined slot undefined, and refuses a value of no column type', () => {
    const values = [undefined, 'x', undefined] as unknown as RowValue[];
    const back = unpackValues(packValues(values));
    assert.equal(back.length, 3);
    assert.ok(0 in back && back[0] === undefined);
    assert.equal(back[1], 'x');
    assert.ok(2 in back && back[2] === undefined);
    assert.throws(() => packValues([1, {} as unknown as RowValue]), /a row value of type object/);
  });

  it('splits text values where they were, a surrogate pair across two of them included', () => {
    // The high half of 🏠 ends one value and its low half begins the next: in the one string
    // they read as a pair, and each value must come back with its own half.
    const values: RowValue[] = ['a\ud83c', '\udfe0b', '', '\ud83c', '\udfe0'];
    assertSameValues(unpackValues(packValues(values)), values);
  });

  it('posts a batch, its related tables and its COPY text through a message port', async () => {
    const width = 4;
    const values: RowValue[] = [];
    for (let r = 0; r < EVERY_KIND.length; r++) {
      values.push(`id-${r}`, EVERY_KIND[r]!, r, r % 2 === 0);
    }
    const copy = Buffer.allocUnsafeSlow(6);
    copy.write('a\tb\n\\N');
    const batch: PackedBatch = {
      rows: {
        names: ['id', 'value', 'n', 'even'],
        values,
        count: values.length / width,
        constants: { _sluice_run: 'r1' },
        text: { names: ['id'], types: ['text'], bytes: copy },
      },
      columns: new Map([['id', 'text']]),
      lines: [1, 2, 3],
      related: [
        {
          table: 'homes_prices',
          rows: { names: ['amount', 'date'], values: [100, '2020-01-01', -0, null], count: 2 },
          columns: new Map([['amount', 'real']]),
          parents: [0, 2],
        },
      ],
      rejects: [{ line: 4, raw: '{', reason: 'not JSON' }],
      bytesRead: 1234,
    };
    const { taken, wire } = await postAndTake(batch);

    assertSameValues(taken.rows.values, values);
    assert.deepEqual(taken.rows.names, batch.rows.names);
    assert.equal(taken.rows.count, batch.rows.count);
    assert.deepEqual(taken.rows.constants, { _sluice_run: 'r1' });
    assert.equal(Buffer.from(taken.rows.text!.bytes).toString(), 'a\tb\n\\N');
    assert.equal(copy.byteLength, 0, 'the COPY text was moved, not copied');
    assert.equal(wire.rows.wire.buffer.byteLength, 0, 'the values buffer was moved, not copied');
    assert.deepEqual(taken.columns, batch.columns);
    assert.deepEqual(taken.lines, [1, 2, 3]);
    assert.deepEqual(taken.rejects, batch.rejects);
    assert.equal(taken.bytesRead, 1234);
    const related = taken.related![0]!;
    assert.equal(wire.related![0]!.rows.wire.buffer.byteLength, 0, 'moved, not copied');
    assert.equal(related.table, 'homes_prices');
    assertSameValues(related.rows.values, [100, '2020-01-01', -0, null]);
    assert.deepEqual(related.parents, [0, 2]);
    assert.equal('wire' in taken.rows, false);
  });

  it('posts a batch of no rows (only rejects)', async () => {
    const batch: PackedBatch = {
      rows: { names: [], values: [], count: 0 },
      columns: new Map(),
      lines: [],
      rejects: [{ line: 1, raw: 'x', reason: 'not JSON' }],
      bytesRead: 2,
    };
    const { taken } = await postAndTake(batch);
    assert.deepEqual(taken.rows, { names: [], values: [], count: 0 });
    assert.deepEqual(taken.rejects, batch.rejects);
  });

  it('copies COPY text that shares its memory before moving it', async () => {
    const pool = Buffer.from('a\n'); // a small Buffer is a slice of Node's shared pool
    assert.notEqual(pool.byteLength, pool.buffer.byteLength);
    const batch: PackedBatch = {
      rows: {
        names: ['id'],
        values: ['a'],
        count: 1,
        text: { names: ['id'], types: ['text'], bytes: pool },
      },
      columns: new Map([['id', 'text']]),
      lines: [1],
      rejects: [],
      bytesRead: 2,
    };
    const { taken } = await postAndTake(batch);
    assert.equal(Buffer.from(taken.rows.text!.bytes).toString(), 'a\n');
    assert.equal(pool.toString(), 'a\n', 'the pool is left as it was');
  });
});
