/**
 * Version 3 (4.4, 2.6, 2.7, 2.10, sections 7 and 8): basic auth, /data previews and downloads,
 * /requests and /results, the v3 error shapes and limits, in both wire forms.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  advance,
  assertV3BadRequest,
  assertV3Error,
  call,
  emulatorNow,
  fetchBytes,
  formsOf,
  type Json,
  parseCsvText,
  parseNdjson,
  runTime,
  startEmulator,
  V3,
  V4,
  WIRES,
} from './support.js';

const QUEUE_MS = 10_000;
const RATE = 1_000;
const FILE_TTL = 7 * 24 * 60 * 60 * 1000;

const REQUEST_FIELDS = [
  'id',
  'records',
  'query',
  'dataType',
  'dataFormat',
  'accountId',
  'planId',
  'view',
  'async',
  'status',
  'error',
  'numDownloaded',
  'numFound',
  'numRequested',
  'date_started',
  'date_completed',
].sort();

const RESULT_FIELDS = ['id', 'url', 'request_id', 'downloaded', 'imported', 'date_created'].sort();

/** `2017-3-7 17:44:05`: month and day not zero-padded. */
const V3_DATE = /^(\d{4})-([1-9]|1[0-2])-([1-9]|[12]\d|3[01]) (\d{2}):(\d{2}):(\d{2})$/;

function v3DateMs(text: string): number {
  const m = V3_DATE.exec(text);
  if (!m) throw new assert.AssertionError({ message: `${text} is not a v3 date` });
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  return Date.UTC(y!, mo! - 1, d!, h!, mi!, s!);
}

const SCHEMA: Record<string, string> = {
  businesses: 'business',
  products: 'product',
  properties: 'property',
};
const CREDIT: Record<string, string> = {
  businesses: 'business',
  products: 'product',
  properties: 'property',
};

