/**
 * Lists in envelopes: every list the client reads (downloads, views, targeted updates, v3
 * requests and results) also arrives wrapped in an object (`{downloads: [...], total: 3}`,
 * `{data: [...]}`, or one array-valued field of any name), with fields nobody documented. A
 * proxy in front of the emulator wraps the emulator's answers.
 */
import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type ClientOptions, createServiceClient } from '../../src/client/index.js';
import type { DownloadInfo, ServiceClient } from '../../src/client/types.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import { type ProxiedRequest, RewritingProxy } from './proxy.js';
import {
  APIS,
  type Api,
  completed,
  instantSleep,
  logged,
  startEmulator,
  WIRES,
} from './support.js';

/** A client of the emulator through the proxy. */
function proxiedClient(
  emu: EmulatorHarness,
  proxy: RewritingProxy,
  api: Api,
  options: ClientOptions = {},
): ServiceClient {
  const { email, password, token } = emu.credentials;
  const settings =
    api === 'v4' ? { url: `${proxy.url}/v4`, email, password } : { url: `${proxy.url}/v3`, token };
  return createServiceClient(settings, { ...instantSleep().options, ...options });
}

/** Each object of a list with fields the contract does not have. */
function withExtras(list: unknown[]): unknown[] {
  return list.map((item) =>
    item && typeof item === 'object'
      ? { ...item, region: 'eu-west', _links: { self: '/x' }, tags: ['a'] }
      : item,
  );
}

/** A download with its file URLs unsigned: each answer signs them anew, expiring a while later. */
function unsigned(download: DownloadInfo): DownloadInfo {
  return {
    ...download,
    files: download.files.map((f) => ({ ...f, url: f.url.split('?')[0] ?? '' })),
  };
}

const LIST_PATHS: Record<Api, (req: ProxiedRequest) => boolean> = {
  v4: (r) =>
    r.method === 'GET' &&
    (r.path === '/v4/downloads' || r.path === '/v4/views' || r.path === '/v4/targeted-updates'),
  v3: (r) => r.method === 'GET' && (r.path === '/v3/requests' || r.path.startsWith('/v3/results/')),
};

const NAMES: Record<string, string> = {
  downloads: 'downloads',
  views: 'views',
  'targeted-updates': 'targeted_updates',
  requests: 'requests',
  results: 'results',
};

/** Envelopes seen from JSON APIs, each a function of the bare list. */
const ENVELOPES: Record<string, (list: unknown[], req: ProxiedRequest) => unknown> = {
  'named after what it holds': (list, req) => {
    const key = NAMES[req.path.split('/')[2] ?? ''] ?? 'data';
    return { [key]: withExtras(list), total: list.length, page: 1 };
  },
  data: (list) => ({ data: withExtras(list), meta: { count: list.length } }),
  items: (list) => ({ items: withExtras(list), next: null }),
  'one array field of another name': (list) => ({ entries: withExtras(list), count: list.length }),
};

