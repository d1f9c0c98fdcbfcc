import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { FilesInFlight } from '../../../src/pipeline/load/files-in-flight.js';
import { filesAtOnce } from '../../../src/pipeline/load/load.js';
import { JobTables } from '../../../src/records/tables.js';
import { propertiesPlan } from '../../helpers/pipeline.js';

/** The job tables of one properties job with these settings. */
function tablesOf(settings: string): JobTables {
  return new JobTables(propertiesPlan(settings));
}

describe('files loaded at once', () => {
  test('only jobs whose rows are all appended may load their files in any order', () => {
    assert.equal(tablesOf('write: append').appendsOnly, true);
    assert.equal(tablesOf('write: append\nnested: tables').appendsOnly, true);
    assert.equal(tablesOf('write: replace').appendsOnly, true);
    assert.equal(tablesOf('write: merge\nkey: id').appendsOnly, false, 'a later record wins');
    assert.equal(
      tablesOf('write: append\nauto_trace: true').appendsOnly,
      false,
      'people are merged',
    );
  });

  test('one for every two cores, at most the writers; one for SQLite and for merges', () => {
    const append = { appendsOnly: true };
    assert.equal(filesAtOnce({}, 4, append, 2), 1, 'two cores: one');
    assert.equal(filesAtOnce({}, 4, append, 4), 2);
    assert.equal(filesAtOnce({}, 4, append, 16), 4, "the destination's writers");
    assert.equal(filesAtOnce({}, 1, append, 16), 1, 'SQLite: one writer');
    assert.equal(filesAtOnce({}, 4, { appendsOnly: false }, 16), 1, 'a merge');
  });

  test('SLUICE_FILES_AT_ONCE sets it, within the same bounds', () => {
    const append = { appendsOnly: true };
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '3' }, 4, append, 2), 3);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '9' }, 4, append, 2), 4);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '3' }, 1, append, 2), 1);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '3' }, 4, { appendsOnly: false }, 2), 1);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: 'lots' }, 4, append, 8), 1);
    assert.equal(filesAtOnce({ SLUICE_FILES_AT_ONCE: '' }, 4, append, 8), 4);
  });
});

describe('files in flight', () => {
  /** Lets every settled promise's callbacks run. */
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  test('counts what files in flight wrote, and forgets a file once it ends', async () => {
    const flight = new FilesInFlight();
    const a = (await flight.open())!;
    const b = (await flight.open())!;
    a.rows = 10;
    b.rows = 5;
    b.rejects = 2;
    assert.deepEqual([flight.rows, flight.rejects], [15, 2]);
    flight.close(b);
    flight.close(b);
    assert.deepEqual([flight.rows, flight.rejects], [10, 0]);
    flight.close(a);
  });

  test('a file alone waits for the files in flight, and none starts until it ends', async () => {
    const flight = new FilesInFlight();
    const a = (await flight.open())!;
    const b = (await flight.open())!;
    const events: string[] = [];
    const alone = flight.open(true).then((c) => {
      events.push('alone');
      return c!;
    });
    const alone2 = flight.open(true).then((c) => {
      events.push('alone2');
      return c!;
    });
    const later = flight.open().then((c) => {
      events.push('later');
      return c!;
    });
    await settle();
    assert.equal(events.join(), '', 'the files in flight go on');
    assert.equal(flight.claimAlone(a), false, 'others are in flight');
    flight.close(a);
    await settle();
    assert.equal(events.join(), '');
    flight.close(b);
    await settle();
    assert.equal(events.join(), 'alone', 'one alone at a time');
    flight.close(await alone);
    await settle();
    assert.equal(events.join(), 'alone,alone2');
    flight.close(await alone2);
    await settle();
    assert.equal(events.join(), 'alone,alone2,later');
    const c = await later;
    assert.equal(flight.claimAlone(c), true, 'the only file in flight becomes alone');
    const blocked = flight.open().then(() => events.push('blocked'));
    await settle();
    assert.equal(events.length, 3, 'no file starts beside a file alone');
    flight.close(c);
    await blocked;
  });

  test('after a failure, files waiting to start do not; one waiting alone gives up once the others end', async () => {
    const flight = new FilesInFlight();
    const a = (await flight.open())!;
    const alone = flight.open(true);
    const waiting = flight.open();
    flight.stop();
    assert.equal(await waiting, undefined);
    let done = false;
    void alone.then(() => {
      done = true;
    });
    await settle();
    assert.equal(done, false, 'a file alone never runs beside another');
    flight.close(a);
    assert.equal(await alone, undefined);
    assert.equal(await flight.open(), undefined, 'nothing starts after a failure');
  });
});
