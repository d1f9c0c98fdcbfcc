/**
 * The API token on v4: the service's guides put the token from the web portal straight into
 * `Authorization: Bearer <token>`, and many customers hold only that token. A client given only
 * the token sends it as it is and never logs in; a 401 then means the token itself is wrong or
 * expired, which is said plainly (exit 2), with no login tried. Email and password keep working,
 * and keep logging in again when the session ends.
 */
import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type ClientEvent, createServiceClient } from '../../src/client/index.js';
import { exitCodeOf } from '../../src/error-codes.js';
import { ApiError } from '../../src/errors.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { completed, instantSleep, logged } from './support.js';

/** Longer than the emulator's session tokens live (tokenTtlMs, an hour by default). */
const PAST_SESSION_MS = 2 * 60 * 60 * 1000;

let emu: EmulatorHarness;

before(async () => {
  emu = await EmulatorHarness.start({ scale: 0.05, fileRecords: 150 });
});
after(() => emu.close());
beforeEach(() => emu.reset());

function v4Client(
  settings: { email?: string; password?: string; token?: string },
  events: ClientEvent[] = [],
) {
  return createServiceClient(
    { url: emu.v4Url, ...settings },
    { ...instantSleep().options, onEvent: (event) => events.push(event) },
  );
}

describe('v4 with the API token', () => {
  test('only the API token: every call carries it as the bearer token, and nobody logs in', async () => {
    const client = v4Client({ token: emu.credentials.token });
    try {
      const account = await client.account();
      assert.equal(account.email, emu.credentials.email);
      const start = await client.startDownload({ type: 'products', query: '*', numRecords: 20 });
      const info = await completed(emu, client, start.id);
      assert.equal(info.numRecords, 20);
      // Past a session's life the API token still works: it is not a session.
      await emu.advanceClock(PAST_SESSION_MS);
      assert.equal((await client.getDownload(start.id)).id, start.id);
      assert.deepEqual(await logged(emu, 'POST', '/v4/auth'), [], 'no login');
    } finally {
      await client.close();
    }
  });

  test('a refused API token says it is wrong or expired (exit 2), and no login is tried', async () => {
    const wrong = 'not-the-portal-token';
    const events: ClientEvent[] = [];
    const client = v4Client({ token: wrong }, events);
    try {
      await assert.rejects(client.account(), (e: unknown) => {
        assert.ok(e instanceof ApiError, String(e));
        assert.equal(e.status, 401);
        assert.equal(e.code, 'SLUICE_API_401');
        assert.equal(e.retryable, false);
        assert.equal(exitCodeOf(e.code), 2);
        assert.match(e.message, /the API token was refused: it is wrong or has expired/);
        assert.match(e.message, /SLUICE_API_TOKEN/);
        assert.ok(!e.message.includes(wrong), 'the token stays out of the message');
        return true;
      });
      assert.deepEqual(await logged(emu, 'POST', '/v4/auth'), [], 'no login attempt');
      assert.ok(!events.some((e) => e.type === 'reauthenticated'));
    } finally {
      await client.close();
    }
  });

  test('email and password beside a token: sluice logs in, and again when the session ends', async () => {
    const { email, password, token } = emu.credentials;
    const events: ClientEvent[] = [];
    const client = v4Client({ email, password, token }, events);
    try {
      await client.account();
      assert.equal((await logged(emu, 'POST', '/v4/auth')).length, 1);
      await emu.advanceClock(PAST_SESSION_MS);
      await client.account();
      assert.equal((await logged(emu, 'POST', '/v4/auth')).length, 2, 'logged in again');
      assert.deepEqual(
        events.filter((e) => e.type === 'reauthenticated'),
        [{ type: 'reauthenticated', method: 'GET', path: '/v4/account' }],
      );
    } finally {
      await client.close();
    }
  });

  test('the token in the URL, as v3 writes it (https://TOKEN:@host/v4)', async () => {
    const url = new URL(emu.v4Url);
    url.username = emu.credentials.token;
    const client = createServiceClient({ url: url.href }, instantSleep().options);
    try {
      assert.equal(client.baseUrl, emu.v4Url);
      assert.equal((await client.account()).email, emu.credentials.email);
      assert.deepEqual(await logged(emu, 'POST', '/v4/auth'), []);
    } finally {
      await client.close();
    }
  });
});

describe('v3 with a refused token', () => {
  test('says the token is wrong or expired, without the token', async () => {
    const wrong = 'not-the-v3-token';
    const client = createServiceClient({ url: emu.v3Url, token: wrong }, instantSleep().options);
    try {
      await assert.rejects(client.count({ type: 'products', query: '*' }), (e: unknown) => {
        assert.ok(e instanceof ApiError, String(e));
        assert.equal(e.code, 'SLUICE_API_401');
        assert.match(e.message, /the API token was refused: it is wrong or has expired/);
        assert.doesNotMatch(e.message, /SLUICE_EMAIL/, 'v3 has no login to suggest');
        assert.ok(!e.message.includes(wrong));
        return true;
      });
    } finally {
      await client.close();
    }
  });
});
