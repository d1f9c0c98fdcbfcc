/**
 * Counting a result file's records as its bytes go by (`downloads fetch` checks the files it
 * saves against the download's count): the same records the loader reads, whatever the chunks.
 */
import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { formatOfFile, RecordCounter } from '../../../src/client/record-count.js';

/** Records in `text`, fed whole and one byte at a time: the two must agree. */
function count(format: 'csv' | 'json', text: string): number {
  const bytes = Buffer.from(text);
  const whole = new RecordCounter(format);
  whole.add(bytes);
  const byByte = new RecordCounter(format);
  for (let i = 0; i < bytes.length; i++) byByte.add(bytes.subarray(i, i + 1));
  const n = whole.end();
  assert.equal(byByte.end(), n, 'chunks do not change the count');
  return n;
}

describe('RecordCounter', () => {
  test('NDJSON: lines with text, blank lines left out, the last one without its newline', () => {
    assert.equal(count('json', ''), 0);
    assert.equal(count('json', '\n\n  \r\n'), 0);
    assert.equal(count('json', '{"id":1}\n{"id":2}\n'), 2);
    assert.equal(count('json', '{"id":1}\r\n\n{"id":2}'), 2);
    assert.equal(count('json', '{"id": "broken", "address": "12 Truncated St\n{"id":3}\n'), 2);
  });

  test('CSV: records after the header; a newline inside quotes is part of its record', () => {
    assert.equal(count('csv', ''), 0);
    assert.equal(count('csv', 'id,name\n'), 0, 'the header alone');
    assert.equal(count('csv', 'id,name\r\na,b\r\nc,d'), 2);
    assert.equal(count('csv', 'id,note\na,"two\nlines"\nb,"a ""quoted"" word\nacross"\n\n'), 2);
    assert.equal(count('csv', 'id,note\na,"ends in a quote"""\nb,c\n'), 2);
  });

  test('CSV: a quote inside an unquoted cell is text and joins no lines', () => {
    assert.equal(count('csv', 'id,height\na,5" tall\nb,6" tall\nc,x\n'), 3);
  });
});

describe('formatOfFile', () => {
  test("the download's format first, else the file name's", () => {
    assert.equal(formatOfFile('x_0.txt', 'csv'), 'csv');
    assert.equal(formatOfFile('x_0.csv', undefined), 'csv');
    assert.equal(formatOfFile('x_0.csv.gz', undefined), 'csv');
    assert.equal(formatOfFile('x_0.txt', undefined), 'json');
    assert.equal(formatOfFile('x_0.jsonl', undefined), 'json');
    assert.equal(formatOfFile('x_0.bin', undefined), undefined);
    assert.equal(formatOfFile('x_0', undefined), undefined);
  });
});
