/**
 * The event hook (ClientOptions.onEvent) the CLI logs from: each thing the client does on its
 * own behind a call is told, and no event carries a password, a token, an Authorization header
 * or a signed URL's query string.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import type { RetryEvent } from '../../src/client/http.js';
import type { ClientEvent } from '../../src/client/index.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import { APIS, clientFor, completed, readAll, startEmulator } from './support.js';

const START = { v4: 'POST /v4/properties/search', v3: 'GET /v3/data/properties' } as const;
const LIST = { v4: 'GET /v4/downloads', v3: 'GET /v3/requests' } as const;

function assertNoSecrets(emu: EmulatorHarness, events: ClientEvent[]): void {
  const text = JSON.stringify(events);
  const { password, token } = emu.credentials;
  for (const secret of [password, token, 'Bearer', 'Basic', 'X-Signature', 'X-Expires', '?']) {
    assert.ok(secret && !text.includes(secret), `an event shows ${secret}: ${text}`);
  }
  assert.ok(!/authorization/i.test(text), text);
}

describe('client events', () => {
  let emu: EmulatorHarness;

  before(async () => {
    emu = await startEmulator('contract');
  });
  after(async () => {
    await emu?.close();
  });

  for (const api of APIS) {
    test(`${api}: retries, fresh file URLs, resumed files, a failed safeguard and a recovered start are told, without secrets`, async () => {
      await emu.reset();
      const events: ClientEvent[] = [];
      const retries: RetryEvent[] = [];
      const client = clientFor(emu, api, {
        maxAttempts: 2,
        onEvent: (e) => events.push(e),
        onRetry: (e) => retries.push(e),
      });
      try {
        // A refused search, retried.
        await emu.faults([{ match: '*', action: '503', times: 1, retry_after: 1 }]);
        await client.count({ type: 'businesses', query: 'name:"Acme Roofing"' });
        const retry = events.find((e) => e.type === 'retry');
        assert.ok(retry?.type === 'retry');
        assert.equal(retry.reason, 'HTTP 503');
        assert.equal(retry.attempt, 1);
        assert.equal(retry.delayMs, 1000);
        assert.match(retry.path, /^\/v[34]\//);
        assert.equal(retries.length, 1, 'the transport hook is still called');

        // A safeguard listing that fails, then a start whose answer is lost.
        await emu.faults([
          { match: LIST[api], action: '500', times: 2 },
          { match: START[api], action: 'reset-after' },
        ]);
        const start = await client.startDownload({
          type: 'properties',
          query: '*',
          numRecords: 150,
        });
        assert.equal(start.recovered, true);
        const safeguard = events.find((e) => e.type === 'safeguard-failed');
        assert.ok(safeguard?.type === 'safeguard-failed');
        assert.equal(safeguard.what, 'properties download');
        assert.equal(safeguard.operation, 'list downloads');
        const recovered = events.find((e) => e.type === 'start-recovered');
        assert.deepEqual(recovered && { ...recovered, reason: '' }, {
          type: 'start-recovered',
          what: 'properties download',
          reason: '',
          outcome: 'adopted',
          downloadId: start.id,
        });

        // An expired file URL, refreshed; then a cut file, resumed.
        const info = await completed(emu, client, start.id);
        const file = info.files[0]!;
        const whole = await readAll(await client.openResultFile(start.id, file));
        await emu.expireFiles();
        assert.ok((await readAll(await client.openResultFile(start.id, file))).equals(whole));
        const fresh = (await client.getDownload(start.id)).files[0]!;
        await emu.faults([{ match: 'GET /files/', action: 'cut', after_bytes: 2000 }]);
        assert.ok((await readAll(await client.openResultFile(start.id, fresh))).equals(whole));
        assert.deepEqual(
          events.filter((e) => e.type === 'file-url-refreshed'),
          [
            {
              type: 'file-url-refreshed',
              downloadId: start.id,
              file: file.name,
              reason: 'HTTP 403',
            },
          ],
        );
        const resumed = events.filter((e) => e.type === 'file-resumed');
        assert.equal(resumed.length, 1);
        assert.ok(resumed[0]?.type === 'file-resumed');
        assert.equal(resumed[0].downloadId, start.id);
        assert.equal(resumed[0].file, file.name);
        assert.equal(resumed[0].resume, 1);
        assert.ok(resumed[0].fromByte >= 2000 && resumed[0].fromByte < whole.length);

        assertNoSecrets(emu, events);
      } finally {
        await emu.clearFaults();
        await client.close();
      }
    });
  }

  test('v4: a login after a 401 is told, without the token or the password', async () => {
    await emu.reset();
    const events: ClientEvent[] = [];
    const client = clientFor(emu, 'v4', { onEvent: (e) => events.push(e) });
    try {
      await client.account();
      assert.deepEqual(events, [], 'the first login is not a re-authentication');
      await emu.advanceClock(2 * 3600 * 1000);
      await client.listViews();
      // The service's clock moved two hours past this one: said once, besides the new login.
      const [skew, ...rest] = events as ClientEvent[];
      assert.ok(skew?.type === 'clock-skew' && Math.abs(skew.offsetMs - 7_200_000) < 60_000);
      assert.deepEqual(rest, [{ type: 'reauthenticated', method: 'GET', path: '/v4/views' }]);
      assertNoSecrets(emu, events);
    } finally {
      await client.close();
    }
  });

  test('a listener that throws does not fail the call', async () => {
    await emu.reset();
    const client = clientFor(emu, 'v4', {
      onEvent: () => {
        throw new Error('log stream closed');
      },
    });
    try {
      await emu.faults([{ match: '*', action: '503', times: 1 }]);
      assert.ok((await client.count({ type: 'businesses', query: '*' })).numFound > 0);
    } finally {
      await emu.clearFaults();
      await client.close();
    }
  });
});
