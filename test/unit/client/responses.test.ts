import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { connectionFromEnv, createServiceClient } from '../../../src/client/index.js';
import {
  downloadStatus,
  fileNameOf,
  firstOf,
  idOf,
  itemOf,
  listOf,
  recordsOf,
  resultFiles,
  totalCost,
} from '../../../src/client/responses.js';
import { v3DateToIso } from '../../../src/client/v3.js';
import { SluiceError, UsageError } from '../../../src/errors.js';

describe('wire forms', () => {
  test('download states of the contract, of the real service and their synonyms', () => {
    const state = (value: unknown) => downloadStatus(value).state;
    assert.equal(state('queued'), 'queued');
    assert.equal(state('started'), 'queued');
    assert.equal(state('in_progress'), 'running');
    assert.equal(state('running'), 'running');
    assert.equal(state('STARTED'), 'queued');
    assert.equal(state('In Progress'), 'running');
    assert.equal(state('in-progress'), 'running');
    assert.equal(state('processing'), 'running');
    for (const done of ['completed', 'COMPLETED', 'complete', 'done', 'Finished', 'succeeded'])
      assert.deepEqual(downloadStatus(done), { state: 'completed' }, done);
    assert.equal(state('cancelled'), 'cancelled');
    assert.equal(state('Canceled'), 'cancelled');
    for (const failed of ['failed', 'FAILURE', 'error', 'errored'])
      assert.equal(state(failed), 'failed', failed);
  });

  test('an unlisted status is still in progress, and named for the run to report', () => {
    assert.deepEqual(downloadStatus('exporting'), { state: 'running', unlisted: 'exporting' });
    // Words that could be read two ways wait rather than end a job.
    for (const doubtful of ['ready', 'expired', 'aborted', 'paused'])
      assert.deepEqual(downloadStatus(doubtful), { state: 'running', unlisted: doubtful });
    assert.deepEqual(downloadStatus(undefined), { state: 'running', unlisted: '(none)' });
    assert.deepEqual(downloadStatus(''), { state: 'running', unlisted: '(none)' });
    assert.deepEqual(downloadStatus('constructor'), {
      state: 'running',
      unlisted: 'constructor',
    });
  });

  test('results as [{url}] or ["url"]; names without the signature', () => {
    const url = 'https://files.example/bucket/abc_0.csv?X-Signature=secret';
    const expected = [
      { index: 0, url, name: 'abc_0.csv' },
      { index: 1, url: 'https://files.example/abc_1.csv', name: 'abc_1.csv' },
    ];
    assert.deepEqual(
      resultFiles([{ url }, { url: 'https://files.example/abc_1.csv' }], 'x'),
      expected,
    );
    assert.deepEqual(resultFiles([url, 'https://files.example/abc_1.csv'], 'x'), expected);
    assert.deepEqual(resultFiles(undefined, 'x'), []);
    assert.throws(() => resultFiles([{}], 'x'), SluiceError);
    assert.equal(fileNameOf('https://h/p/a%20b_2.txt.gz?sig=1'), 'a b_2.txt.gz');
  });

  test('ids as strings or integers', () => {
    assert.equal(idOf('5f2c', 'x'), '5f2c');
    assert.equal(idOf(42, 'x'), '42');
    assert.throws(() => idOf(undefined, 'x'), SluiceError);
    assert.throws(() => idOf('', 'x'), SluiceError);
  });

  test('cost: total_cost, else the per-type itemization', () => {
    assert.equal(totalCost({ total_cost: 7, property_cost: 7 }), 7);
    assert.equal(totalCost({ property_cost: 3, people_cost: 3 }), 6);
    assert.equal(totalCost({ num_found: 3 }), undefined);
  });

  test('v3 dates, month and day not padded, as ISO 8601 UTC', () => {
    assert.equal(v3DateToIso('2017-3-7 17:44:05'), '2017-03-07T17:44:05Z');
    assert.equal(v3DateToIso('2024-12-31 01:02:03'), '2024-12-31T01:02:03Z');
    assert.equal(v3DateToIso('yesterday'), undefined);
    assert.equal(v3DateToIso(undefined), undefined);
  });
});

