/**
 * Download starts around the safeguard listing taken before them: a listing that fails no longer
 * stops a start that then works; without it, an ambiguous failure is told apart by creation
 * time; and a caller's verifier decides which new download is its own, on both API versions.
 */
import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  type ClientEvent,
  type ClientOptions,
  createServiceClient,
  DownloadUncertainError,
} from '../../src/client/index.js';
import type { DownloadInfo, DownloadStart, ServiceClient } from '../../src/client/types.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import { RewritingProxy } from './proxy.js';
import { APIS, type Api, clientFor, instantSleep, logged, startEmulator } from './support.js';

const START = {
  v4: { match: 'POST /v4/properties/search', method: 'POST', path: '/v4/properties/search' },
  v3: { match: 'GET /v3/data/properties', method: 'GET', path: '/v3/data/properties' },
} as const;
const LIST = { v4: 'GET /v4/downloads', v3: 'GET /v3/requests' } as const;
const REQUEST = { type: 'properties', query: '*', numRecords: 30 } as const;

/** The listing fails on every attempt (2 with maxAttempts 2), then works again. */
const listFails = (api: Api) => ({ match: LIST[api], action: '500', times: 2 });

/** A download of REQUEST started by another client. */
async function startOne(emu: EmulatorHarness, api: Api): Promise<DownloadStart> {
  const other = clientFor(emu, api);
  try {
    return await other.startDownload(REQUEST);
  } finally {
    await other.close();
  }
}

function recording(): { events: ClientEvent[]; options: ClientOptions } {
  const events: ClientEvent[] = [];
  return { events, options: { maxAttempts: 2, onEvent: (e) => events.push(e) } };
}

