/**
 * What is retried and how long the client waits: a 500 is retried like a 503 for calls that may
 * run twice (reads, counts, previews, logins, result files) and never for a download start or
 * anything else that spends credits; a Retry-After longer than the call may wait fails at once,
 * saying how long the service asked for, unless the call allows that long (maxWaitMs).
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { ApiError } from '../../src/errors.js';
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
} from './support.js';

const COUNT = { type: 'businesses', query: '*' } as const;
const COUNT_PATH = { v4: 'POST /v4/businesses/search', v3: 'GET /v3/data/businesses' } as const;
const START = {
  v4: { match: 'POST /v4/properties/search', method: 'POST', path: '/v4/properties/search' },
  v3: { match: 'GET /v3/data/properties', method: 'GET', path: '/v3/data/properties' },
} as const;
const LIST = { v4: 'GET /v4/downloads', v3: 'GET /v3/requests' } as const;

async function statusesSince(emu: EmulatorHarness, from: number): Promise<string[]> {
  return (await emu.requests()).slice(from).map((r) => `${r.method} ${r.path} ${r.status}`);
}

describe('retry policy', () => {
  let emu: EmulatorHarness;

  before(async () => {
    emu = await startEmulator('real');
  });
  after(async () => {
    await emu?.close();
  });

  for (const api of APIS) {
    describe(api, () => {
      test('a 500 on a count, a listing and a result file is retried like a 503', async () => {
        await emu.reset();
        const { sleeps, options } = instantSleep();
        const client = clientFor(emu, api, options);
        try {
          const start = await client.startDownload({
            type: 'businesses',
            query: '*',
            numRecords: 150,
          });
          const info = await completed(emu, client, start.id);
          const file = info.files[0]!;
          const expected = await readAll(await client.openResultFile(start.id, file));
          sleeps.length = 0;
          await emu.faults([
            { match: COUNT_PATH[api], action: '500', times: 2 },
            { match: LIST[api], action: '500', times: 1 },
            { match: 'GET /files/', action: '500', times: 1 },
          ]);
          const from = await logLength(emu);
          assert.ok((await client.count(COUNT)).numFound > 0);
          assert.equal((await client.listDownloads()).length, 1);
          const bytes = await readAll(await client.openResultFile(start.id, file));
          assert.ok(bytes.equals(expected));
          assert.equal(sleeps.length, 4, 'two for the count, one each for the list and the file');
          const statuses = (await emu.requests()).slice(from).map((r) => r.status);
          assert.deepEqual(statuses, [500, 500, 200, 500, 200, 500, 200]);
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });

      test('a 500 on a download start is not sent again by the transport', async () => {
        await emu.reset();
        const client = clientFor(emu, api);
        try {
          await emu.faults([{ match: START[api].match, action: '500', times: 1 }]);
          const from = await logLength(emu);
          const start = await client.startDownload({
            type: 'properties',
            query: '*',
            numRecords: 10,
          });
          assert.equal(start.recovered, false);
          // Sent again only after a look at the downloads showed that none had been created.
          const log = (await statusesSince(emu, from)).filter(
            (line) => line.startsWith(LIST[api]) || line.startsWith(START[api].match),
          );
          assert.equal(log.length, 4);
          assert.deepEqual(
            log.map((line) => line.replace(/ \d+$/, '')),
            [LIST[api], START[api].match, LIST[api], START[api].match],
          );
          assert.ok(log[1]?.endsWith(' 500'));
          assert.equal((await client.listDownloads()).length, 1);
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });

      test('a Retry-After longer than the retry time budget fails at once, saying how long', async () => {
        await emu.reset();
        const { sleeps, options } = instantSleep();
        const client = clientFor(emu, api, options);
        try {
          await client.health();
          await emu.faults([{ match: COUNT_PATH[api], action: '429', times: 1, retry_after: 600 }]);
          const from = await logLength(emu);
          await assert.rejects(client.count(COUNT), (e: unknown) => {
            assert.ok(e instanceof ApiError, String(e));
            assert.equal(e.status, 429);
            assert.equal(e.retryable, true);
            assert.match(e.message, /asked to wait 600 seconds/);
            assert.match(e.message, /120 s this call may wait/);
            return true;
          });
          assert.deepEqual(sleeps, [], 'no wait that could only end in the same failure');
          assert.equal((await emu.requests()).length - from, 1);
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });

      test('a call that allows a longer wait (maxWaitMs) waits out a long Retry-After', async () => {
        await emu.reset();
        const { sleeps, options } = instantSleep();
        const client = clientFor(emu, api, options);
        try {
          await client.health();
          sleeps.length = 0;
          await emu.faults([{ match: COUNT_PATH[api], action: '429', times: 1, retry_after: 600 }]);
          const { numFound } = await client.count(COUNT, { maxWaitMs: 15 * 60_000 });
          assert.ok(numFound > 0);
          assert.deepEqual(sleeps, [600_000]);
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });

      test('a Retry-After slows every request to the service, not only the one it answered', async () => {
        await emu.reset();
        const { sleeps, options } = instantSleep();
        const client = clientFor(emu, api, options);
        try {
          await client.health();
          sleeps.length = 0;
          await emu.faults([{ match: COUNT_PATH[api], action: '429', times: 1, retry_after: 30 }]);
          const from = await logLength(emu);
          await client.count(COUNT);
          assert.deepEqual(sleeps, [30_000], 'the count waited as asked, once');
          // The next call, to another path, waits out what is left of the pause before it is
          // sent (the sleeps here take no time: nearly all of it is left).
          await client.health();
          assert.equal(sleeps.length, 2);
          assert.ok(sleeps[1]! > 25_000 && sleeps[1]! <= 30_000, `waited ${sleeps[1]} ms`);
          assert.equal((await emu.requests()).length - from, 3, 'no request sent early');
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });

      test('a call may also allow less than the client default', async () => {
        await emu.reset();
        const { sleeps, options } = instantSleep();
        const client = clientFor(emu, api, options);
        try {
          await client.health();
          sleeps.length = 0;
          await emu.faults([{ match: COUNT_PATH[api], action: '503', times: 1, retry_after: 5 }]);
          await assert.rejects(
            client.count(COUNT, { maxWaitMs: 1000 }),
            (e: unknown) =>
              e instanceof ApiError &&
              e.status === 503 &&
              /asked to wait 5 seconds/.test(e.message),
          );
          assert.deepEqual(sleeps, []);
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });
    });
  }

  test('v4: a 500 on login is retried', async () => {
    await emu.reset();
    const { sleeps, options } = instantSleep();
    const client = clientFor(emu, 'v4', options);
    try {
      await emu.faults([{ match: 'POST /v4/auth', action: '500', times: 1 }]);
      await client.account();
      assert.equal(sleeps.length, 1);
      assert.deepEqual(
        (await logged(emu, 'POST', '/v4/auth')).map((r) => r.status),
        [500, 200],
      );
    } finally {
      await emu.clearFaults();
      await client.close();
    }
  });

  test('v4: a 500 on a targeted update, which spends credits, is not retried', async () => {
    await emu.reset();
    const client = clientFor(emu, 'v4');
    try {
      await client.health();
      await emu.faults([{ match: 'POST /v4/targeted-updates', action: '500', times: 1 }]);
      await assert.rejects(
        client.createTargetedUpdate({ query: '*', numRecords: 2 }),
        (e: unknown) => e instanceof ApiError && e.status === 500,
      );
      assert.equal((await logged(emu, 'POST', '/v4/targeted-updates')).length, 1);
    } finally {
      await emu.clearFaults();
      await client.close();
    }
  });
});
