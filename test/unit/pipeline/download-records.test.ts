/**
 * Which file checks a download's records, and when: files written one after the other, files
 * written at once (their transactions not ended), files that roll back and come again. A short
 * download must never be recorded whole, however the files' ends interleave.
 */
import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import type { ResultFileRef } from '../../../src/client/types.js';
import { SluiceError } from '../../../src/errors.js';
import { DownloadRecords } from '../../../src/pipeline/load/download-records.js';

const file = (index: number): ResultFileRef => ({
  index,
  name: `d1_${index}.txt`,
  url: `http://storage/d1_${index}.txt?sig=s`,
});
const files = [file(0), file(1), file(2)];
const short = (e: unknown) => e instanceof SluiceError && e.code === 'SLUICE_FILE_INCOMPLETE';

describe('DownloadRecords', () => {
  test('one after the other: the last file checks them all, and a short one is refused', () => {
    const d = new DownloadRecords('d1', 30, files, new Map());
    assert.equal(d.written(file(0), 10), undefined);
    d.committed(file(0));
    assert.equal(d.written(file(1), 10), undefined);
    d.committed(file(1));
    assert.throws(() => d.written(file(2), 9), short);
    d.rolledBack(file(2));
    assert.match(
      d.incomplete(file(2), 3).message,
      /^download d1 holds 30 records by the service's count, its result files fewer: d1_0\.txt 10 \(loaded\), d1_1\.txt 10 \(loaded\), d1_2\.txt 9 \(fetched 3 times, not loaded\); d1_2\.txt was not recorded as loaded/,
    );
    assert.equal(d.written(file(2), 10), 30, 'whole when fetched again');
  });

  test('a file of no records is refused at once, wherever it is', () => {
    const d = new DownloadRecords('d1', 30, files, new Map());
    assert.throws(() => d.written(file(0), 0), short);
    d.rolledBack(file(0));
    assert.match(
      d.incomplete(file(0), 3).message,
      /^result file d1_0\.txt held no records each of the 3 times it was fetched, where download d1 holds 30/,
    );
    const none = new DownloadRecords('d0', 0, [file(0)], new Map());
    assert.equal(none.written(file(0), 0), 0, 'a download of no records may have an empty file');
  });

  test('files written at once: the one written last checks the others not yet committed', () => {
    const d = new DownloadRecords('d1', 30, files, new Map());
    d.written(file(0), 10);
    d.committed(file(0));
    // Files 1 and 2 are in flight together; 2 (short) ends its writing first, 1 is still read.
    assert.equal(d.written(file(2), 9), undefined, 'file 1 is still to be written');
    // File 2 has not committed yet when file 1 ends: file 1 counts it all the same.
    assert.throws(() => d.written(file(1), 10), short);
    d.committed(file(2));
    d.rolledBack(file(1));
    assert.throws(() => d.written(file(1), 10), short, 'and again when fetched again');
  });

  test('a file counted by another that then rolls back checks again when written again', () => {
    const d = new DownloadRecords('d1', 20, files.slice(0, 2), new Map());
    assert.equal(d.written(file(0), 10), undefined);
    assert.equal(d.written(file(1), 10), 20, 'file 1 completes the download');
    d.committed(file(1));
    d.rolledBack(file(0));
    assert.throws(() => d.written(file(0), 9), short);
    assert.equal(d.written(file(0), 11), 21, 'more than the service counts is not refused');
  });

  test("earlier runs' files count as they were recorded: rows and rejects", () => {
    const loaded = new Map([[0, { file_name: 'd1_0.txt', rows_loaded: 8, rows_rejected: 2 }]]);
    const d = new DownloadRecords('d1', 20, files.slice(0, 2), loaded);
    assert.equal(d.written(file(1), 10), 20);
    const e = new DownloadRecords('d1', 21, files.slice(0, 2), loaded);
    assert.throws(() => e.written(file(1), 10), short);
  });
});
