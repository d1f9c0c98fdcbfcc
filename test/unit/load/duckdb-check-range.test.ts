import { strict as assert } from 'node:assert';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { checkRange, middleLine, type RangeToCheck } from '../../../src/load/duckdb/check-lines.js';
import { tempDir } from '../../helpers/pipeline.js';

/**
 * How a check reads a range of a spooled file (src/load/duckdb/check-lines.ts): one buffer read
 * into again and again, so lines cut by its reads, lines longer than it, a line past the record
 * size limit and a last line without its newline must read as the file's lines do.
 */

const root = tempDir('sluice-check-range-');
after(() => rmSync(root, { recursive: true, force: true }));
let files = 0;

const FIELDS = [
  { key: 'id', type: 'text' as const },
  { key: 'note', type: 'text' as const },
];

/** A spooled file of `text`, and a range of all of it (or of `start` to `end`). */
function rangeOf(text: string, maxBytes: number, start = 0, end?: number): RangeToCheck {
  const path = join(root, `file-${++files}.ndjson`);
  writeFileSync(path, text);
  const size = Buffer.byteLength(text);
  return { path, start, end: end ?? size, format: 'json', fields: FIELDS, maxBytes, keyed: [] };
}

const line = (id: number, noteBytes: number) =>
  JSON.stringify({ id: String(id), note: 'é'.repeat(noteBytes / 2) });

test('lines cut by the reads, and longer than one read, are checked whole', async () => {
  // Notes of 0.3 to 2.6 MiB: the 1 MiB reads end inside lines, and some lines need two or three.
  const lines = [1, 2, 3, 4, 5, 6, 7].map((n) => line(n, 300_000 * n + (n % 2) * 777_777));
  const checked = await checkRange(rangeOf(`${lines.join('\n')}\n`, 4 << 20));
  assert.deepEqual(
    { count: checked.count, records: checked.records, doubt: checked.doubt },
    { count: 7, records: 7, doubt: undefined },
  );
});

test('a last line without its newline, and empty lines, are counted as lines', async () => {
  const text = `${line(1, 10)}\n\n${line(2, 2_000_000)}\n\n${line(3, 10)}`;
  const checked = await checkRange(rangeOf(text, 4 << 20));
  assert.deepEqual(
    { count: checked.count, records: checked.records, doubt: checked.doubt },
    { count: 5, records: 3, doubt: undefined },
  );
});

test('a line past the size limit is a doubt on its number, ended or not', async () => {
  const long = line(3, 3_000_000);
  const limit = 2 << 20;
  for (const text of [
    `${line(1, 10)}\n${line(2, 10)}\n${long}\n${line(4, 10)}\n`,
    `${line(1, 10)}\n${line(2, 10)}\n${long}`,
  ]) {
    const checked = await checkRange(rangeOf(text, limit));
    assert.deepEqual(checked.doubt, { line: 3, why: 'over the record size limit' });
  }
  // A line of exactly the limit is taken.
  const exact = `{"id":"1","note":"${'a'.repeat(limit - 20)}"}`;
  assert.equal(Buffer.byteLength(exact), limit);
  const checked = await checkRange(rangeOf(`${exact}\n`, limit));
  assert.equal(checked.doubt, undefined);
  assert.equal(checked.records, 1);
});

test('the two halves of a file, split at its middle line, count its lines and find its doubt', async () => {
  const lines = Array.from({ length: 40 }, (_, n) => line(n + 1, 50_000 + n * 1_000));
  lines[29] = lines[29]!.replace('"id"', '"no such field"');
  const text = `${lines.join('\n')}\n`;
  const whole = rangeOf(text, 4 << 20);
  const size = Buffer.byteLength(text);
  const middle = await middleLine(whole.path, size);
  const a = await checkRange({ ...whole, end: middle });
  const b = await checkRange({ ...whole, start: middle });
  assert.equal(a.doubt, undefined);
  assert.equal(a.count + (b.doubt?.line ?? 0), 30);
  assert.match(b.doubt?.why ?? '', /no column for/);
});