for (const wire of WIRES) {
  describe(`v3 (${wire})`, () => {
    const forms = formsOf(wire);
    let emu: EmulatorHarness;
    let v3: V3;
    let v4: V4;
    let counts: Record<string, number>;

    before(async () => {
      emu = await startEmulator(wire, { queueMs: QUEUE_MS, rate: RATE, fileTtlMs: FILE_TTL });
      v3 = new V3(emu);
      v4 = new V4(emu);
      counts = (await emu.control<{ counts: Record<string, number> }>('GET', 'info')).counts;
    });
    after(() => emu.close());

    const fresh = async () => {
      await emu.reset();
      await v4.login();
    };
    const used = async (type: string) => (await v4.account())[`${CREDIT[type]}_credits_used`];

    /** Starts a v3 download and answers its request object. */
    const startDownload = async (type: string, params: string): Promise<Json> => {
      const res = await v3.get(`/data/${type}?${params}&download=true`);
      if (forms.v3Redirect) {
        assert.equal(res.status, 303, res.text);
        const location = res.headers.location ?? '';
        assert.match(location, /^\/v3\/requests\/\d+$/);
        const followed = await call('GET', emu.url + location, {
          headers: { authorization: v3.authorization },
        });
        assert.equal(followed.status, 200, followed.text);
        assert.equal(followed.json.length, 1);
        return followed.json[0];
      }
      assert.equal(res.status, 200, res.text);
      assert.ok(Array.isArray(res.json));
      assert.equal(res.json.length, 1);
      return res.json[0];
    };

    describe('basic authentication', () => {
      test('the API token as user name with an empty password works', async () => {
        await fresh();
        const res = await v3.get('/data/businesses?q=*&records=1');
        assert.equal(res.status, 200, res.text);
      });

      test('a wrong, missing or non-basic credential is 401 {error, message, code}', async () => {
        await fresh();
        const wrong = new V3(emu, 'not-the-token');
        assertV3Error(await wrong.get('/data/businesses?q=*'), 401);
        assertV3Error(await wrong.get('/requests'), 401);
        assertV3Error(await call('GET', `${emu.v3Url}/data/businesses?q=*`), 401);
        assertV3Error(
          await call('GET', `${emu.v3Url}/requests`, {
            headers: { authorization: `Bearer ${emu.credentials.token}` },
          }),
          401,
        );
        const emptyUser = `Basic ${Buffer.from(`:${emu.credentials.token}`).toString('base64')}`;
        assertV3Error(
          await call('GET', `${emu.v3Url}/requests`, { headers: { authorization: emptyUser } }),
          401,
        );
        for (const path of [
          '/data/products?q=*',
          '/data/properties?q=*',
          '/requests/1',
          '/results/1',
        ]) {
          assertV3Error(await wrong.get(path), 401);
        }
        assert.equal(await used('businesses'), 0);
      });
    });

    for (const type of ['businesses', 'products', 'properties']) {
      describe(`GET /data/${type}`, () => {
        test('a preview answers the count and up to 10 records', async () => {
          await fresh();
          const res = await v3.get(`/data/${type}?q=*&records=5`);
          assert.equal(res.status, 200, res.text);
          if (forms.estimatedTotal) {
            assert.deepEqual(Object.keys(res.json).sort(), ['estimated total', 'records']);
            assert.equal(res.json['estimated total'], counts[type]);
          } else {
            assert.deepEqual(Object.keys(res.json).sort(), ['num_found', 'records', 'total_cost']);
            assert.equal(res.json.num_found, counts[type]);
            assert.equal(res.json.total_cost, 5);
          }
          assert.equal(res.json.records.length, 5);
          for (const r of res.json.records) assert.equal(typeof r.id, 'string');
          assert.equal(await used(type), 5);
        });

        test('records: blank or absent gives 10; 0 gives none; 11 and -1 are 400', async () => {
          await fresh();
          const count = (json: Json) =>
            forms.estimatedTotal ? json['estimated total'] : json.num_found;
          for (const params of ['q=*', 'q=*&records=']) {
            const res = await v3.get(`/data/${type}?${params}`);
            assert.equal(res.status, 200, res.text);
            assert.equal(res.json.records.length, 10, params);
          }
          const zero = await v3.get(`/data/${type}?q=*&records=0`);
          assert.equal(zero.status, 200);
          assert.deepEqual(zero.json.records, []);
          assert.equal(count(zero.json), counts[type]);
          if (!forms.estimatedTotal) assert.equal(zero.json.total_cost, 0);
          const ten = await v3.get(`/data/${type}?q=*&records=10`);
          assert.equal(ten.json.records.length, 10);
          for (const bad of ['11', '-1', '1000', 'abc', '2.5']) {
            assertV3BadRequest(await v3.get(`/data/${type}?q=*&records=${bad}`), /records/);
          }
          assert.equal(await used(type), 30);
        });

        test(`a field not in the schema is 400 naming the ${SCHEMA[type]} schema`, async () => {
          await fresh();
          const res = await v3.get(`/data/${type}?q=${encodeURIComponent('colourOfTheDoor:red')}`);
          assertV3BadRequest(
            res,
            new RegExp(`colourOfTheDoor.*does not exist in the ${SCHEMA[type]} schema`),
          );
        });

        test('bad query syntax is 400 {error: invalid query}', async () => {
          await fresh();
          for (const q of ['(id:1', 'AND AND', '']) {
            assertV3BadRequest(
              await v3.get(`/data/${type}?q=${encodeURIComponent(q)}`),
              /invalid query/,
            );
          }
          assertV3BadRequest(await v3.get(`/data/${type}`), /invalid query/);
          assert.equal(await used(type), 0);
        });

        test('an unknown view is 400 {error: view does not exist}', async () => {
          await fresh();
          assertV3BadRequest(
            await v3.get(`/data/${type}?q=*&view=ghost_view`),
            /view does not exist/,
          );
        });

        test('a pre-made view decides the fields', async () => {
          await fresh();
          const view = `${type}_all`;
          const res = await v3.get(`/data/${type}?q=*&records=3&view=${view}`);
          assert.equal(res.status, 200, res.text);
          assert.equal(res.json.records.length, 3);
        });
      });
    }

    describe('views, formats and parameters', () => {
      test('products_basicFields keeps only its fields', async () => {
        await fresh();
        const view = await v4.ok('GET', '/views/products_basicFields');
        const res = await v3.get('/data/products?q=*&records=10&view=products_basicFields');
        assert.equal(res.status, 200);
        for (const r of res.json.records) {
          for (const key of Object.keys(r)) assert.ok(view.fields.includes(key), key);
        }
      });

      test('a view made through v4 decides the fields and their order', async () => {
        await fresh();
        await v4.ok('POST', '/views', { name: 'v3 order', fields: ['city', 'name', 'id'] });
        const res = await v3.get(
          `/data/businesses?q=*&records=10&view=${encodeURIComponent('v3 order')}`,
        );
        assert.equal(res.status, 200, res.text);
        for (const r of res.json.records) {
          const keys = Object.keys(r);
          assert.deepEqual(
            keys,
            ['city', 'name', 'id'].filter((k) => keys.includes(k)),
          );
          assert.ok(keys.includes('id'));
        }
      });

      test('format=csv previews give text cells; format is case-insensitive; bad format 400', async () => {
        await fresh();
        for (const format of ['csv', 'CSV']) {
          const res = await v3.get(`/data/businesses?q=*&records=3&format=${format}`);
          assert.equal(res.status, 200, res.text);
          for (const r of res.json.records)
            for (const v of Object.values(r)) assert.equal(typeof v, 'string');
        }
        assert.equal((await v3.get('/data/businesses?q=*&records=1&format=JSON')).status, 200);
        assertV3BadRequest(await v3.get('/data/businesses?q=*&format=xml'), /format/);
      });

      test('unknown parameters, repeated parameters and bad booleans are 400', async () => {
        await fresh();
        assertV3BadRequest(await v3.get('/data/businesses?q=*&limit=3'), /limit/);
        assertV3BadRequest(await v3.get('/data/businesses?q=*&q=name:x'));
        assertV3BadRequest(await v3.get('/data/businesses?q=*&download=maybe'), /download/);
        assert.equal(await used('businesses'), 0);
      });

      test('queries filter the records', async () => {
        await fresh();
        const first = (await v3.get('/data/businesses?q=*&records=1')).json.records[0];
        const res = await v3.get(`/data/businesses?q=${encodeURIComponent(`id:"${first.id}"`)}`);
        assert.equal(res.status, 200);
        assert.equal(res.json.records.length, 1);
        assert.equal(res.json.records[0].id, first.id);
      });
    });

    describe('downloads', () => {
      test('the start answers the request object (contract) or 303 to it (real)', async () => {
        await fresh();
        const before = await emulatorNow(emu);
        const req = await startDownload('businesses', 'q=*&records=25&format=csv');
        assert.deepEqual(Object.keys(req).sort(), REQUEST_FIELDS);
        assert.ok(Number.isInteger(req.id));
        assert.equal(req.records, '25');
        assert.equal(req.query, '*');
        assert.equal(req.dataType, 'businesses');
        assert.equal(req.dataFormat, 'csv');
        assert.equal(req.accountId, emu.credentials.token);
        assert.equal(typeof req.planId, 'string');
        assert.equal(req.view, '');
        assert.equal(req.async, 1);
        assert.equal(req.status, 'STARTED');
        assert.equal(req.error, '');
        assert.equal(req.numDownloaded, 0);
        assert.equal(req.numFound, counts.businesses);
        assert.equal(req.numRequested, 25);
        assert.match(req.date_started, V3_DATE);
        assert.ok(
          Math.abs(v3DateMs(req.date_started) - before) < 5_000,
          'date_started is now (UTC)',
        );
        assert.equal(req.date_completed, req.date_started, 'same as the start while running');
        assert.equal(await used('businesses'), 0);
      });

      test('records omitted downloads everything; numRequested equals numFound', async () => {
        await fresh();
        const req = await startDownload('products', 'q=*');
        assert.equal(req.records, '');
        assert.equal(req.numRequested, req.numFound);
        assert.equal(req.numFound, counts.products);
        assert.equal(req.dataFormat, 'json');
      });

      test('download records out of range are 400 with only error', async () => {
        await fresh();
        for (const bad of ['0', '-5', 'x']) {
          assertV3BadRequest(
            await v3.get(`/data/businesses?q=*&download=true&records=${bad}`),
            /records/,
          );
        }
        assertV3BadRequest(
          await v3.get(`/data/businesses?q=${encodeURIComponent('nope:1')}&download=true`),
          /does not exist in the business schema/,
        );
        assert.deepEqual((await v3.get('/requests')).json, []);
      });

      test('STARTED -> COMPLETED with time; results empty until then; files hold the records', async () => {
        await fresh();
        const req = await startDownload(
          'properties',
          'q=*&records=300&format=csv&view=properties_all',
        );
        assert.equal(req.view, 'properties_all');
        const empty = await v3.get(`/results/${req.id}`);
        assert.equal(empty.status, 200);
        assert.deepEqual(empty.json, []);

        await advance(emu, QUEUE_MS + 100);
        const running = (await v3.get(`/requests/${req.id}`)).json[0];
        assert.equal(running.status, 'STARTED');
        assert.ok(running.numDownloaded > 0 && running.numDownloaded < 300);
        assert.equal(running.date_completed, running.date_started);
        assert.deepEqual((await v3.get(`/results/${req.id}`)).json, []);

        await advance(emu, runTime(emu, 300));
        const single = await v3.get(`/requests/${req.id}`);
        assert.equal(single.status, 200);
        assert.ok(Array.isArray(single.json) && single.json.length === 1, 'an array of one');
        const done = single.json[0];
        assert.deepEqual(Object.keys(done).sort(), REQUEST_FIELDS);
        assert.equal(done.status, 'COMPLETED');
        assert.equal(done.numDownloaded, 300);
        assert.match(done.date_completed, V3_DATE);
        assert.ok(v3DateMs(done.date_completed) > v3DateMs(done.date_started));
        assert.equal(await used('properties'), 300);

        const results = await v3.get(`/results/${req.id}`);
        assert.equal(results.status, 200);
        assert.ok(Array.isArray(results.json) && results.json.length >= 1);
        let total = 0;
        for (const file of results.json) {
          assert.deepEqual(Object.keys(file).sort(), RESULT_FIELDS);
          assert.ok(Number.isInteger(file.id));
          assert.equal(file.request_id, req.id);
          assert.ok(Number.isInteger(file.downloaded));
          assert.ok(Number.isInteger(file.imported));
          assert.equal(file.date_created, done.date_completed);
          const res = await fetchBytes(file.url);
          assert.equal(res.status, 200);
          const [header, ...rows] = parseCsvText(res.body.toString());
          assert.equal(header?.[0], 'id');
          total += rows.length;
        }
        assert.equal(total, 300);
      });

      test('a JSON download gives NDJSON files with numRequested records', async () => {
        await fresh();
        const req = await startDownload('businesses', 'q=*&records=40');
        await advance(emu, runTime(emu, 40));
        const results = (await v3.get(`/results/${req.id}`)).json;
        let total = 0;
        for (const file of results) {
          const res = await fetchBytes(file.url);
          total += parseNdjson(res.body.toString()).length;
        }
        assert.equal(total, 40);
      });

      test('GET /requests lists every download started; /requests/{id} is an array of one', async () => {
        await fresh();
        const a = await startDownload('businesses', 'q=*&records=5');
        const b = await startDownload('products', 'q=*&records=6&format=csv');
        const list = await v3.get('/requests');
        assert.equal(list.status, 200);
        assert.deepEqual(
          list.json.map((r: Json) => r.id),
          [a.id, b.id],
        );
        for (const r of list.json) assert.deepEqual(Object.keys(r).sort(), REQUEST_FIELDS);
        const one = await v3.get(`/requests/${b.id}`);
        assert.equal(one.json.length, 1);
        assert.equal(one.json[0].dataType, 'products');
        assert.equal(one.json[0].numRequested, 6);
        // v4 downloads are not v3 requests.
        await v4.startDownload('businesses', { query: '*', num_records: 3 });
        assert.equal((await v3.get('/requests')).json.length, 2);
      });

      test('unknown request ids are 404 {error: Not Found, message, code: 404}', async () => {
        await fresh();
        assertV3Error(await v3.get('/results/999'), 404);
        assertV3Error(await v3.get('/requests/999'), 404);
        assertV3Error(await v3.get('/results/abc'), 404);
        const bad = await v3.get('/requests/%ZZ');
        assert.ok(bad.status === 400 || bad.status === 404, String(bad.status));
        if (bad.status === 404) assertV3Error(bad, 404);
        else assertV3BadRequest(bad);
      });

      test('result files expire 7 days after date_created', async () => {
        await fresh();
        const req = await startDownload('businesses', 'q=*&records=5');
        await advance(emu, runTime(emu, 5));
        const [file] = (await v3.get(`/results/${req.id}`)).json;
        assert.equal((await fetchBytes(file.url)).status, 200);
        await advance(emu, FILE_TTL - 120_000);
        assert.equal((await fetchBytes(file.url)).status, 200, 'valid just before');
        await advance(emu, 180_000);
        assert.equal((await fetchBytes(file.url)).status, 403, 'expired after 7 days');
        // Listing the results again does not extend the lifetime.
        const [again] = (await v3.get(`/results/${req.id}`)).json;
        assert.equal(again.date_created, file.date_created);
        assert.equal((await fetchBytes(again.url)).status, 403);
      });
    });

    describe('routes', () => {
      test('unknown routes and data types are 404 in the v3 shape', async () => {
        await fresh();
        assertV3Error(await v3.get('/nothing/here'), 404);
        assertV3Error(await v3.get('/data/people?q=*'), 404);
        assertV3Error(await v3.get('/data/cars?q=*'), 404);
      });
    });
  });
}
