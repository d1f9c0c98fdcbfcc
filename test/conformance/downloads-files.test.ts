/**
 * Downloads (2.4, 3, 4.1) and their result files (wire-notes.md "Result files"): start shapes,
 * states as the emulator clock moves, listing, cancellation and its cost, CSV and NDJSON
 * contents, splitting, ranges, signatures and expiry.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { CORE_FIELDS } from '../../src/catalog.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  advance,
  assertV4Error,
  contractStatus,
  expectedCell,
  fetchBytes,
  formsOf,
  type Json,
  ownerOf,
  parseCsvText,
  parseNdjson,
  recordsSoFar,
  resultUrls,
  runTime,
  sleep,
  startEmulator,
  V4,
  WIRES,
  type Wire,
} from './support.js';

const QUEUE_MS = 60_000;
const RATE = 200;
const FILE_RECORDS = 500;
const FILE_TTL = 7 * 24 * 60 * 60 * 1000;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const DOWNLOAD_FIELDS = ['created_at', 'id', 'num_records', 'results', 'status'];

function assertDownloadShape(wire: Wire, d: Json): void {
  const forms = formsOf(wire);
  assert.deepEqual(
    Object.keys(d).sort(),
    forms.numDownloaded ? [...DOWNLOAD_FIELDS, 'num_downloaded'].sort() : DOWNLOAD_FIELDS,
  );
  if (forms.integerIds) assert.ok(Number.isInteger(d.id), `${wire} wire: integer id`);
  else assert.equal(typeof d.id, 'string', `${wire} wire: string id`);
  const states = forms.startedRunning ? ['started', 'running'] : ['queued', 'in_progress'];
  assert.ok([...states, 'completed', 'cancelled'].includes(d.status), d.status);
  assert.ok(Number.isInteger(d.num_records));
  recordsSoFar(wire, d);
  assert.match(d.created_at, ISO_UTC);
  resultUrls(wire, d);
}

/** Every record of every file of a download, checking the per-file split. */
async function readAll(
  wire: Wire,
  d: Json,
  format: 'csv' | 'json',
): Promise<{ header?: string[]; rows: Json[]; perFile: number[] }> {
  const urls = resultUrls(wire, d);
  const rows: Json[] = [];
  const perFile: number[] = [];
  let header: string[] | undefined;
  for (const [n, url] of urls.entries()) {
    assert.match(
      new URL(url).pathname,
      new RegExp(`^/files/[0-9a-f]+_${n}\\.${format === 'csv' ? 'csv' : 'txt'}$`),
    );
    const res = await fetchBytes(url);
    assert.equal(res.status, 200, res.body.toString());
    const text = res.body.toString('utf8');
    if (format === 'csv') {
      assert.match(res.headers['content-type'] ?? '', /text\/csv/);
      const table = parseCsvText(text);
      const [head = [], ...body] = table;
      assert.ok(head.length > 0, 'a header row');
      if (header) assert.deepEqual(head, header, 'every file has the same header');
      header = head;
      perFile.push(body.length);
      for (const cells of body) rows.push(Object.fromEntries(head.map((h, i) => [h, cells[i]])));
    } else {
      const records = parseNdjson(text);
      perFile.push(records.length);
      rows.push(...records);
    }
  }
  return { header, rows, perFile };
}

const split = (total: number) => {
  const out: number[] = [];
  for (let left = total; left > 0; left -= FILE_RECORDS) out.push(Math.min(FILE_RECORDS, left));
  return out;
};