describe('download starts and the safeguard listing', () => {
  let emu: EmulatorHarness;

  before(async () => {
    emu = await startEmulator('contract');
  });
  after(async () => {
    await emu?.close();
  });
  beforeEach(async () => {
    await emu.reset();
  });

  for (const api of APIS) {
    describe(api, () => {
      const starts = () => logged(emu, START[api].method, START[api].path);

      test('a failed safeguard listing no longer stops a download that then starts', async () => {
        const { events, options } = recording();
        const client = clientFor(emu, api, options);
        try {
          await emu.faults([listFails(api)]);
          const start = await client.startDownload(REQUEST, {
            verify: async () => assert.fail('nothing to verify when the start answers'),
          });
          assert.equal(start.recovered, false);
          await emu.clearFaults();
          assert.deepEqual(
            (await client.listDownloads()).map((d) => d.id),
            [start.id],
          );
          assert.equal((await starts()).length, 1);
          const failed = events.filter((e) => e.type === 'safeguard-failed');
          assert.equal(failed.length, 1);
          assert.deepEqual(
            { ...failed[0], message: undefined },
            {
              type: 'safeguard-failed',
              operation: 'list downloads',
              what: 'properties download',
              message: undefined,
            },
          );
          assert.match(failed[0]?.type === 'safeguard-failed' ? failed[0].message : '', /500/);
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });

      test('without the safeguard listing, an ambiguous start adopts the download created since it was sent, not an older one', async () => {
        // An older download of the same search, ten minutes before (in the service's time and
        // in the client's: both clocks move together here).
        const older = await startOne(emu, api);
        await emu.advanceClock(10 * 60_000);
        const { events, options } = recording();
        const client = clientFor(emu, api, { ...options, now: () => Date.now() + 10 * 60_000 });
        try {
          await emu.faults([listFails(api), { match: START[api].match, action: 'reset-after' }]);
          const start = await client.startDownload(REQUEST);
          assert.equal(start.recovered, true);
          assert.notEqual(start.id, older.id);
          const all = await client.listDownloads();
          assert.equal(all.length, 2, 'the older one and this one; nothing more');
          assert.ok(all.some((d) => d.id === start.id));
          assert.equal((await starts()).length, 2, 'the older start and this one, once');
          assert.deepEqual(
            events.filter((e) => e.type !== 'retry').map((e) => e.type),
            ['safeguard-failed', 'start-recovered'],
          );
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });

      test('without the safeguard listing, a service clock minutes behind still finds the download', async () => {
        // This machine's clock runs three minutes ahead of the service's.
        const client = clientFor(emu, api, {
          ...recording().options,
          now: () => Date.now() + 3 * 60_000,
        });
        try {
          await emu.faults([listFails(api), { match: START[api].match, action: 'reset-after' }]);
          const start = await client.startDownload(REQUEST);
          assert.equal(start.recovered, true);
          assert.equal((await starts()).length, 1);
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });

      test('without the safeguard listing, two downloads created about then cannot be told apart', async () => {
        const neighbour = await startOne(emu, api);
        const client = clientFor(emu, api, recording().options);
        try {
          await emu.faults([listFails(api), { match: START[api].match, action: 'reset-after' }]);
          await assert.rejects(client.startDownload(REQUEST), (e: unknown) => {
            assert.ok(e instanceof DownloadUncertainError, String(e));
            assert.match(e.message, /2 downloads were created about then/);
            assert.ok(e.message.includes(neighbour.id));
            return true;
          });
          assert.equal((await starts()).length, 2, 'the neighbour and this one: never sent again');
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });

      test('a verifier that accepts no new download: DownloadUncertainError naming them, never a second start', async () => {
        const client = clientFor(emu, api);
        const asked: string[] = [];
        try {
          await emu.faults([{ match: START[api].match, action: 'reset-after' }]);
          await assert.rejects(
            client.startDownload(REQUEST, {
              verify: async (d) => {
                asked.push(d.id);
                throw new Error('its first records are not ready');
              },
            }),
            (e: unknown) => {
              assert.ok(e instanceof DownloadUncertainError, String(e));
              assert.equal(e.retryable, false);
              assert.ok(asked[0] && e.message.includes(asked[0]), e.message);
              assert.match(e.message, /could not be verified.*its first records are not ready/);
              return true;
            },
          );
          assert.equal(asked.length, 1);
          assert.equal((await starts()).length, 1);
          assert.equal((await client.listDownloads()).length, 1, 'the one it did start');
        } finally {
          await emu.clearFaults();
          await client.close();
        }
      });
    });
  }
});

describe('download starts through a proxy', () => {
  let emu: EmulatorHarness;
  let proxy: RewritingProxy;

  before(async () => {
    emu = await startEmulator('contract');
    proxy = await RewritingProxy.start(emu.url);
  });
  after(async () => {
    await proxy?.close();
    await emu?.close();
  });
  beforeEach(async () => {
    proxy.hooks = {};
    await emu.reset();
  });

  function proxied(api: Api, options: ClientOptions = {}): ServiceClient {
    const { email, password, token } = emu.credentials;
    const settings =
      api === 'v4'
        ? { url: `${proxy.url}/v4`, email, password }
        : { url: `${proxy.url}/v3`, token };
    return createServiceClient(settings, { ...instantSleep().options, ...options });
  }

  /**
   * While the start is in flight, a neighbour starts a download of the same search; then the
   * start does its work and loses its answer.
   */
  function neighbourDuringStart(api: Api): { id: () => string | undefined } {
    let id: string | undefined;
    proxy.hooks.before = async (req) => {
      if (id !== undefined || `${req.method} ${req.path}` !== START[api].match) return;
      id = (await startOne(emu, api)).id;
      await emu.faults([{ match: START[api].match, action: 'reset-after' }]);
    };
    return { id: () => id };
  }

  for (const api of APIS) {
    test(`${api}: a verifier picks this start's download out of two that appeared meanwhile`, async () => {
      const neighbour = neighbourDuringStart(api);
      const client = proxied(api);
      const asked: string[] = [];
      try {
        const start = await client.startDownload(REQUEST, {
          verify: async (d: DownloadInfo) => {
            asked.push(d.id);
            return d.id !== neighbour.id();
          },
        });
        assert.equal(start.recovered, true);
        assert.ok(neighbour.id() !== undefined && start.id !== neighbour.id());
        assert.deepEqual([...asked].sort(), [start.id, neighbour.id()].sort());
        assert.equal((await client.listDownloads()).length, 2);
      } finally {
        await emu.clearFaults();
        await client.close();
      }
    });

    test(`${api}: without a verifier, two new downloads of the same search are not guessed between`, async () => {
      neighbourDuringStart(api);
      const client = proxied(api);
      try {
        await assert.rejects(
          client.startDownload(REQUEST),
          (e: unknown) =>
            e instanceof DownloadUncertainError &&
            /2 new downloads appeared meanwhile/.test(e.message),
        );
      } finally {
        await emu.clearFaults();
        await client.close();
      }
    });

    test(`${api}: without the safeguard listing, a download that does not say when it was created is not adopted`, async () => {
      const client = proxied(api, { maxAttempts: 2 });
      proxy.hooks.rewrite = (req, status, body) => {
        if (status !== 200 || `${req.method} ${req.path}` !== LIST[api] || !Array.isArray(body))
          return undefined;
        return body.map((d: Record<string, unknown>) => {
          const { created_at: _v4, date_started: _v3, ...rest } = d;
          return rest;
        });
      };
      try {
        await emu.faults([listFails(api), { match: START[api].match, action: 'reset-after' }]);
        await assert.rejects(client.startDownload(REQUEST), (e: unknown) => {
          assert.ok(e instanceof DownloadUncertainError, String(e));
          assert.match(e.message, /does not say when it was created/);
          return true;
        });
        assert.equal((await logged(emu, START[api].method, START[api].path)).length, 1);
      } finally {
        await emu.clearFaults();
        await client.close();
      }
    });
  }
});
