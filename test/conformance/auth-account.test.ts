/**
 * Authentication (section 5), health and account (2.3, 4.1) and credit accounting per data type
 * (section 8), in both wire forms.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  advance,
  assertV4Error,
  call,
  detailFields,
  formsOf,
  type Json,
  runTime,
  startEmulator,
  V4,
  WIRES,
} from './support.js';

const ACCOUNT_FIELDS = [
  'email',
  'first_name',
  'last_name',
  'num_credits_used',
  'business_credits_allotted',
  'business_credits_used',
  'people_credits_allotted',
  'people_credits_used',
  'product_credits_allotted',
  'product_credits_used',
  'property_credits_allotted',
  'property_credits_used',
].sort();

const TYPES = ['business', 'people', 'product', 'property'] as const;
const used = (account: Json) =>
  Object.fromEntries(TYPES.map((t) => [t, account[`${t}_credits_used`] as number]));

const TOKEN_TTL = 60 * 60 * 1000;

for (const wire of WIRES) {
  describe(`auth and account (${wire})`, () => {
    const forms = formsOf(wire);
    let emu: EmulatorHarness;
    let api: V4;

    before(async () => {
      emu = await startEmulator(wire, { tokenTtlMs: TOKEN_TTL });
      api = new V4(emu);
    });
    after(() => emu.close());

    const fresh = async () => {
      await emu.reset();
      await api.login();
    };

    describe('POST /auth', () => {
      test('the right email and password give a token object', async () => {
        await emu.reset();
        const { email, password } = emu.credentials;
        const res2 = await call('POST', `${emu.v4Url}/auth`, { json: { email, password } });
        assert.equal(res2.status, 200, res2.text);
        assert.deepEqual(Object.keys(res2.json), ['token']);
        assert.equal(typeof res2.json.token, 'string');
        assert.ok(res2.json.token.length >= 16);
        const health = await call('GET', `${emu.v4Url}/health`, {
          headers: { authorization: `Bearer ${res2.json.token}` },
        });
        assert.equal(health.status, 200);
      });

      test('each login gives a different token and both work', async () => {
        await fresh();
        const first = api.token;
        const second = await api.login();
        assert.notEqual(first, second);
        for (const token of [first, second]) {
          const res = await call('GET', `${emu.v4Url}/account`, {
            headers: { authorization: `Bearer ${token}` },
          });
          assert.equal(res.status, 200);
        }
      });

      test('a wrong password is 401', async () => {
        const res = await call('POST', `${emu.v4Url}/auth`, {
          json: { email: emu.credentials.email, password: 'not-the-password' },
        });
        assertV4Error(wire, res, 401);
      });

      test('an unknown email is 401', async () => {
        const res = await call('POST', `${emu.v4Url}/auth`, {
          json: { email: 'nobody@sluice.test', password: emu.credentials.password },
        });
        assertV4Error(wire, res, 401);
      });

      test('a missing password is 400 naming the field', async () => {
        const res = await call('POST', `${emu.v4Url}/auth`, {
          json: { email: emu.credentials.email },
        });
        assertV4Error(wire, res, 400, /password/);
        if (!forms.errorsList) assert.deepEqual(detailFields(res), ['password']);
      });

      test('wrong types and malformed JSON are 400', async () => {
        const typed = await call('POST', `${emu.v4Url}/auth`, {
          json: { email: emu.credentials.email, password: 12345678 },
        });
        assertV4Error(wire, typed, 400, /password/);
        const malformed = await call('POST', `${emu.v4Url}/auth`, {
          headers: { 'content-type': 'application/json' },
          body: '{"email": "demo@sluice.test", "password": ',
        });
        assertV4Error(wire, malformed, 400);
        const notObject = await call('POST', `${emu.v4Url}/auth`, { json: ['a', 'b'] });
        assertV4Error(wire, notObject, 400);
      });

      test('a form-encoded login, as web forms and some HTTP libraries post it, is refused under the contract only', async () => {
        const { email, password } = emu.credentials;
        const form = { 'content-type': 'application/x-www-form-urlencoded' };
        const bodies = [
          new URLSearchParams({ email, password }).toString(),
          // JSON text under a form Content-Type: what an HTTP library posts by default.
          JSON.stringify({ email, password }),
        ];
        for (const body of bodies) {
          const res = await call('POST', `${emu.v4Url}/auth`, { headers: form, body });
          if (!forms.lenientBodies) {
            assertV4Error(wire, res, 415, /application\/json/);
            continue;
          }
          assert.equal(res.status, 200, res.text);
          const account = await call('GET', `${emu.v4Url}/account`, {
            headers: { authorization: `Bearer ${res.json.token}` },
          });
          assert.equal(account.status, 200, account.text);
        }
        if (forms.lenientBodies) {
          const wrong = new URLSearchParams({ email, password: 'not-it' }).toString();
          const res = await call('POST', `${emu.v4Url}/auth`, { headers: form, body: wrong });
          assertV4Error(wire, res, 401);
        }
      });

      test('unknown fields beside email and password are refused under the contract, ignored elsewhere', async () => {
        const { email, password } = emu.credentials;
        const res = await call('POST', `${emu.v4Url}/auth`, {
          json: { email, password, remember_me: true },
        });
        if (forms.lenientBodies) assert.equal(res.status, 200, res.text);
        else assertV4Error(wire, res, 400, /remember_me/);
      });
    });

    describe('bearer tokens', () => {
      test('a missing Authorization header is 401', async () => {
        const res = await call('GET', `${emu.v4Url}/account`);
        assertV4Error(wire, res, 401);
      });

      test('an unknown token is 401', async () => {
        const res = await call('GET', `${emu.v4Url}/account`, {
          headers: { authorization: 'Bearer not-a-token' },
        });
        assertV4Error(wire, res, 401);
      });

      test('a token sent in another scheme or without one is 401', async () => {
        await fresh();
        for (const authorization of [
          api.token,
          `Token ${api.token}`,
          `Basic ${api.token}`,
          'Bearer',
        ]) {
          const res = await call('GET', `${emu.v4Url}/account`, { headers: { authorization } });
          assertV4Error(wire, res, 401);
        }
      });

      test("the account's API token (the v3 one) is a bearer token too, and never expires", async () => {
        await fresh();
        const headers = { authorization: `Bearer ${emu.credentials.token}` };
        const account = await call('GET', `${emu.v4Url}/account`, { headers });
        assert.equal(account.status, 200, account.text);
        assert.equal(account.json.email, emu.credentials.email);
        await advance(emu, 10 * TOKEN_TTL);
        const later = await call('POST', `${emu.v4Url}/properties/search`, {
          headers,
          json: { query: '*', num_records: 1 },
        });
        assert.equal(later.status, 200, later.text);
        assertV4Error(
          wire,
          await call('GET', `${emu.v4Url}/account`, {
            headers: { authorization: `Bearer ${emu.credentials.token}x` },
          }),
          401,
        );
      });

      test('every v4 operation except POST /auth requires the bearer token', async () => {
        await fresh();
        const search = { query: '*', num_records: 1 };
        const operations: [string, string, unknown?][] = [
          ['GET', '/health'],
          ['GET', '/account'],
          ['PUT', '/account', { first_name: 'Eve' }],
          ['POST', '/views', { name: 'v', fields: ['id'] }],
          ['GET', '/views'],
          ['GET', '/views/properties_all'],
          ['PUT', '/views/v', { fields: ['id'] }],
          ['DELETE', '/views/v'],
          ['POST', '/targeted-updates', { query: '*', num_records: 1 }],
          ['GET', '/targeted-updates'],
          ['POST', '/scrape', { query: '*', num_records: 1 }],
          ['POST', '/properties/search', search],
          ['POST', '/businesses/search', search],
          ['POST', '/products/search', search],
          ['POST', '/people/search', search],
          ['GET', '/downloads'],
          ['GET', '/downloads/1'],
          ['DELETE', '/downloads/1'],
        ];
        for (const [method, path, json] of operations) {
          for (const headers of [{}, { authorization: 'Bearer wrong' }] as Record<
            string,
            string
          >[]) {
            const res = await call(method, emu.v4Url + path, { headers, json });
            assert.equal(res.status, 401, `${method} ${path} without a valid token: ${res.text}`);
            assertV4Error(wire, res, 401);
          }
        }
        // Nothing happened on the account.
        const account = await api.account();
        assert.equal(account.first_name, 'Demo');
        assert.equal(account.num_credits_used, 0);
        assert.deepEqual(await api.ok('GET', '/views'), []);
        assert.deepEqual(await api.ok('GET', '/targeted-updates'), []);
      });

      test('authentication is checked before the body: no token and a bad body is still 401', async () => {
        const attempts: [string, string, string | undefined][] = [
          ['POST', '/properties/search', '{"query": 5}'],
          ['POST', '/properties/search', '{not json'],
          ['POST', '/views', '{"name": 1}'],
          ['PUT', '/account', '{"nope": true}'],
        ];
        for (const [method, path, body] of attempts) {
          const res = await call(method, emu.v4Url + path, {
            headers: { 'content-type': 'application/json' },
            body,
          });
          assert.equal(res.status, 401, `${method} ${path} ${body} without a token: ${res.text}`);
          assertV4Error(wire, res, 401);
        }
        // v3 likewise: credentials before parameters.
        const v3 = await call('GET', `${emu.v3Url}/data/businesses?records=abc&format=xml`);
        assert.equal(v3.status, 401, v3.text);
      });

      test('a token stops working once the clock passes its lifetime', async () => {
        await fresh();
        const token = api.token;
        await advance(emu, TOKEN_TTL - 60_000);
        assert.equal((await api.get('/health')).status, 200, 'still valid a minute before expiry');
        await advance(emu, 61_000);
        assertV4Error(wire, await api.get('/health'), 401);
        assertV4Error(wire, await api.get('/account'), 401);
        // Logging in again gives a working token.
        await api.login();
        assert.notEqual(api.token, token);
        assert.equal((await api.get('/account')).status, 200);
      });
    });

    describe('GET /health', () => {
      test('answers a status string', async () => {
        await fresh();
        const res = await api.get('/health');
        assert.equal(res.status, 200);
        assert.match(res.headers['content-type'] ?? '', /application\/json/);
        assert.deepEqual(res.json, { status: 'ok' });
      });
    });

    describe('GET /account', () => {
      test('carries every field of 2.3 with the right types', async () => {
        await fresh();
        const account = await api.account();
        assert.deepEqual(Object.keys(account).sort(), ACCOUNT_FIELDS);
        assert.equal(account.email, 'demo@sluice.test');
        assert.equal(typeof account.first_name, 'string');
        assert.equal(typeof account.last_name, 'string');
        for (const field of ACCOUNT_FIELDS.filter((f) => f.includes('credits'))) {
          assert.ok(Number.isInteger(account[field]), `${field} is an integer`);
        }
        for (const t of TYPES) {
          assert.equal(account[`${t}_credits_allotted`], 1_000_000);
          assert.equal(account[`${t}_credits_used`], 0);
        }
        assert.equal(account.num_credits_used, 0);
      });
    });

    describe('credit accounting', () => {
      test('previews cost one credit of their own type per record delivered', async () => {
        await fresh();
        const cases: [string, keyof ReturnType<typeof used>, number][] = [
          ['properties', 'property', 3],
          ['businesses', 'business', 2],
          ['products', 'product', 1],
          ['people', 'people', 4],
        ];
        let total = 0;
        for (const [type, credit, n] of cases) {
          const before = used(await api.account());
          const body = await api.preview(type, { query: '*', num_records: n });
          assert.equal(body.records.length, n);
          assert.equal(body.total_cost, n);
          if (forms.costPerType) assert.equal(body[`${credit}_cost`], n);
          const now = used(await api.account());
          total += n;
          for (const t of TYPES) {
            assert.equal(now[t], (before[t] ?? 0) + (t === credit ? n : 0), `${t} after ${type}`);
          }
        }
        assert.equal((await api.account()).num_credits_used, total);
      });

      test('num_records 0 costs nothing', async () => {
        await fresh();
        const body = await api.preview('properties', { query: '*', num_records: 0 });
        assert.ok(body.num_found > 0);
        assert.equal(body.total_cost, 0);
        assert.deepEqual(body.records, []);
        assert.deepEqual(used(await api.account()), {
          business: 0,
          people: 0,
          product: 0,
          property: 0,
        });
      });

      test('autotrace costs 1 property and 1 people credit per record', async () => {
        await fresh();
        const body = await api.preview('properties', {
          query: '*',
          num_records: 3,
          auto_trace: true,
        });
        assert.equal(body.records.length, 3);
        assert.equal(body.total_cost, 6);
        if (forms.costPerType) {
          assert.equal(body.property_cost, 3);
          assert.equal(body.people_cost, 3);
        }
        const account = await api.account();
        assert.deepEqual(used(account), { business: 0, people: 3, product: 0, property: 3 });
        assert.equal(account.num_credits_used, 6);
      });

      test('downloads are charged per record delivered, by type', async () => {
        await fresh();
        const { id, start } = await api.startDownload('businesses', {
          query: '*',
          num_records: 20,
        });
        assert.equal(start.json.total_cost, 20);
        const traced = await api.startDownload('properties', {
          query: '*',
          num_records: 5,
          auto_trace: true,
        });
        assert.equal(traced.start.json.total_cost, 10);
        await advance(emu, runTime(emu, 20));
        for (const d of [id, traced.id]) {
          assert.equal((await api.download(d)).status, 'completed');
        }
        const account = await api.account();
        assert.deepEqual(used(account), { business: 20, people: 5, product: 0, property: 5 });
        assert.equal(account.num_credits_used, 30);
      });

      test('an exhausted allotment refuses the search with 402 and charges nothing', async () => {
        await fresh();
        await emu.setCredits({ property_credits_allotted: 5, property_credits_used: 3 });
        const res = await api.search('properties', { query: '*', num_records: 3 });
        assertV4Error(wire, res, 402);
        assert.equal(res.json?.records, undefined, 'no records are delivered');
        const dl = await api.search('properties', { query: '*', num_records: 3, download: true });
        assertV4Error(wire, dl, 402);
        assert.deepEqual(await api.ok('GET', '/downloads'), []);
        const account = await api.account();
        assert.equal(account.property_credits_used, 3);
        assert.equal(account.property_credits_allotted, 5);
        // What is left can still be spent, and other types are unaffected.
        assert.equal(
          (await api.preview('properties', { query: '*', num_records: 2 })).records.length,
          2,
        );
        assert.equal(
          (await api.preview('businesses', { query: '*', num_records: 3 })).records.length,
          3,
        );
        assertV4Error(wire, await api.search('properties', { query: '*', num_records: 1 }), 402);
        assert.equal((await api.account()).property_credits_used, 5);
      });
    });

    describe('PUT /account', () => {
      test('changes names and answers the account; no message for a name change', async () => {
        await fresh();
        const account = await api.ok('PUT', '/account', {
          first_name: 'Ada',
          last_name: 'Lovelace',
        });
        assert.deepEqual(Object.keys(account).sort(), ACCOUNT_FIELDS);
        assert.equal(account.first_name, 'Ada');
        assert.equal(account.last_name, 'Lovelace');
        const again = await api.account();
        assert.equal(again.first_name, 'Ada');
        assert.equal(again.last_name, 'Lovelace');
        assert.deepEqual(await emu.outbox(), []);
        assert.equal((await api.get('/health')).status, 200, 'the token still works');
      });

      test('a password change invalidates old tokens and writes to the original address', async () => {
        await fresh();
        const old = api.token;
        const res = await api.call('PUT', '/account', { password: 'a-new-password' });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(Object.keys(res.json).sort(), ACCOUNT_FIELDS);
        assertV4Error(
          wire,
          await call('GET', `${emu.v4Url}/account`, {
            headers: { authorization: `Bearer ${old}` },
          }),
          401,
        );
        assertV4Error(
          wire,
          await call('POST', `${emu.v4Url}/auth`, {
            json: { email: 'demo@sluice.test', password: 'sluice-demo' },
          }),
          401,
        );
        await api.login('demo@sluice.test', 'a-new-password');
        assert.equal((await api.get('/account')).status, 200);
        const outbox = await emu.outbox();
        assert.equal(outbox.length, 1);
        assert.equal(outbox[0]?.to, 'demo@sluice.test');
        assert.equal(typeof outbox[0]?.subject, 'string');
        assert.match(outbox[0]?.body ?? '', /password/i);
      });

      test('an email change writes to the original address, and login uses the new one', async () => {
        await fresh();
        const account = await api.ok('PUT', '/account', {
          email: 'new@sluice.test',
          password: 'another-password',
        });
        assert.equal(account.email, 'new@sluice.test');
        let outbox = await emu.outbox();
        assert.equal(outbox.length, 1);
        assert.equal(outbox[0]?.to, 'demo@sluice.test', 'sent to the original address');
        assert.match(outbox[0]?.body ?? '', /new@sluice\.test/);
        assertV4Error(
          wire,
          await call('POST', `${emu.v4Url}/auth`, {
            json: { email: 'demo@sluice.test', password: 'another-password' },
          }),
          401,
        );
        await api.login('new@sluice.test', 'another-password');
        assert.equal((await api.account()).email, 'new@sluice.test');
        // A second change notifies the address the account had then.
        await api.ok('PUT', '/account', { email: 'third@sluice.test' });
        outbox = await emu.outbox();
        assert.equal(outbox.length, 2);
        assert.equal(outbox[1]?.to, 'new@sluice.test');
      });

      test('wrong types and malformed values are 400 and change nothing; unknown fields are refused under the contract, ignored elsewhere', async () => {
        await fresh();
        const bad: unknown[] = [
          { first_name: 5 },
          { email: 'not-an-address' },
          { password: 12345678 },
          { email: null },
          [],
        ];
        for (const body of bad) {
          assertV4Error(wire, await api.call('PUT', '/account', body), 400);
        }
        const unknown = await api.call('PUT', '/account', { nickname: 'x' });
        if (forms.lenientBodies) {
          assert.equal(unknown.status, 200, unknown.text);
          assert.equal(unknown.json.nickname, undefined);
        } else assertV4Error(wire, unknown, 400, /nickname/);
        const account = await api.account();
        assert.equal(account.email, 'demo@sluice.test');
        assert.equal(account.first_name, 'Demo');
        assert.deepEqual(await emu.outbox(), []);
      });
    });
  });
}