for (const wire of WIRES) {
  describe(`downloads and files (${wire})`, () => {
    const forms = formsOf(wire);
    const soFar = (d: Json) => recordsSoFar(wire, d);
    let emu: EmulatorHarness;
    let api: V4;

    before(async () => {
      emu = await startEmulator(wire, {
        scale: 0.1,
        queueMs: QUEUE_MS,
        rate: RATE,
        fileRecords: FILE_RECORDS,
        fileTtlMs: FILE_TTL,
        tokenTtlMs: 10 * 365 * 24 * 60 * 60 * 1000,
      });
      api = new V4(emu);
    });
    after(() => emu.close());

    const fresh = async () => {
      await emu.reset();
      await api.login();
    };

    /** Starts a download and moves the clock until it has completed. */
    const completed = async (type: string, body: Record<string, unknown>, records: number) => {
      const { id, start } = await api.startDownload(type, body);
      await advance(emu, runTime(emu, records));
      const d = await api.download(id);
      assert.equal(d.status, 'completed', JSON.stringify(d));
      return { id, start, d };
    };

    test('the start of a download answers in the wire form', async () => {
      await fresh();
      const res = await api.search('properties', { query: '*', num_records: 1200, download: true });
      const { status, searchAnswer, downloadObject } = forms.v4Start;
      assert.equal(res.status, status, res.text);
      const keys = ['total_cost'];
      // The search answer (contract), the download object (an older form), or both (live).
      if (searchAnswer) keys.push('download_id', 'num_found', 'records');
      if (downloadObject) keys.push(...DOWNLOAD_FIELDS, 'num_downloaded');
      if (forms.costPerType) keys.push('property_cost');
      assert.deepEqual(Object.keys(res.json).sort(), keys.sort());
      assert.equal(res.json.total_cost, 1200);
      if (searchAnswer) {
        assert.equal(typeof res.json.download_id, 'string');
        assert.ok(res.json.download_id.length > 0);
        assert.ok(res.json.num_found >= 1200);
        assert.deepEqual(res.json.records, []);
      }
      if (downloadObject) {
        const object = [...DOWNLOAD_FIELDS, 'num_downloaded'].map((k) => [k, res.json[k]]);
        assertDownloadShape(wire, Object.fromEntries(object));
        assert.equal(res.json.status, forms.startedRunning ? 'started' : 'queued');
        assert.equal(res.json.num_records, 1200);
        assert.equal(res.json.num_downloaded, 0);
        assert.deepEqual(res.json.results, []);
        if (searchAnswer) assert.equal(res.json.id, res.json.download_id, 'one id, two names');
      }
      // Nothing is charged before records are delivered.
      assert.equal((await api.account()).property_credits_used, 0);
    });

    test('queued -> in_progress -> completed as the clock advances; num_records grows', async () => {
      await fresh();
      const { id } = await api.startDownload('properties', { query: '*', num_records: 1200 });
      const queued = await api.download(id);
      assertDownloadShape(wire, queued);
      assert.equal(String(queued.id), id);
      assert.equal(queued.status, forms.startedRunning ? 'started' : 'queued');
      assert.equal(soFar(queued), 0);
      assert.equal(queued.num_records, forms.numDownloaded ? 1200 : 0);
      assert.deepEqual(queued.results, []);
      assert.ok(Math.abs(Date.parse(queued.created_at) - Date.now()) < 60_000);

      await advance(emu, QUEUE_MS + 500);
      const first = await api.download(id);
      assert.equal(first.status, forms.startedRunning ? 'running' : 'in_progress');
      assert.ok(soFar(first) > 0 && soFar(first) < 1200, String(soFar(first)));
      assert.deepEqual(first.results, [], 'no files while in progress');
      assert.equal(first.created_at, queued.created_at);
      const usedSoFar = (await api.account()).property_credits_used;
      assert.ok(usedSoFar >= soFar(first) && usedSoFar < 1200, 'charged as delivered');

      await advance(emu, 1_000);
      const second = await api.download(id);
      assert.equal(contractStatus(second.status), 'in_progress');
      assert.ok(soFar(second) > soFar(first), 'the records so far grow between polls');

      await advance(emu, runTime(emu, 1200));
      const done = await api.download(id);
      assertDownloadShape(wire, done);
      assert.equal(done.status, 'completed');
      assert.equal(done.num_records, 1200);
      assert.equal(soFar(done), 1200);
      assert.equal(resultUrls(wire, done).length, 3);
      assert.equal((await api.account()).property_credits_used, 1200);
    });

    test('GET /downloads lists every download, cancelled and completed too', async () => {
      await fresh();
      const a = await api.startDownload('businesses', { query: '*', num_records: 10 });
      const b = await api.startDownload('products', { query: '*', num_records: 10 });
      const cancelled = await api.call('DELETE', `/downloads/${b.id}`);
      assert.equal(cancelled.status, 200, cancelled.text);
      await advance(emu, runTime(emu, 10));
      const c = await api.startDownload('people', { query: '*', num_records: 5 });
      const list = await api.ok('GET', '/downloads');
      assert.ok(Array.isArray(list));
      assert.deepEqual(
        list.map((d: Json) => String(d.id)),
        [a.id, b.id, c.id],
      );
      for (const d of list) assertDownloadShape(wire, d);
      assert.deepEqual(
        list.map((d: Json) => contractStatus(d.status)),
        ['completed', 'cancelled', 'queued'],
      );
      assert.deepEqual(list.map(soFar), [10, 0, 0]);
    });

    test('a cancelled download keeps its records so far, in its files, and charges them', async () => {
      await fresh();
      const { id } = await api.startDownload('properties', {
        query: '*',
        num_records: 1200,
        format: 'csv',
      });
      await advance(emu, QUEUE_MS + 3_000);
      const running = await api.download(id);
      assert.equal(contractStatus(running.status), 'in_progress');
      const res = await api.call('DELETE', `/downloads/${id}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.json), ['message']);
      assert.equal(typeof res.json.message, 'string');

      const d = await api.download(id);
      assert.equal(d.status, 'cancelled');
      const kept = soFar(d);
      assert.ok(kept >= soFar(running) && kept < 1200, `kept ${kept}`);
      assert.ok(kept > FILE_RECORDS, 'enough records for more than one file');
      await advance(emu, runTime(emu, 1200));
      const later = await api.download(id);
      assert.equal(later.status, 'cancelled');
      assert.equal(soFar(later), kept, 'no progress after cancellation');

      const { rows, perFile } = await readAll(wire, later, 'csv');
      assert.deepEqual(perFile, split(kept));
      assert.equal(rows.length, kept);
      assert.equal(new Set(rows.map((r) => r.id)).size, kept);
      const account = await api.account();
      assert.equal(account.property_credits_used, kept, 'the kept records are charged, no more');
      assert.equal(account.num_credits_used, kept);

      assertV4Error(wire, await api.call('DELETE', `/downloads/${id}`), 409);
    });

    test('credits held by running downloads are not available to other searches', async () => {
      await fresh();
      await emu.setCredits({ business_credits_allotted: 30 });
      const { id } = await api.startDownload('businesses', { query: '*', num_records: 20 });
      assertV4Error(
        wire,
        await api.search('businesses', { query: '*', num_records: 11, download: true }),
        402,
      );
      assert.equal(
        (await api.preview('businesses', { query: '*', num_records: 10 })).records.length,
        10,
      );
      assertV4Error(wire, await api.search('businesses', { query: '*', num_records: 1 }), 402);
      // Cancelling gives back what the download had not yet delivered.
      assert.equal((await api.call('DELETE', `/downloads/${id}`)).status, 200);
      assert.equal(
        (await api.preview('businesses', { query: '*', num_records: 10 })).records.length,
        10,
      );
      const account = await api.account();
      assert.equal(account.business_credits_used, 20);
    });

    test('cancelling a queued download keeps nothing and costs nothing', async () => {
      await fresh();
      const { id } = await api.startDownload('businesses', { query: '*', num_records: 50 });
      assert.equal((await api.call('DELETE', `/downloads/${id}`)).status, 200);
      await advance(emu, runTime(emu, 50));
      const d = await api.download(id);
      assert.equal(d.status, 'cancelled');
      assert.equal(soFar(d), 0);
      assert.deepEqual(d.results, []);
      assert.equal((await api.account()).business_credits_used, 0);
    });

    test('cancelling a completed download is refused; unknown ids are 404', async () => {
      await fresh();
      const { id } = await completed('businesses', { query: '*', num_records: 20 }, 20);
      const refused = await api.call('DELETE', `/downloads/${id}`);
      assertV4Error(wire, refused, 409, /completed/);
      assert.equal((await api.download(id)).status, 'completed');
      assert.equal((await api.account()).business_credits_used, 20);
      for (const unknown of ['999999', 'ffffffffffffffffffffffff', 'nope']) {
        assertV4Error(wire, await api.get(`/downloads/${unknown}`), 404);
        assertV4Error(wire, await api.call('DELETE', `/downloads/${unknown}`), 404);
      }
    });

    test('a download asking for more than is found delivers and charges what is found', async () => {
      await fresh();
      const first = (await api.preview('businesses', { query: '*', num_records: 1 })).records[0];
      const query = `id:"${first.id}"`;
      const { id, start } = await api.startDownload('businesses', { query, num_records: 500 });
      assert.equal(start.json.total_cost, 1);
      await advance(emu, runTime(emu, 1));
      const d = await api.download(id);
      assert.equal(d.status, 'completed');
      assert.equal(d.num_records, 1);
      assert.equal(soFar(d), 1);
      const { rows } = await readAll(wire, d, 'json');
      assert.equal(rows.length, 1);
      assert.equal(rows[0].id, first.id);
      // One credit for the preview above, one for the download.
      assert.equal((await api.account()).business_credits_used, 2);
    });

    test('CSV files: header row, objects as JSON text, strings comma-joined, numbers by wire', async () => {
      await fresh();
      const preview = (await api.preview('properties', { query: '*', num_records: 10 })).records;
      const { d } = await completed(
        'properties',
        { query: '*', num_records: 1200, format: 'csv' },
        1200,
      );
      const { header, rows, perFile } = await readAll(wire, d, 'csv');
      assert.deepEqual(header, Object.keys(CORE_FIELDS.properties), 'the header names every field');
      assert.deepEqual(perFile, [500, 500, 200], `split every ${FILE_RECORDS} records`);
      assert.equal(rows.length, d.num_records);
      assert.equal(new Set(rows.map((r) => r.id)).size, 1200);
      preview.forEach((record: Json, i: number) => {
        for (const column of header!) {
          assert.equal(
            rows[i][column],
            expectedCell(record[column], wire),
            `${column} of row ${i}`,
          );
        }
      });
      // Spelled out: a list of strings is one comma-joined cell.
      const listed = preview.flatMap((record: Json, i: number) =>
        Object.entries(record)
          .filter(
            ([, v]) => Array.isArray(v) && v.length > 1 && v.every((x) => typeof x === 'string'),
          )
          .map(([column, v]) => ({ i, column, v: v as string[] })),
      );
      assert.ok(listed.length > 0, 'the sample has lists of strings');
      for (const { i, column, v } of listed) assert.equal(rows[i][column], v.join(','));
      const years = rows.map((r) => r.yearBuilt).filter((y: string) => y !== '');
      assert.ok(years.length > 0);
      for (const y of years) assert.match(y, forms.wholeNumbersAsFloat ? /^\d{4}\.0$/ : /^\d{4}$/);
      const prices = rows.find((r) => r.prices !== '')?.prices;
      assert.ok(Array.isArray(JSON.parse(prices)), 'an array of objects is JSON text in one cell');
      assert.equal(typeof JSON.parse(prices)[0], 'object');
    });

    test('NDJSON files: one record per line, split, equal to the search records', async () => {
      await fresh();
      const preview = (await api.preview('properties', { query: '*', num_records: 10 })).records;
      const { d } = await completed('properties', { query: '*', num_records: 1200 }, 1200);
      const { rows, perFile } = await readAll(wire, d, 'json');
      assert.deepEqual(perFile, [500, 500, 200]);
      assert.equal(rows.length, d.num_records);
      assert.deepEqual(rows.slice(0, 10), preview);
      assert.equal(new Set(rows.map((r) => r.id)).size, 1200);
    });

    test('files of a download with a view hold only the view fields, in view order', async () => {
      await fresh();
      await api.ok('POST', '/views', { name: 'biz slim', fields: ['name', 'id', 'city'] });
      const { d } = await completed(
        'businesses',
        { query: '*', num_records: 30, view: 'biz slim', format: 'CSV' },
        30,
      );
      const csv = await readAll(wire, d, 'csv');
      assert.deepEqual(csv.header, ['name', 'id', 'city']);
      assert.equal(csv.rows.length, 30);
      const json = await completed(
        'businesses',
        { query: '*', num_records: 30, view: 'biz slim' },
        30,
      );
      const { rows } = await readAll(wire, json.d, 'json');
      for (const r of rows) {
        for (const key of Object.keys(r)) assert.ok(['name', 'id', 'city'].includes(key), key);
      }
    });

    test('an autotrace download holds traced owners and costs 2 credits a record', async () => {
      await fresh();
      const { start, d } = await completed(
        'properties',
        { query: '*', num_records: 40, auto_trace: true },
        40,
      );
      assert.equal(start.json.total_cost, 80);
      const { rows } = await readAll(wire, d, 'json');
      assert.equal(rows.length, 40);
      for (const r of rows) assert.ok(ownerOf(r)?.firstName, `${r.id} has a traced owner`);
      const account = await api.account();
      assert.equal(account.property_credits_used, 40);
      assert.equal(account.people_credits_used, 40);
    });

    test('Range requests answer 206 with the right bytes', async () => {
      await fresh();
      const { d } = await completed(
        'businesses',
        { query: '*', num_records: 100, format: 'csv' },
        100,
      );
      const [url] = resultUrls(wire, d);
      const whole = await fetchBytes(url!);
      assert.equal(whole.status, 200);
      assert.equal(whole.headers['accept-ranges'], 'bytes');
      assert.equal(Number(whole.headers['content-length']), whole.body.length);
      const size = whole.body.length;
      assert.ok(size > 200);

      const mid = await fetchBytes(url!, { range: 'bytes=10-109' });
      assert.equal(mid.status, 206);
      assert.equal(mid.headers['content-range'], `bytes 10-109/${size}`);
      assert.deepEqual(mid.body, whole.body.subarray(10, 110));

      const open = await fetchBytes(url!, { range: `bytes=${size - 50}-` });
      assert.equal(open.status, 206);
      assert.equal(open.headers['content-range'], `bytes ${size - 50}-${size - 1}/${size}`);
      assert.deepEqual(open.body, whole.body.subarray(size - 50));

      const suffix = await fetchBytes(url!, { range: 'bytes=-7' });
      assert.equal(suffix.status, 206);
      assert.deepEqual(suffix.body, whole.body.subarray(size - 7));

      const beyond = await fetchBytes(url!, { range: `bytes=${size}-` });
      assert.equal(beyond.status, 416);
      assert.equal(beyond.headers['content-range'], `bytes */${size}`);
    });

    test('a tampered URL is 403', async () => {
      await fresh();
      const { d } = await completed('businesses', { query: '*', num_records: 10 }, 10);
      const [url] = resultUrls(wire, d);
      const u = new URL(url!);
      const signature = u.searchParams.get('X-Signature')!;
      const flipped = new URL(url!);
      flipped.searchParams.set(
        'X-Signature',
        signature.slice(0, -1) + (signature.endsWith('0') ? '1' : '0'),
      );
      const later = new URL(url!);
      later.searchParams.set('X-Expires', String(Number(u.searchParams.get('X-Expires')) + 3600));
      const unsigned = new URL(url!);
      unsigned.search = '';
      const renamed = new URL(url!);
      renamed.pathname = renamed.pathname.replace('_0.', '_1.');
      for (const bad of [flipped, later, unsigned, renamed]) {
        const res = await fetchBytes(bad.toString());
        assert.equal(res.status, 403, bad.toString());
        assert.match(res.body.toString(), /<Code>AccessDenied<\/Code>/);
      }
      assert.equal((await fetchBytes(url!)).status, 200, 'the untouched URL works');
    });

    test('expired URLs are 403 and getting the download again gives fresh ones', async () => {
      await fresh();
      const { id, d } = await completed('businesses', { query: '*', num_records: 10 }, 10);
      const [url] = resultUrls(wire, d);
      assert.equal((await fetchBytes(url!)).status, 200);
      await emu.expireFiles();
      const expired = await fetchBytes(url!);
      assert.equal(expired.status, 403);
      assert.match(expired.body.toString(), /AccessDenied/);
      await sleep(5);
      const again = await api.download(id);
      const [fresh1] = resultUrls(wire, again);
      assert.notEqual(fresh1, url);
      const res = await fetchBytes(fresh1!);
      assert.equal(res.status, 200);
      assert.equal(parseNdjson(res.body.toString()).length, 10);
    });

    test('URLs issued right after expire-files work (same millisecond)', async () => {
      await fresh();
      const { id } = await completed('businesses', { query: '*', num_records: 5 }, 5);
      let failures = 0;
      for (let i = 0; i < 40; i++) {
        await emu.expireFiles();
        const [url] = resultUrls(wire, await api.download(id));
        if ((await fetchBytes(url!)).status !== 200) failures += 1;
      }
      assert.equal(failures, 0, `${failures} of 40 fresh URLs were refused`);
    });

    test('URLs expire once the clock passes the file lifetime', async () => {
      await fresh();
      const { id, d } = await completed('businesses', { query: '*', num_records: 10 }, 10);
      const [url] = resultUrls(wire, d);
      await advance(emu, FILE_TTL - 60_000);
      assert.equal((await fetchBytes(url!)).status, 200, 'valid a minute before expiry');
      await advance(emu, 120_000);
      const res = await fetchBytes(url!);
      assert.equal(res.status, 403);
      assert.match(res.body.toString(), /AccessDenied/);
      const [renewed] = resultUrls(wire, await api.download(id));
      assert.equal((await fetchBytes(renewed!)).status, 200);
    });

    test('bad download ids in the path are 4xx in the v4 error shape', async () => {
      await fresh();
      for (const bad of [
        '%ZZ',
        '%',
        'a%00b',
        encodeURIComponent('../../etc/passwd'),
        'x'.repeat(5000),
      ]) {
        const res = await api.get(`/downloads/${bad}`);
        assert.ok(res.status === 400 || res.status === 404, `${bad}: ${res.status}`);
        assertV4Error(wire, res, res.status);
      }
    });
  });
}