for (const wire of WIRES) {
  describe(`list answers in envelopes, ${wire} wire`, () => {
    let emu: EmulatorHarness;
    let proxy: RewritingProxy;

    before(async () => {
      emu = await startEmulator(wire);
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

    for (const api of APIS) {
      describe(api, () => {
        // The regression: the safeguard listing before a start was read as a bare array only,
        // so a wrapped answer failed every download before it was even asked for.
        test('a wrapped downloads listing no longer fails every download before it starts', async () => {
          const client = proxiedClient(emu, proxy, api);
          try {
            proxy.hooks.rewrite = (req, status, body) =>
              status === 200 && LIST_PATHS[api](req) && Array.isArray(body)
                ? { [api === 'v4' ? 'downloads' : 'requests']: body, total: body.length }
                : undefined;
            const start = await client.startDownload({
              type: 'properties',
              query: '*',
              numRecords: 20,
            });
            assert.equal(start.recovered, false);
            const [only] = await client.listDownloads();
            assert.equal(only?.id, start.id);
            const path = api === 'v4' ? '/v4/properties/search' : '/v3/data/properties';
            assert.equal((await logged(emu, api === 'v4' ? 'POST' : 'GET', path)).length, 1);
          } finally {
            await client.close();
          }
        });

        for (const [name, envelope] of Object.entries(ENVELOPES)) {
          test(`lists ${name}, with unknown fields, read like bare arrays`, async () => {
            // What the same calls return while the lists come bare.
            const bare = proxiedClient(emu, proxy, api);
            const client = proxiedClient(emu, proxy, api);
            try {
              const start = await bare.startDownload({
                type: 'businesses',
                query: '*',
                numRecords: 160,
              });
              const plain = await completed(emu, bare, start.id);
              if (api === 'v4') {
                await bare.createView({ name: 'slim', fields: ['id', 'name'] });
                await bare.createTargetedUpdate({ query: '*', numRecords: 2 });
                await emu.advanceClock(60_000); // the update completes: both reads see one state
              }
              const plainList = await bare.listDownloads();
              const plainViews = api === 'v4' ? await bare.listViews() : [];
              const plainUpdates = api === 'v4' ? await bare.listTargetedUpdates() : [];

              proxy.hooks.rewrite = (req, status, body) =>
                status === 200 && LIST_PATHS[api](req) && Array.isArray(body)
                  ? envelope(body, req)
                  : undefined;
              assert.deepEqual(
                (await client.listDownloads()).map(unsigned),
                plainList.map(unsigned),
              );
              // v3 reads the result files from /results/{id}, a list too.
              assert.deepEqual(unsigned(await client.getDownload(start.id)), unsigned(plain));
              assert.ok(plain.files.length >= 2, 'several result files');
              if (api === 'v4') {
                assert.ok(plainViews.some((v) => v.name === 'slim'));
                assert.deepEqual(await client.listViews(), plainViews);
                assert.ok(plainUpdates.length >= 1);
                assert.deepEqual(await client.listTargetedUpdates(), plainUpdates);
              } else {
                assert.deepEqual(await client.health(), { status: 'ok' });
              }
            } finally {
              await bare.close();
              await client.close();
            }
          });
        }

        test('an object holding several unnamed lists is a clear error, not a guess', async () => {
          const client = proxiedClient(emu, proxy, api);
          try {
            proxy.hooks.rewrite = (req, status, body) =>
              status === 200 && LIST_PATHS[api](req) ? { a: body, b: [] } : undefined;
            await assert.rejects(client.listDownloads(), (e: unknown) => {
              assert.equal((e as { code?: string }).code, 'SLUICE_API_BAD_RESPONSE');
              assert.match((e as Error).message, /list downloads: .*2 lists/);
              return true;
            });
          } finally {
            await client.close();
          }
        });
      });
    }

    test('v4: a download in an envelope, and preview records under data', async () => {
      const client = proxiedClient(emu, proxy, 'v4');
      try {
        const start = await client.startDownload({ type: 'properties', query: '*', numRecords: 5 });
        const plain = await client.getDownload(start.id);
        const preview = await client.preview({ type: 'properties', query: '*', numRecords: 3 });
        proxy.hooks.rewrite = (req, status, body) => {
          if (status !== 200) return undefined;
          if (req.method === 'GET' && req.path === `/v4/downloads/${start.id}`)
            return { download: body, request_id: 'r-1' };
          if (req.path === '/v4/properties/search') {
            const { records, ...rest } = body as { records: unknown[] };
            return { ...rest, data: records, warnings: ['slow query'] };
          }
          return undefined;
        };
        assert.deepEqual(unsigned(await client.getDownload(start.id)), unsigned(plain));
        assert.deepEqual(
          await client.preview({ type: 'properties', query: '*', numRecords: 3 }),
          preview,
        );
      } finally {
        await client.close();
      }
    });

    test('v3: the single-request page and the start, wrapped or as a bare object', async () => {
      const client = proxiedClient(emu, proxy, 'v3');
      try {
        const start = await client.startDownload({ type: 'products', query: '*', numRecords: 5 });
        const plain = await client.getDownload(start.id);
        proxy.hooks.rewrite = (req, status, body) => {
          if (status !== 200 || !Array.isArray(body)) return undefined;
          if (req.path === `/v3/requests/${start.id}`) return body[0];
          if (req.path === '/v3/data/products' && /download=true/.test(req.search))
            return { requests: body, status: 'ok' };
          return undefined;
        };
        assert.deepEqual(unsigned(await client.getDownload(start.id)), unsigned(plain));
        const again = await client.startDownload({ type: 'products', query: '*', numRecords: 7 });
        assert.equal(again.recovered, false);
        assert.notEqual(again.id, start.id);
        assert.equal((await client.getDownload(again.id)).id, again.id);
      } finally {
        await client.close();
      }
    });
  });
}
