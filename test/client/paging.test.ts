/**
 * Paged lists: a service that pages `GET /downloads`, `/views`, v3 `/requests` and `/results`
 * is read page after page, in each form a page says more is to come (test/client/paging.ts),
 * so that a list is never taken for its first page. That matters most to crash recovery: a
 * download start that failed ambiguously looks for the download it created in the list, and
 * one on page 2 must be adopted, not bought again. A proxy in front of the emulator pages its
 * whole lists.
 */
import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type ClientEvent, createServiceClient } from '../../src/client/index.js';
import type { ServiceClient } from '../../src/client/types.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { PAGING_FORMS, pageLists } from './paging.js';
import type { ProxiedRequest } from './proxy.js';
import { RewritingProxy } from './proxy.js';
import { APIS, type Api, completed, instantSleep, logged, logLength } from './support.js';

let emu: EmulatorHarness;
let proxy: RewritingProxy;

before(async () => {
  emu = await EmulatorHarness.start({
    scale: 0.05,
    queueMs: 1000,
    rate: 500_000,
    fileRecords: 50,
  });
  proxy = await RewritingProxy.start(emu.url);
});
after(async () => {
  await proxy.close();
  await emu.close();
});
beforeEach(async () => {
  proxy.hooks = {};
  await emu.reset();
});

const LISTS = (req: ProxiedRequest) =>
  (req.method === 'GET' && ['/v4/downloads', '/v4/views', '/v3/requests'].includes(req.path)) ||
  (req.method === 'GET' && req.path.startsWith('/v3/results/'));

function settings(api: Api, root: string) {
  const { email, password, token } = emu.credentials;
  return api === 'v4' ? { url: `${root}/v4`, email, password } : { url: `${root}/v3`, token };
}

/** A client of the emulator itself, and one through the paging proxy. */
function clients(
  api: Api,
  events: ClientEvent[] = [],
): { direct: ServiceClient; paged: ServiceClient } {
  const options = { ...instantSleep().options, onEvent: (e: ClientEvent) => events.push(e) };
  return {
    direct: createServiceClient(settings(api, emu.url), instantSleep().options),
    paged: createServiceClient(settings(api, proxy.url), options),
  };
}

async function startSome(client: ServiceClient, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const type = client.api === 'v4' ? 'businesses' : 'products';
    ids.push((await client.startDownload({ type, query: '*', numRecords: 5 + i })).id);
  }
  return ids;
}

