/**
 * Every ServiceClient operation over real HTTP against the emulator, for both API versions and
 * both wire forms (the contract's and the real service's variants from wire-notes.md).
 */

import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { UnsupportedError } from '../../src/client/index.js';
import type { ServiceClient } from '../../src/client/types.js';
import { WIRE_FORMS } from '../../src/emulator/wire.js';
import { ApiError, QueryError, UsageError } from '../../src/errors.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  clientFor,
  completed,
  logged,
  logLength,
  readAll,
  startEmulator,
  WIRES,
} from './support.js';

function parseNdjson(bytes: Buffer): Record<string, unknown>[] {
  return bytes
    .toString('utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

for (const wire of WIRES) {
  describe(`client operations, ${wire} wire`, () => {
    let emu: EmulatorHarness;

    before(async () => {
      emu = await startEmulator(wire);
    });
    after(async () => {
      await emu?.close();
    });

    describe('v4', () => {
      let client: ServiceClient;
      before(() => {
        client = clientFor(emu, 'v4');
      });
      after(async () => {
        await client?.close();
      });

      test('health and account, logging in once on first use', async () => {
        const from = await logLength(emu);
        assert.deepEqual(await client.health(), { status: 'ok' });
        const account = await client.account();
        assert.equal(account.email, emu.credentials.email);
        assert.equal(account.firstName, 'Demo');
        assert.equal(typeof account.credits.property.allotted, 'number');
        for (const type of ['business', 'people', 'product', 'property'] as const) {
          const c = account.credits[type];
          assert.equal(c.remaining, Math.max(0, c.allotted - c.used));
        }
        assert.equal(typeof account.totalUsed, 'number');
        assert.equal((await logged(emu, 'POST', '/v4/auth', from)).length, 1);
      });

      test('updateAccount sends snake_case and keeps working after a password change', async () => {
        const updated = await client.updateAccount({ firstName: 'Ada', lastName: 'Lovelace' });
        assert.equal(updated.firstName, 'Ada');
        assert.equal(updated.lastName, 'Lovelace');
        // A password change ends every older token; the client logs in with the new password.
        await client.updateAccount({ password: 'a-new-password-1' });
        assert.equal((await client.account()).firstName, 'Ada');
        await client.updateAccount({ password: emu.credentials.password });
        assert.equal((await client.account()).lastName, 'Lovelace');
      });

      test('views: create, list, get, update, delete, with a name that has spaces', async () => {
        const name = `my view ${wire}`;
        const created = await client.createView({ name, fields: ['id', 'address', 'city'] });
        assert.equal(created.name, name);
        assert.deepEqual(created.fields, ['id', 'address', 'city']);
        assert.match(created.createdAt ?? '', /^\d{4}-\d{2}-\d{2}T/);
        assert.ok((await client.listViews()).some((v) => v.name === name));
        assert.deepEqual((await client.getView(name)).fields, ['id', 'address', 'city']);
        const updated = await client.updateView(name, { fields: ['id', 'city'] });
        assert.deepEqual(updated.fields, ['id', 'city']);
        const renamed = await client.updateView(name, { name: `${name} renamed` });
        assert.equal(renamed.name, `${name} renamed`);
        await client.deleteView(`${name} renamed`);
        await assert.rejects(
          client.getView(`${name} renamed`),
          (e: unknown) => e instanceof ApiError && e.status === 404,
        );
      });

      test('preview returns records and cost, honouring the view', async () => {
        const preview = await client.preview({
          type: 'properties',
          query: '*',
          numRecords: 3,
          view: 'properties_all',
        });
        assert.equal(preview.records.length, 3);
        assert.ok(preview.numFound >= 3);
        assert.equal(preview.totalCost, 3);
        const business = await client.preview({ type: 'businesses', query: '*', numRecords: 2 });
        assert.equal(business.records.length, 2);
        const csv = await client.preview({
          type: 'products',
          query: '*',
          numRecords: 1,
          format: 'csv',
        });
        assert.equal(csv.records.length, 1);
        const people = await client.preview({ type: 'people', query: '*', numRecords: 1 });
        assert.equal(people.records.length, 1);
      });

      test('preview property options reach the service only for properties', async () => {
        const traced = await client.preview({
          type: 'properties',
          query: '*',
          numRecords: 2,
          autoTrace: true,
          addressMatching: 'retry',
          onlyTraceable: true,
        });
        assert.equal(
          traced.totalCost,
          traced.records.length * 2,
          'autotrace costs two credits a record',
        );
        await assert.rejects(
          client.preview({ type: 'businesses', query: '*', numRecords: 1, autoTrace: true }),
          UsageError,
        );
      });

      test('count costs nothing; previews above 10 and bad queries never send a request', async () => {
        const before = await client.account();
        const { numFound } = await client.count({ type: 'properties', query: '*' });
        assert.ok(numFound > 10);
        assert.deepEqual((await client.account()).credits.property, before.credits.property);

        const from = await logLength(emu);
        await assert.rejects(
          client.preview({ type: 'properties', query: '*', numRecords: 11 }),
          UsageError,
        );
        await assert.rejects(
          client.count({ type: 'properties', query: '(city:Austin' }),
          (e: unknown) => {
            assert.ok(e instanceof QueryError);
            assert.match(e.excerpt, /\^/);
            return true;
          },
        );
        await assert.rejects(
          client.count({ type: 'businesses', query: 'numEmployeesMin:many' }),
          QueryError,
        );
        await assert.rejects(
          client.startDownload({ type: 'properties', query: 'numBedroom:[1 TO' }),
          QueryError,
        );
        assert.equal(await logLength(emu), from, 'no request reached the service');
      });

      test('a field the catalogue lacks goes to the service as written, which decides', async () => {
        const from = await logLength(emu);
        await assert.rejects(
          client.count({ type: 'businesses', query: 'colourOfTheDoor:red' }),
          (e: unknown) =>
            e instanceof ApiError &&
            e.status === 400 &&
            /colourOfTheDoor.*does not exist in the business schema/.test(e.message),
        );
        assert.equal(await logLength(emu), from + 1, 'the service was asked');
      });

      test('download: start, poll to completion, list, read every file', async () => {
        const start = await client.startDownload({
          type: 'properties',
          query: '*',
          numRecords: 400,
        });
        assert.equal(typeof start.id, 'string');
        assert.equal(start.recovered, false);
        assert.equal(start.totalCost, 400);
        assert.equal(
          (await client.getDownload(start.id)).state,
          'queued',
          `${WIRE_FORMS[wire].startedRunning ? 'started' : 'queued'} is queued`,
        );
        const info = await completed(emu, client, start.id);
        assert.equal(info.id, start.id);
        assert.equal(info.numRecords, 400);
        assert.equal(info.files.length, 3, '150 records a file');
        assert.deepEqual(
          info.files.map((f) => f.index),
          [0, 1, 2],
        );
        for (const f of info.files) assert.match(f.name, /_\d+\.txt$/);
        const listed = await client.listDownloads();
        assert.ok(listed.some((d) => d.id === start.id && d.state === 'completed'));

        let total = 0;
        const ids = new Set<unknown>();
        for (const file of info.files) {
          const rows = parseNdjson(await readAll(await client.openResultFile(start.id, file)));
          total += rows.length;
          for (const row of rows) ids.add(row.id);
        }
        assert.equal(total, 400);
        assert.equal(ids.size, 400);
      });

      test('download of every match (no numRecords) in csv', async () => {
        const { numFound } = await client.count({ type: 'products', query: '*' });
        const start = await client.startDownload({ type: 'products', query: '*', format: 'csv' });
        const info = await completed(emu, client, start.id);
        assert.equal(info.numRecords, numFound);
        const first = info.files[0];
        assert.ok(first);
        assert.match(first.name, /\.csv$/);
        const text = (await readAll(await client.openResultFile(start.id, first))).toString('utf8');
        assert.match(text.split('\n')[0] ?? '', /^id,/);
      });

      test('cancelDownload stops a running download', async () => {
        const start = await client.startDownload({
          type: 'businesses',
          query: '*',
          numRecords: 100,
        });
        await client.cancelDownload(start.id);
        const info = await client.getDownload(start.id);
        assert.equal(info.state, 'cancelled');
        await assert.rejects(
          client.cancelDownload(start.id),
          (e: unknown) => e instanceof ApiError && e.status === 409,
        );
      });

      test('targeted updates and scrape', async () => {
        const update = await client.createTargetedUpdate({
          query: '*',
          numRecords: 3,
          type: 'businesses',
        });
        assert.equal(update.type, 'businesses');
        assert.equal(update.numRecords, 3);
        assert.equal(update.totalCost, 3);
        assert.ok(['queued', 'in_progress', 'completed'].includes(update.status));
        const updates = await client.listTargetedUpdates();
        assert.ok(updates.some((u) => u.id === update.id));

        const scraped = await client.scrape({ query: '*', numRecords: 2 });
        assert.equal(scraped.status, 'completed');
        assert.equal(scraped.numRecords, 2);
        assert.equal(scraped.records.length, 2);
        await assert.rejects(client.scrape({ query: 'nope:(', numRecords: 2 }), QueryError);
      });

      test('baseUrl carries no credentials', () => {
        assert.equal(client.baseUrl, emu.v4Url);
        assert.equal(client.api, 'v4');
      });
    });

    test('v4: a download part-way through is running', async () => {
      const slow = await startEmulator(wire, { rate: 1000, queueMs: 100 });
      const client = clientFor(slow, 'v4');
      try {
        const start = await client.startDownload({
          type: 'properties',
          query: '*',
          numRecords: 800,
        });
        await slow.advanceClock(400);
        const info = await client.getDownload(start.id);
        assert.equal(
          info.state,
          'running',
          `${WIRE_FORMS[wire].startedRunning ? 'running' : 'in_progress'} is running`,
        );
        assert.ok(info.numRecords > 0 && info.numRecords < 800, String(info.numRecords));
        assert.deepEqual(info.files, []);
      } finally {
        await client.close();
        await slow.close();
      }
    });

    describe('v3', () => {
      let client: ServiceClient;
      before(() => {
        client = clientFor(emu, 'v3');
      });
      after(async () => {
        await client?.close();
      });

      test('health checks the token through the requests listing', async () => {
        assert.deepEqual(await client.health(), { status: 'ok' });
      });

      test('preview and count read num_found or estimated total', async () => {
        const preview = await client.preview({ type: 'businesses', query: '*', numRecords: 4 });
        assert.equal(preview.records.length, 4);
        assert.ok(preview.numFound >= 4);
        assert.equal(preview.totalCost, 4);
        const { numFound } = await client.count({ type: 'products', query: '*' });
        assert.ok(numFound > 0);
        const properties = await client.preview({ type: 'properties', query: '*', numRecords: 1 });
        assert.equal(properties.records.length, 1);
      });

      test('download: start, poll, results, read the files', async () => {
        const from = await logLength(emu);
        const start = await client.startDownload({
          type: 'businesses',
          query: '*',
          numRecords: 200,
        });
        assert.match(start.id, /^\d+$/);
        assert.equal(start.recovered, false);
        // The 303 of the real service is read, not followed as a new search.
        assert.equal((await logged(emu, 'GET', '/v3/data/', from)).length, 1);
        const info = await completed(emu, client, start.id);
        assert.equal(info.numRecords, 200);
        assert.equal(info.type, 'businesses');
        assert.equal(info.query, '*');
        assert.equal(info.format, 'json');
        assert.match(info.createdAt ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
        assert.equal(info.files.length, 2);
        let rows = 0;
        for (const file of info.files) {
          rows += parseNdjson(await readAll(await client.openResultFile(start.id, file))).length;
        }
        assert.equal(rows, 200);
        const listed = await client.listDownloads();
        assert.ok(
          listed.some((d) => d.id === start.id && d.state === 'completed' && d.numRecords === 200),
        );
      });

      test('a running (STARTED) download has no files yet', async () => {
        const start = await client.startDownload({ type: 'properties', query: '*', format: 'csv' });
        const info = await client.getDownload(start.id);
        assert.equal(info.state, 'running', 'STARTED is running');
        assert.deepEqual(info.files, []);
        const done = await completed(emu, client, start.id);
        assert.ok(done.files.length > 0);
        assert.equal(done.format, 'csv');
      });

      test('operations v3 lacks reject with UnsupportedError, without a request', async () => {
        const from = await logLength(emu);
        const calls: Promise<unknown>[] = [
          client.account(),
          client.updateAccount({ firstName: 'x' }),
          client.listViews(),
          client.getView('v'),
          client.createView({ name: 'v', fields: ['id'] }),
          client.updateView('v', { fields: ['id'] }),
          client.deleteView('v'),
          client.cancelDownload('1'),
          client.createTargetedUpdate({ query: '*', numRecords: 1 }),
          client.listTargetedUpdates(),
          client.scrape({ query: '*', numRecords: 1 }),
          client.preview({ type: 'people', query: '*', numRecords: 1 }),
          client.count({ type: 'properties', query: '*', autoTrace: true }),
        ];
        for (const call of calls) {
          await assert.rejects(call, (e: unknown) => {
            assert.ok(e instanceof UnsupportedError, String(e));
            assert.equal(e.code, 'SLUICE_UNSUPPORTED');
            return true;
          });
        }
        assert.equal(await logLength(emu), from);
      });

      test('a bad query never sends a request', async () => {
        const from = await logLength(emu);
        await assert.rejects(client.count({ type: 'businesses', query: 'name:"open' }), QueryError);
        await assert.rejects(
          client.startDownload({ type: 'businesses', query: 'yearOpened:long_ago' }),
          QueryError,
        );
        assert.equal(await logLength(emu), from);
      });
    });
  });
}
