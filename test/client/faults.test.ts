/**
 * The client under faults the emulator injects over real HTTP: bursts of 429 and 503, expired
 * tokens, connection cuts in result files, expired file URLs, and ambiguous failures of download
 * starts, which must never start a second download. Both API versions and both wire forms.
 */

import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { isAmbiguousFailure } from '../../src/client/http.js';
import { DownloadUncertainError } from '../../src/client/index.js';
import { WIRE_FORMS } from '../../src/emulator/wire.js';
import { ApiError, NetworkError } from '../../src/errors.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  APIS,
  clientFor,
  completed,
  instantSleep,
  logged,
  logLength,
  readAll,
  startEmulator,
  WIRES,
} from './support.js';

const START_PATH = { v4: 'POST /v4/properties/search', v3: 'GET /v3/data/properties' } as const;
const LIST_PATH = { v4: 'GET /v4/downloads', v3: 'GET /v3/requests' } as const;

for (const wire of WIRES) {
  describe(`client under faults, ${wire} wire`, () => {
    let emu: EmulatorHarness;

    before(async () => {
      emu = await startEmulator(wire);
    });
    after(async () => {
      await emu?.close();
    });

    for (const api of APIS) {
      describe(api, () => {
        const [method, startPath] = START_PATH[api].split(' ') as [string, string];

        test('a burst of 429s and 503s is retried, honouring Retry-After', async () => {
          await emu.reset();
          const { sleeps, options } = instantSleep();
          const client = clientFor(emu, api, options);
          try {
            await client.health(); // log in first, so only the call below meets the burst
            sleeps.length = 0;
            await emu.faults([
              { match: '*', action: '429', times: 2, retry_after: 2 },
              { match: '*', action: '503', times: 2 },
            ]);
            const from = await logLength(emu);
            const { numFound } = await client.count({ type: 'businesses', query: '*' });
            assert.ok(numFound > 0);
            assert.equal(sleeps.length, 4);
            assert.deepEqual(sleeps.slice(0, 2), [2000, 2000], 'Retry-After: 2 is two seconds');
            // Without Retry-After: full jitter below base * 2^(attempt - 1).
            assert.ok(sleeps[2]! >= 0 && sleeps[2]! <= 500 * 4);
            assert.ok(sleeps[3]! >= 0 && sleeps[3]! <= 500 * 8);
            const statuses = (await emu.requests()).slice(from).map((r) => r.status);
            assert.deepEqual(statuses.slice(-5), [429, 429, 503, 503, 200]);
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        test('a burst longer than the attempt bound fails with a retryable ApiError', async () => {
          const { sleeps, options } = instantSleep();
          const client = clientFor(emu, api, { ...options, maxAttempts: 4 });
          try {
            await client.health(); // log in first, so only the call below meets the burst
            await emu.faults([{ match: '*', action: '503', times: 10, retry_after: 1 }]);
            const from = await logLength(emu);
            await assert.rejects(client.count({ type: 'businesses', query: '*' }), (e: unknown) => {
              assert.ok(e instanceof ApiError);
              assert.equal(e.status, 503);
              assert.equal(e.retryable, true);
              assert.match(e.message, /temporarily unavailable/);
              return true;
            });
            assert.equal((await emu.requests()).length - from, 4);
            assert.equal(sleeps.length, 3);
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        test('retries stop at the total-time bound', async () => {
          let now = 0;
          const client = clientFor(emu, api, {
            now: () => now,
            sleep: async (ms) => {
              now += ms;
            },
            maxRetryTimeMs: 2500,
          });
          try {
            await client.health();
            await emu.faults([{ match: '*', action: '429', times: 10, retry_after: 1 }]);
            const from = await logLength(emu);
            await assert.rejects(client.count({ type: 'businesses', query: '*' }), (e: unknown) => {
              return e instanceof ApiError && e.status === 429 && e.retryable;
            });
            // Attempts at 0 s, 1 s and 2 s; one more would end after 2.5 s.
            assert.equal((await emu.requests()).length - from, 3);
            assert.equal(now, 2000);
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        // A backoff sleep that only the signal ends: were the signal not passed to it, the call
        // would wait for good (the timeout below only stops such a test from hanging).
        test('the backoff sleep ends when the signal aborts', { timeout: 20_000 }, async () => {
          const client = clientFor(emu, api, {
            sleep: (_ms, signal) =>
              new Promise((_, reject) =>
                signal?.addEventListener('abort', () => reject(signal.reason), { once: true }),
              ),
          });
          try {
            await client.health();
            await emu.faults([{ match: '*', action: '503', times: 1, retry_after: 30 }]);
            await assert.rejects(
              client.count(
                { type: 'businesses', query: '*' },
                { signal: AbortSignal.timeout(100) },
              ),
              (e: unknown) => (e as Error).name === 'TimeoutError',
            );
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        test('an ambiguous failure of a download start does not start a second download', async () => {
          await emu.reset();
          const client = clientFor(emu, api);
          try {
            await emu.faults([{ match: START_PATH[api], action: 'reset-after' }]);
            const start = await client.startDownload({
              type: 'properties',
              query: '*',
              numRecords: 100,
            });
            assert.equal(start.recovered, true);
            const downloads = await client.listDownloads();
            assert.equal(downloads.length, 1, 'exactly one download exists');
            assert.equal(downloads[0]?.id, start.id);
            const sent = (await emu.requests()).filter(
              (r) => r.method === method && r.path === startPath,
            );
            assert.equal(sent.length, 1, 'the start reached the service once');
            assert.equal(sent[0]?.status, 0, 'and its answer was dropped');
            const info = await completed(emu, client, start.id);
            assert.equal(info.numRecords, 100);
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        test('a start dropped before the work is sent again, once', async () => {
          await emu.reset();
          const client = clientFor(emu, api);
          try {
            await emu.faults([{ match: START_PATH[api], action: 'reset' }]);
            const start = await client.startDownload({
              type: 'properties',
              query: '*',
              numRecords: 50,
            });
            assert.equal(start.recovered, false);
            assert.equal((await client.listDownloads()).length, 1);
            assert.equal((await logged(emu, method, startPath)).length, 2);
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        test('a 502 on a download start is not retried blindly; 429 and 503 are', async () => {
          await emu.reset();
          const { options } = instantSleep();
          const client = clientFor(emu, api, options);
          try {
            await emu.faults([
              { match: START_PATH[api], action: '502', times: 1 },
              { match: START_PATH[api], action: '503', times: 1 },
              { match: START_PATH[api], action: '429', times: 1 },
            ]);
            const start = await client.startDownload({
              type: 'properties',
              query: '*',
              numRecords: 10,
            });
            assert.equal(start.recovered, false);
            // The list before the start, the 502, a look at the downloads (none new), a new
            // start meeting 503 and 429, retried by the transport, and the one that worked.
            const forms = WIRE_FORMS[wire];
            const ok = api === 'v3' ? (forms.v3Redirect ? 303 : 200) : forms.v4Start.status;
            const list = LIST_PATH[api];
            const startLine = `${method} ${startPath}`;
            const log = (await emu.requests())
              .filter((r) => r.path === startPath || r.path === list.split(' ')[1])
              .map((r) => `${r.method} ${r.path} ${r.status}`);
            assert.deepEqual(log, [
              `${list} 200`,
              `${startLine} 502`,
              `${list} 200`,
              `${startLine} 503`,
              `${startLine} 429`,
              `${startLine} ${ok}`,
            ]);
            assert.equal((await client.listDownloads()).length, 1);
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        test('ambiguous twice over: the second start is the last', async () => {
          await emu.reset();
          const client = clientFor(emu, api);
          try {
            await emu.faults([{ match: START_PATH[api], action: '500', times: 2 }]);
            await assert.rejects(
              client.startDownload({ type: 'properties', query: '*', numRecords: 10 }),
              (e: unknown) => e instanceof ApiError && e.status === 500 && isAmbiguousFailure(e),
            );
            assert.equal((await logged(emu, method, startPath)).length, 2);
            assert.equal((await client.listDownloads()).length, 0);
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        test('a connection cut mid-file is resumed and the bytes equal an uncut fetch', async () => {
          const client = clientFor(emu, api);
          try {
            const start = await client.startDownload({
              type: 'properties',
              query: '*',
              numRecords: 300,
            });
            const info = await completed(emu, client, start.id);
            const file = info.files[1]!;
            const whole = await readAll(await client.openResultFile(start.id, file));
            assert.ok(whole.length > 5000);
            await emu.faults([
              { match: 'GET /files/', action: 'cut', after_bytes: 3000, times: 2 },
            ]);
            const from = await logLength(emu);
            const resumed = await readAll(await client.openResultFile(start.id, file));
            assert.equal(resumed.length, whole.length);
            assert.ok(resumed.equals(whole), 'same bytes');
            const gets = await logged(emu, 'GET', `/files/${file.name}`, from);
            assert.deepEqual(
              gets.map((g) => g.status),
              [0, 0, 206],
              'cut twice, then the rest as a range',
            );
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        test('too many cuts give up with a retryable error', async () => {
          const client = clientFor(emu, api, { maxFileResumes: 1 });
          try {
            const start = await client.startDownload({
              type: 'businesses',
              query: '*',
              numRecords: 150,
            });
            const info = await completed(emu, client, start.id);
            await emu.faults([
              { match: 'GET /files/', action: 'cut', after_bytes: 1000, times: 5 },
            ]);
            await assert.rejects(
              readAll(await client.openResultFile(start.id, info.files[0]!)),
              (e: unknown) => {
                assert.ok(
                  e instanceof NetworkError || (e as { code?: string }).code === 'SLUICE_NETWORK',
                  String(e),
                );
                assert.equal((e as { retryable?: boolean }).retryable, true);
                return true;
              },
            );
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });

        test('an expired file URL is refreshed', async () => {
          const client = clientFor(emu, api);
          try {
            const start = await client.startDownload({
              type: 'properties',
              query: '*',
              numRecords: 200,
            });
            const info = await completed(emu, client, start.id);
            const file = info.files[1]!;
            const expected = await readAll(await client.openResultFile(start.id, file));
            await emu.expireFiles();
            const from = await logLength(emu);
            const bytes = await readAll(await client.openResultFile(start.id, file));
            assert.ok(bytes.equals(expected));
            const files = await logged(emu, 'GET', `/files/${file.name}`, from);
            assert.deepEqual(
              files.map((r) => r.status),
              [403, 200],
            );
          } finally {
            await client.close();
          }
        });

        test('a URL that expires while a cut file is resumed is refreshed, and the resume goes on', async () => {
          const client = clientFor(emu, api);
          try {
            const start = await client.startDownload({
              type: 'properties',
              query: '*',
              numRecords: 150,
            });
            const info = await completed(emu, client, start.id);
            const file = info.files[0]!;
            const expected = await readAll(await client.openResultFile(start.id, file));
            // Far more than the stream buffers hold: the cut is noticed only after the expiry.
            const cutAt = Math.floor(expected.length * 0.8);
            assert.ok(cutAt > 256 * 1024, `file is large enough (${expected.length} bytes)`);
            await emu.faults([{ match: 'GET /files/', action: 'cut', after_bytes: cutAt }]);
            const from = await logLength(emu);
            const stream = await client.openResultFile(start.id, file);
            const chunks: Buffer[] = [];
            let expired = false;
            for await (const chunk of stream) {
              chunks.push(chunk as Buffer);
              if (!expired) {
                expired = true;
                await emu.expireFiles();
              }
            }
            assert.ok(Buffer.concat(chunks).equals(expected));
            const gets = await logged(emu, 'GET', `/files/${file.name}`, from);
            assert.deepEqual(
              gets.map((r) => r.status),
              [0, 403, 206],
            );
          } finally {
            await emu.clearFaults();
            await client.close();
          }
        });
      });
    }

    test('v4: a token that expires mid-session is renewed once', async () => {
      const client = clientFor(emu, 'v4');
      try {
        await client.account();
        await emu.advanceClock(2 * 3600 * 1000);
        const from = await logLength(emu);
        const account = await client.account();
        assert.equal(account.email, emu.credentials.email);
        const log = (await emu.requests()).slice(from);
        assert.deepEqual(
          log.map((r) => `${r.method} ${r.path} ${r.status}`),
          ['GET /v4/account 401', 'POST /v4/auth 200', 'GET /v4/account 200'],
        );
      } finally {
        await client.close();
      }
    });

    test('v4: concurrent calls share one login', async () => {
      const client = clientFor(emu, 'v4');
      try {
        const from = await logLength(emu);
        await Promise.all([
          client.account(),
          client.listViews(),
          client.listDownloads(),
          client.health(),
        ]);
        assert.equal((await logged(emu, 'POST', '/v4/auth', from)).length, 1);
        // Expired for all of them at once: still one login.
        await emu.advanceClock(2 * 3600 * 1000);
        const again = await logLength(emu);
        await Promise.all([
          client.account(),
          client.listViews(),
          client.listDownloads(),
          client.health(),
        ]);
        assert.equal((await logged(emu, 'POST', '/v4/auth', again)).length, 1);
      } finally {
        await client.close();
      }
    });

    test('v4: a download start meeting an expired token is sent again after the login', async () => {
      await emu.reset();
      const client = clientFor(emu, 'v4');
      try {
        await client.health();
        await emu.advanceClock(2 * 3600 * 1000);
        const start = await client.startDownload({
          type: 'businesses',
          query: '*',
          numRecords: 10,
        });
        assert.equal(start.recovered, false);
        assert.equal((await client.listDownloads()).length, 1);
      } finally {
        await client.close();
      }
    });

    test('v4: a burst of 503 on a download start is retried and starts one download', async () => {
      await emu.reset();
      const client = clientFor(emu, 'v4');
      try {
        await emu.faults([{ match: START_PATH.v4, action: '503', times: 3, retry_after: 1 }]);
        const start = await client.startDownload({
          type: 'properties',
          query: '*',
          numRecords: 10,
        });
        assert.equal(start.recovered, false);
        assert.equal((await client.listDownloads()).length, 1);
        assert.equal((await logged(emu, 'POST', '/v4/properties/search')).length, 4);
      } finally {
        await emu.clearFaults();
        await client.close();
      }
    });

    test('v4: when the downloads cannot be listed after an ambiguous start, the error says so', async () => {
      await emu.reset();
      const client = clientFor(emu, 'v4', { maxAttempts: 1 });
      try {
        await client.health();
        // Rules apply in order, each to the next request it matches: the listing before the
        // start is only slowed, the one after it is dropped (and maxAttempts 1 keeps it so).
        await emu.faults([
          { match: START_PATH.v4, action: 'reset-after' },
          { match: 'GET /v4/downloads', action: 'slow', delay_ms: 1 },
          { match: 'GET /v4/downloads', action: 'reset' },
        ]);
        await assert.rejects(
          client.startDownload({ type: 'properties', query: '*', numRecords: 10 }),
          (e: unknown) => {
            assert.ok(e instanceof DownloadUncertainError, String(e));
            assert.equal(e.retryable, false);
            assert.equal(e.code, 'SLUICE_DOWNLOAD_UNCERTAIN');
            return true;
          },
        );
        assert.equal((await client.listDownloads()).length, 1, 'it had started; nothing more');
      } finally {
        await emu.clearFaults();
        await client.close();
      }
    });
  });
}