for (const form of PAGING_FORMS) {
  describe(`paged lists: ${form}`, () => {
    for (const api of APIS) {
      test(`${api}: every page of the downloads is read, each once`, async () => {
        const { direct, paged } = clients(api);
        try {
          const ids = await startSome(direct, 5);
          pageLists(proxy, form, 2, LISTS);
          const from = await logLength(emu);
          const listed = await paged.listDownloads();
          const path = api === 'v4' ? '/v4/downloads' : '/v3/requests';
          assert.equal((await logged(emu, 'GET', path, from)).length, 3, 'three pages of two');
          assert.deepEqual(
            listed.map((d) => d.id),
            (await direct.listDownloads()).map((d) => d.id),
          );
          assert.deepEqual(new Set(listed.map((d) => d.id)), new Set(ids));
        } finally {
          await direct.close();
          await paged.close();
        }
      });
    }

    test('v4 views and v3 result files too', async () => {
      const v4 = clients('v4');
      const v3 = clients('v3');
      try {
        for (const name of ['a', 'b', 'c']) await v4.direct.createView({ name, fields: ['id'] });
        const [id] = await startSome(v3.direct, 1);
        // 5 records, 50 a file: one file; a bigger download for several.
        const big = await v3.direct.startDownload({
          type: 'products',
          query: '*',
          numRecords: 160,
        });
        const whole = await completed(emu, v3.direct, big.id);
        assert.equal(whole.files.length, 4);
        pageLists(proxy, form, 2, LISTS);
        assert.deepEqual(
          (await v4.paged.listViews()).map((v) => v.name),
          (await v4.direct.listViews()).map((v) => v.name),
        );
        const files = (await v3.paged.getDownload(big.id)).files;
        assert.deepEqual(
          files.map((f) => f.name),
          whole.files.map((f) => f.name),
        );
        assert.equal((await v3.paged.getDownload(id!)).id, id);
      } finally {
        for (const c of [v4, v3]) {
          await c.direct.close();
          await c.paged.close();
        }
      }
    });

    for (const api of APIS) {
      // The regression: the listings before and after an ambiguous failure read page 1 only,
      // so the download the failed start created, on page 2, was not seen and a second one was
      // bought.
      test(`${api}: a start that failed ambiguously adopts its download from page 2`, async () => {
        const events: ClientEvent[] = [];
        const { direct, paged } = clients(api, events);
        try {
          await startSome(direct, 2);
          pageLists(proxy, form, 2, LISTS);
          const path = api === 'v4' ? '/v4/properties/search' : '/v3/data/properties';
          // The service starts the download, then the connection drops before the answer.
          await emu.faults([
            { match: `${api === 'v4' ? 'POST' : 'GET'} ${path}`, action: 'reset-after', times: 1 },
          ]);
          const start = await paged.startDownload({
            type: 'properties',
            query: '*',
            numRecords: 7,
          });
          assert.equal(start.recovered, true);
          const downloads = await direct.listDownloads();
          assert.equal(downloads.length, 3, 'no second download was bought');
          assert.equal(downloads.at(-1)?.id, start.id);
          assert.deepEqual(
            events
              .filter((e) => e.type === 'start-recovered')
              .map((e) => 'outcome' in e && e.outcome),
            ['adopted'],
          );
        } finally {
          await emu.clearFaults();
          await direct.close();
          await paged.close();
        }
      });
    }
  });
}

describe('paged lists that do not end', () => {
  test('a service that answers every page with the first ends the list after one repeat', async () => {
    const { direct, paged } = clients('v4');
    try {
      const ids = await startSome(direct, 3);
      const from = await logLength(emu);
      // The page asked for is ignored: page 1 again, and always a next page.
      proxy.hooks.headers = (req, status): Record<string, string> => {
        if (status !== 200 || req.path !== '/v4/downloads') return {};
        const page = Number(new URLSearchParams(req.search).get('page') ?? 1);
        return { link: `<${proxy.url}/v4/downloads?page=${page + 1}>; rel="next"` };
      };
      const listed = await paged.listDownloads();
      assert.deepEqual(
        listed.map((d) => d.id),
        ids,
      );
      assert.equal(
        (await logged(emu, 'GET', '/v4/downloads', from)).length,
        2,
        'page 1, and its repeat',
      );
    } finally {
      await direct.close();
      await paged.close();
    }
  });
});

describe("the emulator's own paging (pageSize)", () => {
  test('v4 downloads and views, and v3 requests, are read whole', async () => {
    const paging = await EmulatorHarness.start({ scale: 0.05, pageSize: 2 });
    const { email, password, token } = paging.credentials;
    const v4 = createServiceClient({ url: paging.v4Url, email, password }, instantSleep().options);
    const v3 = createServiceClient({ url: paging.v3Url, token }, instantSleep().options);
    try {
      const ids = await startSome(v4, 5);
      for (const name of ['a', 'b', 'c']) await v4.createView({ name, fields: ['id'] });
      const requests = await startSome(v3, 3);
      assert.deepEqual(
        (await v4.listDownloads()).map((d) => d.id),
        ids,
      );
      assert.deepEqual(
        (await v4.listViews()).map((v) => v.name).filter((n) => ['a', 'b', 'c'].includes(n)),
        ['a', 'b', 'c'],
      );
      assert.deepEqual(
        (await v3.listDownloads()).map((d) => d.id),
        requests,
      );
    } finally {
      await v4.close();
      await v3.close();
      await paging.close();
    }
  });
});