describe('lists in envelopes', () => {
  const a = { id: 'a' };
  const b = { id: 'b' };
  const badAnswer = (pattern: RegExp) => (e: unknown) =>
    e instanceof SluiceError && e.code === 'SLUICE_API_BAD_RESPONSE' && pattern.test(e.message);

  test('a bare array, or the list under a known field, with other fields ignored', () => {
    assert.deepEqual(listOf([a, b], 'x'), [a, b]);
    for (const key of ['records', 'downloads', 'data', 'items', 'results', 'views', 'requests']) {
      assert.deepEqual(listOf({ [key]: [a, b], total: 2, next: null }, 'x'), [a, b], key);
    }
  });

  test('the field named for the operation wins over the generic ones', () => {
    assert.deepEqual(listOf({ data: [a], downloads: [b] }, 'x', 'downloads'), [b]);
    assert.deepEqual(listOf({ data: [a], downloads: [b] }, 'x'), [b], 'in the order of LIST_KEYS');
    assert.deepEqual(listOf({ targeted_updates: [a], errors: 'none' }, 'x', 'targeted_updates'), [
      a,
    ]);
  });

  test('else the one array-valued field, whatever its name', () => {
    assert.deepEqual(listOf({ entries: [a, b], count: 2, meta: { page: 1 } }, 'x'), [a, b]);
    assert.deepEqual(listOf({ entries: [] }, 'x'), []);
  });

  test('a known wrapper holding null is an empty list', () => {
    assert.deepEqual(listOf({ downloads: null, total: 0 }, 'x'), []);
  });

  test('what cannot be read as one list is a bad answer naming the operation', () => {
    assert.throws(
      () => listOf({ a: [a], b: [b] }, 'list downloads'),
      badAnswer(/^list downloads: .*2 lists/),
    );
    assert.throws(
      () => listOf({ message: 'ok' }, 'list views'),
      badAnswer(/without one \(fields: message\)/),
    );
    assert.throws(() => listOf('nope', 'x'), badAnswer(/a string/));
    assert.throws(() => listOf(undefined, 'x'), badAnswer(/nothing/));
  });

  test('firstOf: the first item of a list form, or an object that is the item itself', () => {
    assert.deepEqual(firstOf([a, b], 'x'), a);
    assert.deepEqual(firstOf({ requests: [a] }, 'x', 'requests'), a);
    assert.deepEqual(firstOf({ data: [b], status: 'ok' }, 'x'), b);
    // A v3 request object has `records` (a string) and an id: not an envelope.
    const request = { id: 7, records: '', status: 'STARTED' };
    assert.deepEqual(firstOf(request, 'x', 'requests'), request);
    assert.throws(() => firstOf([], 'get download'), badAnswer(/empty list/));
  });

  test('itemOf: one object as sent, out of an envelope, or alone in a list', () => {
    const d = { id: 'd1', status: 'queued' };
    assert.deepEqual(itemOf(d, 'x', 'download'), d);
    assert.deepEqual(itemOf({ download: d, request_id: 'r' }, 'x', 'download'), d);
    assert.deepEqual(itemOf({ data: d }, 'x', 'download'), d);
    assert.deepEqual(itemOf([d], 'x', 'download'), d);
    const started = { download_id: 'd2', data: { note: 1 } };
    assert.deepEqual(itemOf(started, 'x', 'download'), started, 'an id of its own: the item');
    assert.throws(() => itemOf([d, d], 'x', 'download'), badAnswer(/list of 2/));
  });

  test('recordsOf: records, or under data/items/results; never an unrelated list', () => {
    const r = [{ id: 1 }, 'junk', { id: 2 }];
    assert.deepEqual(recordsOf({ records: r }), [{ id: 1 }, { id: 2 }]);
    assert.deepEqual(recordsOf({ num_found: 2, data: r }), [{ id: 1 }, { id: 2 }]);
    assert.deepEqual(recordsOf({ items: r }), [{ id: 1 }, { id: 2 }]);
    assert.deepEqual(recordsOf({ num_found: 0, warnings: [{ w: 1 }] }), []);
  });

  test('result links in an envelope too', () => {
    const url = 'https://files.example/abc_0.csv?sig=1';
    assert.deepEqual(resultFiles({ files: [{ url, size: 10 }], expires_in: 3600 }, 'x'), [
      { index: 0, url, name: 'abc_0.csv' },
    ]);
  });
});

