import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { clipCell, dateText, Fixed, formatTable, secondsText } from '../../../src/cli/output.js';

describe('tables', () => {
  it('seconds with two decimals, aligned right as numbers', () => {
    const table = formatTable(
      ['job', 'seconds'],
      [
        ['a', new Fixed(2.7)],
        ['b', new Fixed(2.49)],
        ['c', new Fixed(1234.5)],
      ],
    );
    assert.equal(
      table,
      ['job   seconds', '---  --------', 'a        2.70', 'b        2.49', 'c    1,234.50'].join(
        '\n',
      ),
    );
    assert.equal(secondsText(0.9), '0.90');
  });

  it('an error cell is cut to 80 characters with an ellipsis, on one line', () => {
    const long = `GET /v4/downloads failed with 500:\n${'x'.repeat(300)}`;
    const cell = clipCell(long);
    assert.equal(cell.length, 80);
    assert.ok(cell.endsWith('…'));
    assert.ok(!cell.includes('\n'));
    assert.equal(clipCell('short'), 'short');
  });

  it('a date missing or at the epoch shows as -', () => {
    assert.equal(dateText(undefined), '-');
    assert.equal(dateText(null), '-');
    assert.equal(dateText('1970-01-01T00:00:00Z'), '-');
    assert.equal(dateText('2026-11-28T12:00:00Z'), '2026-11-28T12:00:00Z');
  });
});
