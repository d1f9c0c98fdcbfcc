/** Views (2.2, 4.1): create, list, get, update and rename, delete, pre-made views. */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { PREMADE_VIEWS } from '../../src/catalog.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  assertV4Error,
  detailFields,
  formsOf,
  type Json,
  startEmulator,
  V4,
  WIRES,
} from './support.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

function assertView(view: Json, name: string, fields: string[]): void {
  assert.deepEqual(Object.keys(view).sort(), ['created_at', 'fields', 'name']);
  assert.equal(view.name, name);
  assert.deepEqual(view.fields, fields);
  assert.match(view.created_at, ISO_UTC);
}

const path = (name: string) => `/views/${encodeURIComponent(name)}`;

for (const wire of WIRES) {
  describe(`views (${wire})`, () => {
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

    test('POST /views creates a view and answers it', async () => {
      await fresh();
      const res = await api.call('POST', '/views', {
        name: 'homes',
        fields: ['id', 'address', 'city'],
      });
      assert.ok(res.status === 200 || res.status === 201, res.text);
      assertView(res.json, 'homes', ['id', 'address', 'city']);
      const created = Date.parse(res.json.created_at);
      assert.ok(Math.abs(created - Date.now()) < 60_000, 'created_at is the current time');
    });

    test('GET /views lists the views of the account (not the pre-made ones)', async () => {
      await fresh();
      assert.deepEqual(await api.ok('GET', '/views'), []);
      await api.ok('POST', '/views', { name: 'a', fields: ['id'] });
      await api.ok('POST', '/views', { name: 'b', fields: ['id', 'name'] });
      const list = await api.ok('GET', '/views');
      assert.ok(Array.isArray(list));
      assert.deepEqual(list.map((v: Json) => v.name).sort(), ['a', 'b']);
      for (const v of list) assertView(v, v.name, v.name === 'a' ? ['id'] : ['id', 'name']);
    });

    test('GET /views/{name} answers the view; names with spaces are URL-encoded', async () => {
      await fresh();
      const name = 'austin homes with prices';
      const created = await api.ok('POST', '/views', { name, fields: ['id', 'prices.amountMin'] });
      const res = await api.get(path(name));
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json, created);
      assert.ok(path(name).includes('%20'));
    });

    test('names with reserved URL characters round-trip through the path', async () => {
      await fresh();
      const name = 'a+b & c?#100% ünï';
      await api.ok('POST', '/views', { name, fields: ['id'] });
      assert.equal((await api.ok('GET', path(name))).name, name);
      const renamed = `${name} (2)`;
      assert.equal((await api.ok('PUT', path(name), { name: renamed })).name, renamed);
      assertV4Error(wire, await api.get(path(name)), 404);
      assert.equal((await api.call('DELETE', path(renamed))).status, 200);
      assert.deepEqual(await api.ok('GET', '/views'), []);
    });

    test('GET /views/{name} of an unknown view is 404', async () => {
      await fresh();
      assertV4Error(wire, await api.get(path('no such view')), 404);
    });

    test('a duplicate name is 409 and keeps the first view', async () => {
      await fresh();
      await api.ok('POST', '/views', { name: 'dup', fields: ['id'] });
      const res = await api.call('POST', '/views', { name: 'dup', fields: ['id', 'city'] });
      assertV4Error(wire, res, 409, /dup/);
      assert.deepEqual((await api.ok('GET', path('dup'))).fields, ['id']);
      assertV4Error(
        wire,
        await api.call('POST', '/views', { name: 'properties_all', fields: ['id'] }),
        409,
      );
    });

    test('bad view bodies are 400: missing and mistyped fields, bad JSON, and unknown fields under the contract', async () => {
      await fresh();
      const cases: [unknown, RegExp | undefined][] = [
        [{ name: 'x' }, /fields/],
        [{ fields: ['id'] }, /name/],
        ...(forms.lenientBodies
          ? []
          : [[{ name: 'x', fields: ['id'], colour: 'red' }, /colour/] as [unknown, RegExp]]),
        [{ name: 5, fields: ['id'] }, /name/],
        [{ name: 'x', fields: 'id' }, /fields/],
        [{ name: 'x', fields: [1, 2] }, undefined],
        [{ name: 'x', fields: [] }, /field/],
        [{ name: 'x', fields: ['notARealField'] }, /notARealField/],
        [{ name: '', fields: ['id'] }, /name/],
        [{ name: 'a/b', fields: ['id'] }, /name/],
        [null, undefined],
      ];
      for (const [body, pattern] of cases) {
        const res = await api.call('POST', '/views', body);
        assertV4Error(wire, res, 400, pattern);
      }
      const missing = await api.call('POST', '/views', { name: 'x' });
      if (!forms.errorsList) assert.ok(detailFields(missing).includes('fields'));
      const malformed = await api.call('POST', '/views', undefined, {
        'content-type': 'application/json',
      });
      assertV4Error(wire, malformed, 400);
      assert.deepEqual(await api.ok('GET', '/views'), [], 'nothing was created');
    });

    test('PUT /views/{name} changes the fields', async () => {
      await fresh();
      const created = await api.ok('POST', '/views', { name: 'my view', fields: ['id'] });
      const res = await api.call('PUT', path('my view'), { fields: ['id', 'city', 'province'] });
      assert.equal(res.status, 200, res.text);
      assertView(res.json, 'my view', ['id', 'city', 'province']);
      assert.equal(res.json.created_at, created.created_at);
      assert.deepEqual((await api.ok('GET', path('my view'))).fields, ['id', 'city', 'province']);
    });

    test('PUT /views/{name} with a new name renames it', async () => {
      await fresh();
      await api.ok('POST', '/views', { name: 'old name', fields: ['id', 'city'] });
      const res = await api.call('PUT', path('old name'), { name: 'new name' });
      assert.equal(res.status, 200, res.text);
      assertView(res.json, 'new name', ['id', 'city']);
      assertV4Error(wire, await api.get(path('old name')), 404);
      assertView(await api.ok('GET', path('new name')), 'new name', ['id', 'city']);
      assert.deepEqual(
        (await api.ok('GET', '/views')).map((v: Json) => v.name),
        ['new name'],
      );
    });

    test('PUT /views: unknown view 404, rename onto another view 409, bad body 400', async () => {
      await fresh();
      await api.ok('POST', '/views', { name: 'one', fields: ['id'] });
      await api.ok('POST', '/views', { name: 'two', fields: ['id'] });
      assertV4Error(wire, await api.call('PUT', path('three'), { fields: ['id'] }), 404);
      assertV4Error(wire, await api.call('PUT', path('one'), { name: 'two' }), 409);
      const unknown = await api.call('PUT', path('one'), { colour: 'red' });
      if (forms.lenientBodies) assert.equal(unknown.status, 200, unknown.text);
      else assertV4Error(wire, unknown, 400, /colour/);
      assertV4Error(wire, await api.call('PUT', path('one'), { fields: ['bogusField'] }), 400);
      assertV4Error(wire, await api.call('PUT', path('one'), { fields: 'id' }), 400);
      assert.deepEqual((await api.ok('GET', path('one'))).fields, ['id']);
      assert.deepEqual((await api.ok('GET', path('two'))).fields, ['id']);
    });

    test('DELETE /views/{name} deletes it with a message; unknown is 404', async () => {
      await fresh();
      await api.ok('POST', '/views', { name: 'to delete', fields: ['id'] });
      const res = await api.call('DELETE', path('to delete'));
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.json), ['message']);
      assert.equal(typeof res.json.message, 'string');
      assertV4Error(wire, await api.get(path('to delete')), 404);
      assertV4Error(wire, await api.call('DELETE', path('to delete')), 404);
      assert.deepEqual(await api.ok('GET', '/views'), []);
      // The name is free again.
      await api.ok('POST', '/views', { name: 'to delete', fields: ['city'] });
    });

    test('DELETE takes no body: a Content-Type header without one is ignored', async () => {
      await fresh();
      await api.ok('POST', '/views', { name: 'bodiless', fields: ['id'] });
      const res = await api.call('DELETE', path('bodiless'), undefined, {
        'content-type': 'application/json',
      });
      assert.equal(res.status, 200, res.text);
      assertV4Error(wire, await api.get(path('bodiless')), 404);
      const { id } = await api.startDownload('businesses', { query: '*', num_records: 5 });
      const cancel = await api.call('DELETE', `/downloads/${id}`, undefined, {
        'content-type': 'application/json',
      });
      // 409 when the (fast) download finished first; either way the request was understood.
      assert.ok(cancel.status === 200 || cancel.status === 409, cancel.text);
    });

    test('pre-made views can be read and used but not changed (403)', async () => {
      await fresh();
      const premade = await api.get('/views/products_basicFields');
      assert.equal(premade.status, 200, premade.text);
      assert.equal(premade.json.name, 'products_basicFields');
      assert.ok(Array.isArray(premade.json.fields) && premade.json.fields.length > 0);
      assertV4Error(wire, await api.call('PUT', '/views/properties_all', { fields: ['id'] }), 403);
      assertV4Error(wire, await api.call('DELETE', '/views/businesses_all_nested'), 403);
      // Every name of the catalogue (v4's singular, v3's plural), with its fields; none is listed
      // among the account's own views, and none can be made again.
      for (const [name, { fields }] of Object.entries(PREMADE_VIEWS)) {
        const res = await api.get(`/views/${name}`);
        assert.equal(res.status, 200, name);
        assert.deepEqual(res.json.fields, fields, name);
        assertV4Error(wire, await api.call('POST', '/views', { name, fields: ['id'] }), 409);
      }
      assert.deepEqual(await api.ok('GET', '/views'), []);
      assertV4Error(wire, await api.get('/views/constructor'), 404);
      const flat = await api.preview('properties', {
        query: '*',
        num_records: 3,
        view: 'property_flat_prices',
      });
      for (const record of flat.records) {
        for (const key of Object.keys(record))
          assert.ok(PREMADE_VIEWS.property_flat_prices!.fields.includes(key), key);
      }
      const body = await api.preview('products', {
        query: '*',
        num_records: 5,
        view: 'products_basicFields',
      });
      assert.equal(body.records.length, 5);
      for (const record of body.records) {
        for (const key of Object.keys(record)) {
          assert.ok(premade.json.fields.includes(key), `${key} is in products_basicFields`);
        }
      }
      const all = await api.preview('properties', {
        query: '*',
        num_records: 2,
        view: 'properties_all',
      });
      assert.equal(all.records.length, 2);
    });

    test('a created view selects the fields of search records', async () => {
      await fresh();
      await api.ok('POST', '/views', {
        name: 'slim homes',
        fields: ['id', 'city', 'prices.amountMin', 'prices.currency'],
      });
      const full = await api.preview('properties', { query: '*', num_records: 10 });
      const slim = await api.preview('properties', {
        query: '*',
        num_records: 10,
        view: 'slim homes',
      });
      assert.equal(slim.records.length, 10);
      assert.equal(slim.num_found, full.num_found);
      slim.records.forEach((record: Json, i: number) => {
        const whole = full.records[i];
        for (const key of Object.keys(record)) {
          assert.ok(['id', 'city', 'prices'].includes(key), `unexpected field ${key}`);
        }
        assert.equal(record.id, whole.id);
        assert.equal(record.city, whole.city);
        if (whole.prices) {
          assert.deepEqual(
            record.prices,
            whole.prices.map((p: Json) => {
              const out: Json = {};
              if (p.amountMin !== undefined) out.amountMin = p.amountMin;
              if (p.currency !== undefined) out.currency = p.currency;
              return out;
            }),
          );
        } else assert.equal(record.prices, undefined);
      });
      assert.ok(
        slim.records.some((r: Json) => Array.isArray(r.prices) && r.prices.length > 0),
        'some records have prices to select from',
      );
    });

    test('searching with an unknown view is 400', async () => {
      await fresh();
      const res = await api.search('properties', { query: '*', num_records: 1, view: 'ghost' });
      assertV4Error(wire, res, 400, /ghost/);
      assert.equal((await api.account()).property_credits_used, 0);
    });
  });
}
