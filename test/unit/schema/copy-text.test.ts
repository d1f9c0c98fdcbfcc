import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { encodeCopyText, plainRows, withSuffix } from '../../../src/schema/copy-text.js';
import {
  type ColumnType,
  finerThanMicroseconds,
  isIsoDate,
  type PackedRows,
} from '../../../src/schema/types.js';

const packed = (names: string[], rows: (string | number | boolean | null)[][]): PackedRows => ({
  names,
  values: rows.flat(),
  count: rows.length,
});

const text = (rows: PackedRows) => Buffer.from(rows.text!.bytes).toString('utf8');

describe('COPY text', () => {
  test('cells escape what COPY reads specially; rows read back as the same values', () => {
    const rows = packed(
      ['id', 'note', 'n', 'ok', 'at', 'j', 'empty'],
      [
        [
          'a1',
          'tab\there\nnew line\r\\back\\N',
          2.5,
          true,
          '2024-01-02T03:04:05Z',
          '{"k":[1]}',
          null,
        ],
        ['a2', '\\N', -7, false, null, '["x\\ty"]', null],
        ['a3', 'café ✓ 😀', Number.POSITIVE_INFINITY, null, '2024-01-02', null, null],
      ],
    );
    const columns = new Map<string, ColumnType>([
      ['id', 'text'],
      ['note', 'text'],
      ['n', 'real'],
      ['ok', 'boolean'],
      ['at', 'timestamp'],
      ['j', 'json'],
    ]);
    const encoded = encodeCopyText(rows, columns, ['id', 'missing']);
    assert.ok(encoded?.text);
    assert.deepEqual(encoded.names, ['id'], 'only the kept columns stay values');
    assert.deepEqual(encoded.values, ['a1', 'a2', 'a3']);
    assert.deepEqual(
      encoded.text.names,
      ['id', 'note', 'n', 'ok', 'at', 'j'],
      'no all-null column',
    );
    assert.equal(
      text(encoded),
      'a1\ttab\\there\\nnew line\\r\\\\back\\\\N\t2.5\tt\t2024-01-02T03:04:05Z\t{"k":[1]}\n' +
        'a2\t\\\\N\t-7\tf\t\\N\t["x\\\\ty"]\n' +
        'a3\tcafé ✓ 😀\tInfinity\t\\N\t2024-01-02\t\\N\n',
    );
    assert.equal(encoded.text.bytes.byteOffset, 0, 'a buffer of its own, to transfer');
    assert.equal(encoded.text.bytes.buffer.byteLength, encoded.text.bytes.byteLength);
    const back = plainRows(encoded);
    assert.deepEqual(back.names, encoded.text.names);
    assert.deepEqual(back.values, [
      ...['a1', 'tab\there\nnew line\r\\back\\N', 2.5, true, '2024-01-02T03:04:05Z', '{"k":[1]}'],
      ...['a2', '\\N', -7, false, null, '["x\\ty"]'],
      ...['a3', 'café ✓ 😀', Number.POSITIVE_INFINITY, null, '2024-01-02', null],
    ]);
    assert.equal(plainRows(encoded), back, 'read back once');
    const plain = packed(['id'], [['x']]);
    assert.equal(plainRows(plain), plain, 'plain rows are their own');
  });

  test('a batch whose values are not of their column type stays values', () => {
    const columns = new Map<string, ColumnType>([['v', 'integer']]);
    assert.equal(encodeCopyText(packed(['v'], [[1], [true]]), columns, []), undefined);
    const text = new Map<string, ColumnType>([['v', 'text']]);
    assert.equal(encodeCopyText(packed(['v'], [['a'], [2]]), text, []), undefined);
    assert.equal(encodeCopyText(packed(['v'], [[null]]), new Map(), []), undefined, 'no column');
  });

  test('an integer past 2^53 is written as its digits and reads back as the same bigint', () => {
    const rows: PackedRows = {
      names: ['id', 'big', 'small'],
      values: ['a', 9007199254740993n, 5, 'b', -9223372036854775808n, 9007199254740991],
      count: 2,
    };
    const columns = new Map<string, ColumnType>([
      ['id', 'text'],
      ['big', 'integer'],
      ['small', 'integer'],
    ]);
    const encoded = encodeCopyText(rows, columns, ['big'])!;
    assert.equal(
      text(encoded),
      'a\t9007199254740993\t5\nb\t-9223372036854775808\t9007199254740991\n',
    );
    assert.deepEqual(encoded.values, [9007199254740993n, -9223372036854775808n], 'kept as values');
    assert.deepEqual(encoded.text!.bigints, ['big'], 'which columns hold one');
    assert.deepEqual(plainRows(encoded).values, rows.values);
    // In a floating-point or text column a cell would not read back as the bigint: values.
    for (const type of ['real', 'text'] as const) {
      const other = new Map([...columns, ['big', type] as const]);
      assert.equal(encodeCopyText(rows, other, []), undefined, type);
    }
  });

  test('times finer than a microsecond are told, and which timestamp columns hold one', () => {
    for (const time of [
      '2024-01-01T00:00:00.1234567Z',
      '2024-01-01 00:00:00.0000001',
      '2024-01-01T00:00:00.9999995+05:30',
    ]) {
      assert.ok(finerThanMicroseconds(time), time);
    }
    for (const time of [
      '2024-01-01T00:00:00Z',
      '2024-01-01T00:00:00.123456Z',
      '2024-01-01T00:00:00.1234560000Z',
      '2024-01-01T00:00:00.123+05:30',
      '2024-01-01',
      'some text that is long enough',
    ]) {
      assert.ok(!finerThanMicroseconds(time), time);
    }
    const rows = packed(
      ['at', 'note'],
      [
        ['2024-01-01T00:00:00.1234567Z', '2024-01-01T00:00:00.1234567Z'],
        ['2024-01-01T00:00:00Z', null],
      ],
    );
    const columns = new Map<string, ColumnType>([
      ['at', 'timestamp'],
      ['note', 'text'],
    ]);
    assert.deepEqual(encodeCopyText(rows, columns, [])!.text!.fineTimes, ['at'], 'not text');
  });

  test("an offset's minutes past 59 make no date (PostgreSQL refuses it, DuckDB reads +05:99 as +06:39)", () => {
    assert.ok(!isIsoDate('2024-01-01T00:00:00+05:99'));
    assert.ok(!isIsoDate('2024-01-01T00:00:00+0560'));
    assert.ok(isIsoDate('2024-01-01T00:00:00+05:59'));
    assert.ok(isIsoDate('2024-01-01T00:00:00-1500'));
  });

  test('withSuffix follows every line with the load columns', () => {
    const columns = new Map<string, ColumnType>([['v', 'text']]);
    const encoded = encodeCopyText(packed(['v'], [['é'], ['b\nc'], [null]]), columns, [])!;
    const out = withSuffix(encoded.text!, 3, '\tdl\t2024');
    assert.equal(out.toString('utf8'), 'é\tdl\t2024\nb\\nc\tdl\t2024\n\\N\tdl\t2024\n');
  });
});