describe('createServiceClient and connectionFromEnv', () => {
  test('the API version comes from the URL, and credentials are checked before any request', async () => {
    const v4 = createServiceClient({
      url: 'http://127.0.0.1:1/v4/',
      email: 'a@b.c',
      password: 'pw',
    });
    assert.equal(v4.api, 'v4');
    assert.equal(v4.baseUrl, 'http://127.0.0.1:1/v4');
    await v4.close();
    const v3 = createServiceClient({ url: 'http://127.0.0.1:1/api/v3', token: 't' });
    assert.equal(v3.api, 'v3');
    await v3.close();
    const forced = createServiceClient({ url: 'http://127.0.0.1:1/root', api: 'v3', token: 't' });
    assert.equal(forced.api, 'v3');
    await forced.close();

    assert.throws(
      () => createServiceClient({ url: 'http://h/v4', email: 'a@b.c' }),
      (e: unknown) => {
        return (
          e instanceof UsageError &&
          /SLUICE_PASSWORD/.test(e.message) &&
          !/SLUICE_EMAIL/.test(e.message)
        );
      },
    );
    assert.throws(
      () => createServiceClient({ url: 'http://h/v4' }),
      /SLUICE_EMAIL and SLUICE_PASSWORD .*, or SLUICE_API_TOKEN/,
    );
    // The API token alone is enough for v4: it is the bearer token.
    const tokenOnly = createServiceClient({ url: 'http://127.0.0.1:1/v4', token: 't' });
    assert.equal(tokenOnly.api, 'v4');
    await tokenOnly.close();
    assert.throws(() => createServiceClient({ url: 'http://h/v3' }), /SLUICE_API_TOKEN/);
    assert.throws(() => createServiceClient({ url: 'http://h/api', token: 't' }), UsageError);
    assert.throws(
      () => createServiceClient({ url: 'not a url with s3cret', token: 't' }),
      (e: unknown) => {
        return e instanceof UsageError && !e.message.includes('s3cret');
      },
    );
  });

  test('credentials in the URL are taken out of it', async () => {
    const client = createServiceClient({ url: 'https://tok123:@api.example.com/v3' });
    assert.equal(client.baseUrl, 'https://api.example.com/v3');
    await client.close();
  });

  test('connectionFromEnv reads SLUICE_* and lets overrides win', () => {
    const env = {
      SLUICE_API_URL: 'http://h/v4',
      SLUICE_EMAIL: 'env@example.com',
      SLUICE_PASSWORD: 'env-pw',
      SLUICE_API_TOKEN: '',
    };
    assert.deepEqual(connectionFromEnv(env), {
      url: 'http://h/v4',
      email: 'env@example.com',
      password: 'env-pw',
    });
    assert.deepEqual(connectionFromEnv(env, { url: 'http://other/v3', api: 'v3', token: 'flag' }), {
      url: 'http://other/v3',
      api: 'v3',
      email: 'env@example.com',
      password: 'env-pw',
      token: 'flag',
    });
    assert.throws(() => connectionFromEnv({}), /SLUICE_API_URL/);
  });
});
