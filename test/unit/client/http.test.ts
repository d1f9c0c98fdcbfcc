import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { ConnectionError } from '../../../src/client/errors.js';
import {
  abortableSleep,
  backoffDelay,
  errorMessages,
  isAmbiguousFailure,
  loggedPath,
  parseRetryAfter,
} from '../../../src/client/http.js';
import { ApiError } from '../../../src/errors.js';

const apiError = (status: number) =>
  new ApiError({
    status,
    method: 'POST',
    path: '/v4/x',
    body: undefined,
    details: [],
  });

describe('parseRetryAfter', () => {
  const now = Date.parse('2024-05-01T12:00:00Z');

  test('delay-seconds', () => {
    assert.equal(parseRetryAfter('0', now), 0);
    assert.equal(parseRetryAfter('3', now), 3000);
    assert.equal(parseRetryAfter(' 120 ', now), 120_000);
    assert.equal(parseRetryAfter('1.5', now), 1500);
    assert.equal(parseRetryAfter(['2', '9'], now), 2000);
  });

  test('an HTTP date, relative to now; a past date is no wait', () => {
    assert.equal(parseRetryAfter('Wed, 01 May 2024 12:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('Wed, 01 May 2024 11:00:00 GMT', now), 0);
  });

  test('absent or unreadable values are undefined', () => {
    assert.equal(parseRetryAfter(undefined, now), undefined);
    assert.equal(parseRetryAfter('', now), undefined);
    assert.equal(parseRetryAfter('-1', now), undefined);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter('5 minutes', now), undefined);
  });
});

describe('loggedPath (the debug log of requests)', () => {
  test('path and query without the host; values that may be secrets redacted', () => {
    assert.equal(loggedPath('https://api.test/v4/downloads?page=2'), '/v4/downloads?page=2');
    assert.equal(
      loggedPath('https://s3.test/f_0.txt?X-Amz-Signature=abc&X-Amz-Credential=k&expires=9'),
      '/f_0.txt?X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]&expires=9',
    );
    assert.equal(
      loggedPath('https://api.test/v3/data/x?q=a%20b&api_key=s3cret&access_token=t&sig=z'),
      '/v3/data/x?q=a+b&api_key=[redacted]&access_token=[redacted]&sig=[redacted]',
    );
    assert.equal(loggedPath('https://u:p@api.test/v4/auth'), '/v4/auth');
  });
});

describe('backoffDelay (full jitter)', () => {
  test('stays within [0, min(max, base * 2^(attempt-1))]', () => {
    for (let attempt = 1; attempt <= 12; attempt++) {
      const ceiling = Math.min(30_000, 500 * 2 ** (attempt - 1));
      assert.equal(
        backoffDelay(attempt, 500, 30_000, () => 0),
        0,
      );
      const top = backoffDelay(attempt, 500, 30_000, () => 0.999999);
      assert.ok(top <= ceiling && top >= ceiling - 1, `attempt ${attempt}: ${top} vs ${ceiling}`);
      assert.equal(
        backoffDelay(attempt, 500, 30_000, () => 0.5),
        Math.floor(ceiling / 2),
      );
    }
  });

  test('is capped', () => {
    assert.ok(backoffDelay(40, 500, 30_000, () => 0.999) <= 30_000);
  });
});

describe('abortableSleep', () => {
  test('rejects with the reason as soon as the signal aborts', async () => {
    const controller = new AbortController();
    let slept = false;
    const sleeping = abortableSleep(60_000, controller.signal).then(() => (slept = true));
    setTimeout(() => controller.abort(new Error('stop')), 10);
    await assert.rejects(sleeping, /stop/);
    assert.equal(slept, false, 'it never resolved');
  });

  test('an already aborted signal rejects at once', async () => {
    await assert.rejects(
      abortableSleep(60_000, AbortSignal.abort()),
      (e: unknown) => (e as Error).name === 'AbortError',
    );
  });

  test('resolves when its time has passed, not before, and stops listening to the signal', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const controller = new AbortController();
    let listeners = 0;
    const add = controller.signal.addEventListener.bind(controller.signal);
    const remove = controller.signal.removeEventListener.bind(controller.signal);
    controller.signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++;
      add(...args);
    }) as typeof add;
    controller.signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      listeners--;
      remove(...args);
    }) as typeof remove;
    let done = false;
    const sleeping = abortableSleep(5_000, controller.signal).then(() => (done = true));
    t.mock.timers.tick(4_999);
    await Promise.resolve();
    assert.equal(done, false, 'not before its time');
    t.mock.timers.tick(1);
    await sleeping;
    assert.equal(done, true);
    assert.equal(listeners, 0, 'no listener left on a long-lived signal');
    // Aborting afterwards changes nothing.
    controller.abort(new Error('late'));
  });
});

