/**
 * The control API (/_emulator/), injected faults, bad input that must never be a 500, unknown
 * routes, and determinism of the generated data, in both wire forms.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  advance,
  assertV3Error,
  assertV4Error,
  call,
  emulatorNow,
  fetchBytes,
  formsOf,
  type Json,
  resultUrls,
  runTime,
  startEmulator,
  V3,
  V4,
  WIRES,
} from './support.js';

for (const wire of WIRES) {
  describe(`control API and faults (${wire})`, () => {
    const forms = formsOf(wire);
    let emu: EmulatorHarness;
    let api: V4;

    before(async () => {
      emu = await startEmulator(wire);
      api = new V4(emu);
    });
    after(() => emu.close());

    const fresh = async () => {
      await emu.reset();
      await api.login();
    };

    describe('control API', () => {
      test('GET /_emulator/info describes the emulator', async () => {
        await fresh();
        const info = await emu.control<Json>('GET', 'info');
        assert.equal(info.wire, wire);
        assert.equal(info.page_size, 0, 'lists are whole unless a page size is given');
        assert.equal(info.seed, 1);
        assert.equal(info.scale, 0.05);
        for (const type of ['properties', 'businesses', 'products', 'people']) {
          assert.ok(Number.isInteger(info.counts[type]) && info.counts[type] > 0, type);
        }
        assert.ok(Math.abs(Date.parse(info.now) - Date.now()) < 60_000, 'the clock is now');
      });

      test('reset returns account, views, downloads, tokens and clock to the start', async () => {
        await fresh();
        const oldToken = api.token;
        await api.ok('POST', '/views', { name: 'v', fields: ['id'] });
        await api.preview('properties', { query: '*', num_records: 5 });
        await api.startDownload('businesses', { query: '*', num_records: 5 });
        await api.ok('PUT', '/account', { first_name: 'Changed', password: 'changed-password' });
        await emu.setCredits({ product_credits_allotted: 7 });
        await advance(emu, 24 * 60 * 60 * 1000);
        await emu.faults([{ match: 'GET /v4/nothing', action: '503', times: 5 }]);

        const res = await emu.control<Json>('POST', 'reset');
        assert.equal(typeof res.message, 'string');
        assert.ok(Math.abs((await emulatorNow(emu)) - Date.now()) < 60_000, 'clock back to now');
        assertV4Error(
          wire,
          await call('GET', `${emu.v4Url}/account`, {
            headers: { authorization: `Bearer ${oldToken}` },
          }),
          401,
          undefined,
        );
        await api.login('demo@sluice.test', 'sluice-demo');
        const account = await api.account();
        assert.equal(account.first_name, 'Demo');
        assert.equal(account.num_credits_used, 0);
        assert.equal(account.product_credits_allotted, 1_000_000);
        assert.deepEqual(await api.ok('GET', '/views'), []);
        assert.deepEqual(await api.ok('GET', '/downloads'), []);
        assert.deepEqual(await emu.outbox(), []);
        assert.deepEqual((await emu.control<Json>('GET', 'faults')).rules, []);
        const log = await emu.requests();
        assert.deepEqual(
          log.map((r) => `${r.method} ${r.path} ${r.status}`),
          [
            'GET /v4/account 401',
            'POST /v4/auth 200',
            'GET /v4/account 200',
            'GET /v4/views 200',
            'GET /v4/downloads 200',
          ],
        );
      });

      test('result URLs issued before a reset do not serve the files of later downloads', async () => {
        await fresh();
        const { id } = await api.startDownload('businesses', { query: '*', num_records: 3 });
        await advance(emu, runTime(emu, 3));
        const [url] = resultUrls(wire, await api.download(id));
        assert.equal((await fetchBytes(url!)).status, 200);
        await emu.reset();
        await api.login();
        const again = await api.startDownload('products', {
          query: '*',
          num_records: 2,
          format: 'csv',
        });
        await advance(emu, runTime(emu, 2));
        assert.equal((await api.download(again.id)).status, 'completed');
        const stale = await fetchBytes(url!);
        assert.ok(
          stale.status === 403 || stale.status === 404,
          `a URL from before the reset answered ${stale.status}: ${stale.body.toString().slice(0, 80)}`,
        );
      });

      test('PUT /_emulator/credits sets allotments and usage, seen by GET /account', async () => {
        await fresh();
        const body = await emu.control<Json>('PUT', 'credits', {
          business_credits_allotted: 50,
          business_credits_used: 20,
          people_credits_allotted: 0,
        });
        assert.equal(body.business_credits_allotted, 50);
        assert.equal(body.business_credits_used, 20);
        const account = await api.account();
        assert.equal(account.business_credits_allotted, 50);
        assert.equal(account.business_credits_used, 20);
        assert.equal(account.people_credits_allotted, 0);
        assert.equal(account.num_credits_used, 20);
        for (const bad of [
          { business_credits: 5 },
          { business_credits_used: -1 },
          { business_credits_used: 'x' },
        ]) {
          const res = await call('PUT', `${emu.url}/_emulator/credits`, { json: bad });
          assert.equal(res.status, 400, res.text);
        }
      });

      test('POST /_emulator/clock moves emulator time forward only', async () => {
        await fresh();
        const before = await emulatorNow(emu);
        const res = await emu.control<Json>('POST', 'clock', { advance_ms: 3_600_000 });
        const now = Date.parse(res.now);
        assert.ok(now - before >= 3_600_000 && now - before < 3_600_000 + 5_000);
        for (const bad of [{ advance_ms: -1 }, {}, { advance_ms: 'soon' }, { advance_ms: 1.5 }]) {
          const r = await call('POST', `${emu.url}/_emulator/clock`, { json: bad });
          assert.equal(r.status, 400, r.text);
        }
      });

      test('the request log shows method, path and status of each request', async () => {
        await fresh();
        const cleared = await call('DELETE', `${emu.url}/_emulator/requests`);
        assert.equal(cleared.status, 200);
        await api.get('/health');
        await api.get('/views/ghost');
        await call('POST', `${emu.v4Url}/auth`, { json: { email: 'x@y.z', password: 'nope' } });
        await api.search('properties', { query: '*' });
        await new V3(emu).get('/requests?x=1');
        await call('GET', `${emu.url}/nowhere`);
        const log = await emu.requests();
        assert.deepEqual(
          log.map((r) => [r.method, r.path, r.status]),
          [
            ['GET', '/v4/health', 200],
            ['GET', '/v4/views/ghost', 404],
            ['POST', '/v4/auth', 401],
            // Without num_records: refused under the contract, a preview of 10 elsewhere.
            ['POST', '/v4/properties/search', forms.lenientBodies ? 200 : 400],
            ['GET', '/v3/requests', 200],
            ['GET', '/nowhere', 404],
          ],
        );
        for (const r of log) {
          assert.ok(!Number.isNaN(Date.parse(r.time)));
          assert.ok(r.duration_ms > 0);
        }
      });

      test('requests with a malformed URL are logged too', async () => {
        await fresh();
        await call('DELETE', `${emu.url}/_emulator/requests`);
        const res = await api.get('/downloads/%ZZ');
        assert.equal(res.status, 400);
        const log = await emu.requests();
        assert.deepEqual(
          log.map((r) => [r.method, r.path, r.status]),
          [['GET', '/v4/downloads/%ZZ', 400]],
        );
      });
    });

    describe('faults', () => {
      test('scripted 429s: exactly `times` of them with Retry-After, then success', async () => {
        await fresh();
        await emu.faults([{ match: 'GET /v4/health', action: '429', times: 2, retry_after: 1 }]);
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) {
          const res = await api.get('/health');
          statuses.push(res.status);
          if (res.status === 429) {
            assert.equal(res.headers['retry-after'], '1');
            assertV4Error(wire, res, 429);
          } else assert.deepEqual(res.json, { status: 'ok' });
        }
        assert.deepEqual(statuses, [429, 429, 200]);
        // Other operations were not affected.
        assert.equal((await api.get('/account')).status, 200);
        const rules = (await emu.control<Json>('GET', 'faults')).rules;
        assert.equal(rules[0].remaining, 0);
      });

      test('scripted 500 on v3 results answers {error, message, code, requestId}', async () => {
        await fresh();
        await emu.faults([{ match: 'GET /v3/results', action: '500' }]);
        const v3 = new V3(emu);
        assertV3Error(await v3.get('/results/1'), 500);
        assertV3Error(await v3.get('/results/1'), 404);
        await emu.faults([{ match: 'POST /v4/properties/search', action: '502' }]);
        assertV4Error(wire, await api.search('properties', { query: '*', num_records: 1 }), 502);
        assert.equal((await api.account()).property_credits_used, 0, 'nothing was done');
      });

      test('reset-after on a download start creates the download but drops the answer', async () => {
        await fresh();
        await emu.faults([{ match: 'POST /v4/businesses/search', action: 'reset-after' }]);
        await assert.rejects(
          api.search('businesses', { query: '*', num_records: 10, download: true }),
          'the connection is dropped',
        );
        const list = await api.ok('GET', '/downloads');
        assert.equal(list.length, 1, 'the download exists');
        await advance(emu, runTime(emu, 10));
        const d = await api.download(String(list[0].id));
        assert.equal(d.status, 'completed');
        assert.equal(d.num_records, 10);
        const log = await emu.requests();
        const dropped = log.find((r) => r.path === '/v4/businesses/search');
        assert.equal(dropped?.status, 0, 'logged as dropped');
      });

      test('reset drops the connection before anything is done', async () => {
        await fresh();
        await emu.faults([
          { match: 'POST /v4/products/search', action: 'reset' },
          { match: 'POST /v4/businesses/search', action: 'reset' },
        ]);
        await assert.rejects(api.search('products', { query: '*', num_records: 3 }));
        await assert.rejects(
          api.search('businesses', { query: '*', num_records: 10, download: true }),
        );
        const log = await emu.requests();
        assert.deepEqual(
          log.filter((r) => r.path.endsWith('/search')).map((r) => r.status),
          [0, 0],
        );
        assert.deepEqual(await api.ok('GET', '/downloads'), []);
        const account = await api.account();
        assert.equal(account.product_credits_used, 0, 'the reset preview was not charged');
        assert.equal(account.business_credits_used, 0);
      });

      test('cut on a result file truncates the body; the next fetch is whole', async () => {
        await fresh();
        const { id } = await api.startDownload('businesses', {
          query: '*',
          num_records: 200,
          format: 'csv',
        });
        await advance(emu, runTime(emu, 200));
        const [url] = resultUrls(wire, await api.download(id));
        const whole = await fetchBytes(url!);
        assert.equal(whole.status, 200);
        await emu.faults([{ match: 'GET /files/', action: 'cut', times: 1 }]);
        let truncated = false;
        try {
          const cut = await fetchBytes(url!);
          truncated = cut.body.length < whole.body.length;
        } catch {
          truncated = true;
        }
        assert.ok(truncated, 'the body was cut short');
        const again = await fetchBytes(url!);
        assert.equal(again.status, 200);
        assert.deepEqual(again.body, whole.body);
      });

      test('slow delays the answer', async () => {
        await fresh();
        await emu.faults([{ match: 'GET /v4/health', action: 'slow', delay_ms: 300 }]);
        const started = performance.now();
        const res = await api.get('/health');
        assert.equal(res.status, 200);
        // A lower bound only: a loaded machine answers later, never sooner.
        assert.ok(performance.now() - started >= 290);
      });

      test('unknown fault actions are 400 from the control API', async () => {
        const res = await call('POST', `${emu.url}/_emulator/faults`, {
          json: { rules: [{ match: '*', action: 'explode' }] },
        });
        assert.equal(res.status, 400);
        const spec = await call('POST', `${emu.url}/_emulator/faults`, { json: { spec: '503=2' } });
        assert.equal(spec.status, 400);
        await emu.clearFaults();
      });

      test('a fault spec of 503=1 answers every API request with 503 and the documented body', async () => {
        const faulty = await startEmulator(wire, { faults: '503=1' });
        try {
          const { email, password } = faulty.credentials;
          const v4 = await call('POST', `${faulty.v4Url}/auth`, { json: { email, password } });
          assertV4Error(wire, v4, 503);
          assert.equal(v4.headers['retry-after'], '1');
          const health = await call('GET', `${faulty.v4Url}/health`);
          assertV4Error(wire, health, 503, /temporarily unavailable/);
          const v3 = await new V3(faulty).get('/requests');
          assertV3Error(v3, 503, /temporarily unavailable/);
          // The control API is never faulted.
          const info = await call('GET', `${faulty.url}/_emulator/info`);
          assert.equal(info.status, 200);
          const log = await faulty.requests();
          assert.deepEqual(
            log.map((r) => r.status),
            [503, 503, 503],
          );
        } finally {
          await faulty.close();
        }
      });
    });

    describe('bad input is never a 500', () => {
      test('unknown routes are 404 in the version error shape', async () => {
        await fresh();
        assertV4Error(wire, await api.get('/nothing'), 404);
        assertV4Error(wire, await api.call('PATCH', '/views'), 404);
        assertV4Error(wire, await call('GET', `${emu.url}/v4`), 404);
        assertV3Error(await new V3(emu).get('/nothing'), 404);
      });

      test('bad path segments are 4xx in the version error shape', async () => {
        await fresh();
        for (const path of ['/downloads/%ZZ', '/views/%ZZ', '/views/%E0%A4%A']) {
          const res = await api.get(path);
          assert.ok(res.status === 400 || res.status === 404, `${path}: ${res.status}`);
          assertV4Error(wire, res, res.status);
        }
        const v3 = await new V3(emu).get('/results/%ZZ');
        assert.ok(v3.status === 400 || v3.status === 404);
      });

      test('a battery of malformed requests gets 4xx answers only', async () => {
        await fresh();
        const auth = { authorization: `Bearer ${api.token}` };
        const basic = { authorization: new V3(emu).authorization };
        const json = { ...auth, 'content-type': 'application/json' };
        const deep = `${'('.repeat(3000)}id:1${')'.repeat(3000)}`;
        const search = (query: string) => JSON.stringify({ query, num_records: 1 });
        // [method, path, headers, body, true when the answer must be a 4xx (else: any non-5xx)]
        const requests: [string, string, Record<string, string>, string | undefined, boolean][] = [
          ['POST', '/v4/properties/search', json, '{"query":', true],
          [
            'POST',
            '/v4/properties/search',
            json,
            '{"__proto__": {"x": 1}, "query": "*"}',
            !forms.lenientBodies,
          ],
          ['POST', '/v4/properties/search', json, search(deep), true],
          ['POST', '/v4/properties/search', json, search('a'.repeat(20_000)), true],
          ['POST', '/v4/properties/search', json, search('yearBuilt:[x TO'), true],
          ['POST', '/v4/properties/search', json, search('"'), true],
          ['POST', '/v4/properties/search', json, search(':'), true],
          ['POST', '/v4/properties/search', json, search('prices.:1'), true],
          ['POST', '/v4/properties/search', json, search('prices:1'), true],
          ['POST', '/v4/properties/search', json, search('yearBuilt:abc'), true],
          ['POST', '/v4/properties/search', json, search('constructor:x'), true],
          ['POST', '/v4/properties/search', json, search('__proto__.x:1'), true],
          ['POST', '/v4/properties/search', json, search('id:\u0000'), false],
          ['POST', '/v4/properties/search', json, search('yearBuilt:[2000 TO 1990]'), false],
          ['POST', '/v4/properties/search', json, search('-'), false],
          ['POST', '/v4/properties/search', json, search('NOT'), false],
          ['POST', '/v4/properties/search', json, search('\uD800'), false],
          ['POST', '/v4/properties/search', json, search('city:*x*'), false],
          ['POST', '/v4/properties/search', json, search('address:"" AND address:*'), false],
          [
            'POST',
            '/v4/businesses/search',
            json,
            `{"query": "*", "pad": "${'x'.repeat(1_100_000)}"}`,
            true,
          ],
          [
            'POST',
            '/v4/views',
            json,
            JSON.stringify({ name: 'x'.repeat(300), fields: ['id'] }),
            true,
          ],
          ['POST', '/v4/views', json, JSON.stringify({ name: 'a\u0001b', fields: ['id'] }), true],
          [
            'POST',
            '/v4/views',
            json,
            JSON.stringify({ name: 'ok', fields: Array(600).fill('id') }),
            true,
          ],
          ['POST', '/v4/views', json, JSON.stringify({ name: 'ok', fields: ['prices.'] }), true],
          ['PUT', '/v4/account', json, JSON.stringify({ email: `${'a'.repeat(400)}@x.y` }), true],
          [
            'POST',
            '/v4/auth',
            { 'content-type': 'application/json' },
            '{"email": {}, "password": []}',
            true,
          ],
          ['POST', '/v4/auth', { 'content-type': 'text/plain' }, 'hello', true],
          ['POST', '/v4/auth', { 'content-type': 'application/json; charset=latin-9' }, '{}', true],
          ['POST', '/v4/targeted-updates', json, '{"query": "*", "num_records": 1e400}', true],
          ['POST', '/v4/scrape', json, '[]', true],
          ['GET', '/v4/downloads/%', auth, undefined, true],
          ['GET', `/v4/views/${'%41'.repeat(5000)}`, auth, undefined, true],
          ['GET', '/v3/data/businesses?q=%ZZ', basic, undefined, false],
          ['GET', `/v3/data/businesses?q=${encodeURIComponent(deep)}`, basic, undefined, true],
          ['GET', '/v3/data/businesses?q=*&records=99999999999999999999', basic, undefined, true],
          [
            'GET',
            '/v3/data/businesses?q=*&download=true&records=9999999999999999999',
            basic,
            undefined,
            true,
          ],
          ['GET', '/v3/data/businesses?q=*&view=%00', basic, undefined, true],
          ['GET', '/v3/requests/99999999999999999999', basic, undefined, true],
          ['GET', '/v3/requests', { authorization: 'Basic %%%' }, undefined, true],
          ['GET', '/files/nothing', {}, undefined, true],
          ['GET', '/files/%ZZ', {}, undefined, true],
          [
            'GET',
            '/files/ffffffffffffffffffffffff_0.csv?X-Issued=1&X-Expires=x&X-Signature=y',
            {},
            undefined,
            true,
          ],
          [
            'POST',
            '/_emulator/faults',
            { 'content-type': 'application/json' },
            '{"rules": [null, 5]}',
            true,
          ],
          [
            'POST',
            '/_emulator/clock',
            { 'content-type': 'application/json' },
            '{"advance_ms": 1e400}',
            true,
          ],
        ];
        for (const [method, path, headers, body, clientError] of requests) {
          const what = `${method} ${path.slice(0, 80)} ${String(body).slice(0, 60)}`;
          const res = await call(method, emu.url + path, { headers, body }).catch(
            (error: Error) => {
              throw new Error(`${what}: no answer (${error.message})`);
            },
          );
          const message = `${what} -> ${res.status} ${res.text.slice(0, 200)}`;
          assert.ok(res.status < 500, message);
          if (clientError) assert.ok(res.status >= 400, message);
        }
        const log = await emu.requests();
        assert.deepEqual(
          log.filter((r) => r.status >= 500),
          [],
        );
      });
    });

    describe('determinism', () => {
      test('the same seed gives the same records; another seed different ones', async () => {
        const [a, b, c] = await Promise.all([
          startEmulator(wire, { seed: 7 }),
          startEmulator(wire, { seed: 7 }),
          startEmulator(wire, { seed: 8 }),
        ]);
        try {
          const TYPES = ['properties', 'businesses', 'products', 'people'];
          /** Records, traced records and one download's file, read in the given type order. */
          const sample = async (e: EmulatorHarness, order: string[]) => {
            const v4 = new V4(e);
            await v4.login();
            const out: Json = {};
            for (const type of order) {
              // A full scan first, so records are generated in a different order on each side.
              await v4.preview(type, { query: 'id:"none"', num_records: 0 });
              out[type] = (await v4.preview(type, { query: '*', num_records: 10 })).records;
            }
            out.traced = (
              await v4.preview('properties', { query: '*', num_records: 10, auto_trace: true })
            ).records;
            const { id } = await v4.startDownload('businesses', { query: '*', num_records: 50 });
            await advance(e, runTime(e, 50));
            const urls = resultUrls(wire, await v4.download(id));
            out.file = (await fetchBytes(urls[0]!)).body.toString();
            return out;
          };
          const [sa, sb, sc] = await Promise.all([
            sample(a!, TYPES),
            sample(b!, [...TYPES].reverse()),
            sample(c!, TYPES),
          ]);
          assert.deepEqual(sa, sb);
          for (const key of [...TYPES, 'traced', 'file']) {
            assert.notDeepEqual(sa[key], sc[key], key);
          }
        } finally {
          await Promise.all([a!.close(), b!.close(), c!.close()]);
        }
      });
    });
  });
}