describe('errorMessages', () => {
  test('v4 contract body: message plus details not already in it', () => {
    const body = {
      error: 'Bad Request',
      message: "Invalid request: required property 'num_records' is missing",
      code: 400,
      details: [
        { field: 'num_records', message: "required property 'num_records' is missing" },
        { field: 'view', message: 'no such view' },
      ],
    };
    assert.deepEqual(errorMessages(body, ''), [
      "Invalid request: required property 'num_records' is missing",
      'view: no such view',
    ]);
  });

  test('a service error is said once: details that only repeat the message are left out, in any wording of its words', () => {
    // What the emulator sent for `views create x --fields id,prise`, printed twice before.
    const view = {
      error: 'Bad Request',
      message: 'unknown field in view: prise',
      code: 400,
      details: [{ field: 'fields', message: "unknown field 'prise'" }],
    };
    assert.deepEqual(errorMessages(view, ''), ['unknown field in view: prise']);
    const reordered = {
      message: 'view does not exist: nosuch',
      details: [{ field: 'view', message: "view 'nosuch' does not exist" }],
    };
    assert.deepEqual(errorMessages(reordered, ''), ['view does not exist: nosuch']);
    // `name` is said by `named`; the same in the real service's list shape.
    assert.deepEqual(
      errorMessages({ errors: ["a view named 'x' already exists", 'name: already exists'] }, ''),
      ["a view named 'x' already exists"],
    );
    // A detail that says all the message does, and more, is said in its place.
    assert.deepEqual(
      errorMessages(
        {
          message: 'must be an integer',
          details: [{ field: 'num_records', message: 'must be an integer' }],
        },
        '',
      ),
      ['num_records: must be an integer'],
    );
  });

  test('details that add to the message are kept: another field, number, sign or word', () => {
    const body = (message: string, field: string, detail: string) => ({
      message,
      details: [{ field, message: detail }],
    });
    for (const [message, field, detail, kept] of [
      ['Invalid request', 'num_records', 'must be an integer', 'num_records: must be an integer'],
      [
        'num_records must be at most 10',
        'num_records',
        'must be at most 100',
        'num_records: must be at most 100',
      ],
      ['num_records must be >= 1', 'num_records', 'must be <= 1', 'num_records: must be <= 1'],

      ['page must be 1 or more', 'page', 'must be -1 or more', 'page: must be -1 or more'],
    ] as const) {
      assert.deepEqual(errorMessages(body(message, field, detail), ''), [message, kept], detail);
    }
    // One that says all the message does, and more, is said in its place.
    assert.deepEqual(
      errorMessages(
        body('num_records is too large', 'num_records', 'is too large for a preview'),
        '',
      ),
      ['num_records: is too large for a preview'],
    );
  });

  test('the real service shape {"errors": [...]}', () => {
    assert.deepEqual(errorMessages({ errors: ['Query is invalid', 'num_records: too big'] }, ''), [
      'Query is invalid',
      'num_records: too big',
    ]);
    assert.deepEqual(errorMessages({ errors: [{ field: 'q', message: 'bad' }] }, ''), ['q: bad']);
  });

  test('v3 shapes', () => {
    assert.deepEqual(errorMessages({ error: 'invalid query' }, ''), ['invalid query']);
    assert.deepEqual(
      errorMessages({ error: 'Not Found', message: 'request 9 not found', code: 404 }, ''),
      ['request 9 not found'],
    );
  });

  test('storage XML and plain text; HTML pages say nothing', () => {
    const xml =
      '<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>';
    assert.deepEqual(errorMessages(xml, xml), ['Request has expired']);
    assert.deepEqual(errorMessages('upstream timed out', 'upstream timed out'), [
      'upstream timed out',
    ]);
    assert.deepEqual(
      errorMessages('<html><body>502</body></html>', '<html><body>502</body></html>'),
      [],
    );
    assert.equal(errorMessages('x'.repeat(2000), 'x'.repeat(2000))[0]?.length, 503);
  });
});

describe('isAmbiguousFailure', () => {
  test('a connection lost after sending, 500, 502 and 504 are ambiguous', () => {
    assert.equal(isAmbiguousFailure(new ConnectionError('lost', true)), true);
    assert.equal(isAmbiguousFailure(apiError(500)), true);
    assert.equal(isAmbiguousFailure(apiError(502)), true);
    assert.equal(isAmbiguousFailure(apiError(504)), true);
  });

  test('refusals and failures before sending are not', () => {
    assert.equal(isAmbiguousFailure(new ConnectionError('refused', false)), false);
    assert.equal(isAmbiguousFailure(apiError(429)), false);
    assert.equal(isAmbiguousFailure(apiError(503)), false);
    assert.equal(isAmbiguousFailure(apiError(400)), false);
    assert.equal(isAmbiguousFailure(new Error('x')), false);
  });
});
