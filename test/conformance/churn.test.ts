/**
 * The emulator's world changes with its clock (--churn): records are updated and new ones
 * appear, the same for the same seed and clock; searches, counts and previews see the world as
 * of now, downloads as of their start; dateUpdated ranges find exactly what changed; the control
 * API updates and adds records now; churn 0 freezes the world.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { parseChurn, resolveOptions } from '../../src/emulator/options.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  advance,
  assertV4Error,
  call,
  fetchBytes,
  type Json,
  parseNdjson,
  resultUrls,
  runTime,
  startEmulator,
  V4,
} from './support.js';

const DAY = 24 * 60 * 60 * 1000;
const TYPES = ['properties', 'businesses', 'products', 'people'] as const;
/** 1% a day over 2,000 properties: enough changes in three days to measure a share. */
const CHURN = 0.01;
const OPTIONS = {
  scale: 0.1,
  churn: CHURN,
  fileRecords: 500,
  tokenTtlMs: 10 * 365 * DAY,
  fileTtlMs: 30 * DAY,
};

interface Info {
  now: string;
  counts: Record<string, number>;
  churn: {
    per_day: number;
    since: string;
    updated: Record<string, number>;
    added: Record<string, number>;
  };
}

const info = (emu: EmulatorHarness) => emu.control<Info>('GET', 'info');

async function count(api: V4, type: string, query: string): Promise<number> {
  return (await api.preview(type, { query, num_records: 0 })).num_found;
}

/** Every record a download delivers, once it has completed. */
async function downloadAll(emu: EmulatorHarness, api: V4, type: string, query: string) {
  const { id, start } = await api.startDownload(type, { query, num_records: 1_000_000 });
  await advance(emu, runTime(emu, start.json.num_found));
  const d = await api.download(id);
  assert.equal(d.status, 'completed', JSON.stringify(d));
  const urls = resultUrls('contract', d);
  const records: Json[] = [];
  for (const url of urls) records.push(...parseNdjson((await fetchBytes(url)).body.toString()));
  return { id, numFound: start.json.num_found as number, urls, records };
}

/** Records changed since the start, as [id, ms after the start, a visible field] lines. */
async function changes(emu: EmulatorHarness, api: V4, within: number): Promise<string[]> {
  const since = (await info(emu)).churn.since;
  const origin = Date.parse(since);
  const { records } = await downloadAll(emu, api, 'properties', `dateUpdated:[${since} TO *]`);
  return records
    .map((r) => ({ r, offset: Date.parse(r.dateUpdated) - origin }))
    .filter(({ offset }) => offset <= within)
    .map(({ r, offset }) => `${r.id} ${offset} ${r.mostRecentPriceAmount} ${r.mostRecentStatus}`)
    .sort();
}

describe('churn', () => {
  let emu: EmulatorHarness;
  let api: V4;

  before(async () => {
    emu = await startEmulator('contract', OPTIONS);
    api = new V4(emu);
  });
  after(() => emu.close());

  const fresh = async () => {
    await emu.reset();
    await api.login();
  };

  test('the churn option reads fractions and percentages per day, and refuses nonsense', () => {
    assert.equal(parseChurn('0.2%/day'), 0.002);
    assert.equal(parseChurn('0.002'), 0.002);
    assert.equal(parseChurn('0'), 0);
    assert.equal(parseChurn('0.5%'), 0.005);
    assert.ok(Math.abs(parseChurn('7%/week') - 0.01) < 1e-12, '7%/week is 1% a day');
    for (const bad of ['', 'fast', '-1%', '2%/fortnight', '1e-3']) {
      assert.throws(() => parseChurn(bad), RangeError, bad);
    }
    assert.equal(resolveOptions().churn, 0.002, 'the default is 0.2% a day');
    assert.throws(() => resolveOptions({ churn: 2 }), RangeError);
    assert.throws(() => resolveOptions({ churn: -0.1 }), RangeError);
  });

  test('at the start nothing has changed, and every date is before the start', async () => {
    await fresh();
    const start = await info(emu);
    assert.equal(start.churn.per_day, CHURN);
    assert.ok(Date.parse(start.churn.since) <= Date.parse(start.now), 'changes start by now');
    for (const type of TYPES) {
      assert.equal(start.churn.updated[type], 0, type);
      assert.equal(start.churn.added[type], 0, type);
      assert.equal(await count(api, type, `dateUpdated:[${start.churn.since} TO *]`), 0, type);
      assert.equal(await count(api, type, `dateAdded:[${start.churn.since} TO *]`), 0, type);
    }
  });

  test('three days change about the expected share of each type', async () => {
    await fresh();
    const start = await info(emu);
    await advance(emu, 3 * DAY);
    const later = await info(emu);
    for (const type of TYPES) {
      const base = start.counts[type]!;
      const updated = later.churn.updated[type]!;
      const added = later.churn.added[type]!;
      // Each record changes at 1% a day; new ones come at 1% of the base a day, evenly.
      const expected = base * (1 - Math.exp(-3 * CHURN));
      assert.ok(Math.abs(updated - expected) <= 4 * Math.sqrt(expected) + 2, `${type} ${updated}`);
      assert.ok(Math.abs(added - base * 3 * CHURN) <= 2, `${type} added ${added}`);
      assert.equal(later.counts[type], base + added, type);
      assert.equal(await count(api, type, '*'), base + added, `${type}: searches see them`);
    }
  });

  test('the same seed and clock give the same world; another seed another one', async () => {
    const twin = await startEmulator('contract', OPTIONS);
    const other = await startEmulator('contract', { ...OPTIONS, seed: 2 });
    try {
      await fresh();
      const twinApi = new V4(twin);
      const otherApi = new V4(other);
      await twinApi.login();
      await otherApi.login();
      for (const e of [emu, twin, other]) await advance(e, 3 * DAY);
      // The emulators started a moment apart: compare what happened before the later one's now.
      const elapsed = async (e: EmulatorHarness) => {
        const i = await info(e);
        return Date.parse(i.now) - Date.parse(i.churn.since);
      };
      const within = Math.min(await elapsed(emu), await elapsed(twin)) - 5_000;
      const mine = await changes(emu, api, within);
      assert.ok(mine.length > 20, `${mine.length} changes`);
      assert.deepEqual(await changes(twin, twinApi, within), mine);
      const theirs = await changes(other, otherApi, within);
      assert.ok(theirs.length > 20, `${theirs.length} changes with seed 2`);
      assert.notDeepEqual(theirs, mine);
    } finally {
      await twin.close();
      await other.close();
    }
  });

  test('a dateUpdated range finds exactly the records updated or added since', async () => {
    await fresh();
    const { churn } = await info(emu);
    const since = churn.since;
    const query = `dateUpdated:[${since} TO *]`;
    assert.equal(await count(api, 'properties', query), 0);
    await advance(emu, 3 * DAY);
    const now = await info(emu);
    const changed = now.churn.updated.properties! + now.churn.added.properties!;
    assert.ok(changed > 0, 'something changed in three days');
    // The count is fresh, not the cached answer of the same query before the clock moved.
    assert.equal(await count(api, 'properties', query), changed);
    assert.equal(
      await count(api, 'properties', `dateAdded:[${since} TO *]`),
      now.churn.added.properties,
    );

    const { records } = await downloadAll(emu, api, 'properties', query);
    assert.equal(records.length, changed);
    const midway = new Date(Date.parse(since) + 1.5 * DAY).toISOString().replace('.000Z', 'Z');
    const after = records.filter((r) => r.dateUpdated >= midway);
    assert.ok(
      after.length > 0 && after.length < records.length,
      `${after.length} of ${records.length} changed in the last day and a half`,
    );
    assert.equal(await count(api, 'properties', `dateUpdated:[${midway} TO *]`), after.length);
    const texas = records.filter((r) => r.province === 'TX');
    assert.ok(texas.length > 0, 'some changed records are in Texas');
    assert.equal(await count(api, 'properties', `(province:TX) AND ${query}`), texas.length);
    assert.equal(
      (await count(api, 'properties', `dateUpdated:[* TO ${since}}`)) + changed,
      now.counts.properties,
      'everything else is dated before the start',
    );
    for (const r of records) {
      assert.ok(r.dateAdded <= r.dateUpdated, r.id);
      // A new record is dated by its arrival until it is updated; an update relists a property.
      if (r.dateAdded !== r.dateUpdated) assert.equal(r.mostRecentPriceDate, r.dateUpdated, r.id);
    }
  });

  test('a download keeps the records as of its start, and its files never change', async () => {
    await fresh();
    await advance(emu, 2 * DAY);
    const query = 'province:TX';
    const then = await downloadAll(emu, api, 'properties', query);
    const first = await fetchBytes(then.urls[0]!);
    const target = then.records[0]!;

    const updated = await emu.control<Json>('POST', 'records/update', {
      type: 'properties',
      ids: [target.id],
    });
    await emu.control('POST', 'records/add', {
      type: 'properties',
      count: 2,
      fields: { province: 'TX' },
    });
    await advance(emu, 5 * DAY);

    const again = await fetchBytes(resultUrls('contract', await api.download(then.id))[0]!);
    assert.ok(again.body.equals(first.body), 'the same bytes after the world moved on');
    const kept = parseNdjson(again.body.toString()).find((r) => r.id === target.id);
    assert.deepEqual(kept, target, 'the record as it was when the download started');

    // Files first rendered after the world moved on still hold the world of the start.
    const preview = await api.preview('properties', { query, num_records: 3 });
    const { id, start } = await api.startDownload('properties', {
      query,
      num_records: 1_000_000,
    });
    await emu.control('POST', 'records/update', {
      type: 'properties',
      ids: preview.records.map((r: Json) => r.id),
    });
    await emu.control('POST', 'records/add', { type: 'properties', fields: { province: 'TX' } });
    await advance(emu, 3 * DAY);
    const late = resultUrls('contract', await api.download(id));
    const lateRecords = parseNdjson((await fetchBytes(late[0]!)).body.toString());
    assert.deepEqual(lateRecords.slice(0, 3), preview.records);
    let delivered = 0;
    for (const url of late)
      delivered += parseNdjson((await fetchBytes(url)).body.toString()).length;
    assert.equal(delivered, start.json.num_found);

    const now = await downloadAll(emu, api, 'properties', query);
    assert.ok(now.numFound >= then.numFound + 2, 'a new download sees the new records');
    const current = now.records.find((r) => r.id === target.id);
    assert.ok(current.dateUpdated >= updated.date_updated, current.dateUpdated);
    assert.notDeepEqual(current.prices, target.prices);
  });

  test('the control API updates records now: dateUpdated and a visible field change', async () => {
    await fresh();
    const picks: Record<string, Json> = {};
    for (const type of TYPES) {
      picks[type] = (await api.preview(type, { query: '*', num_records: 2 })).records;
    }
    await advance(emu, 60_000);
    for (const type of TYPES) {
      const ids = picks[type].map((r: Json) => r.id);
      const res = await emu.control<Json>('POST', 'records/update', { type, ids });
      assert.deepEqual(res.ids, ids);
      assert.match(res.date_updated, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      for (const old of picks[type]) {
        const [now] = (await api.preview(type, { query: `id:${old.id}`, num_records: 1 })).records;
        assert.equal(now.dateUpdated, res.date_updated, `${type} ${old.id}`);
        assert.equal(now.dateAdded, old.dateAdded);
        const visible = {
          properties: ['mostRecentPriceAmount', 'prices'],
          businesses: ['phones'],
          products: ['mostRecentPriceAmount', 'prices'],
          people: ['phones'],
        }[type];
        for (const field of visible) {
          assert.notDeepEqual(now[field], old[field], `${type}.${field} changed`);
        }
      }
      assert.equal(await count(api, type, `dateUpdated:[${res.date_updated} TO *]`), 2, type);
    }
    const { churn } = await info(emu);
    assert.deepEqual(churn.updated, { properties: 2, businesses: 2, products: 2, people: 2 });

    const unknown = await call('POST', `${emu.url}/_emulator/records/update`, {
      json: { type: 'properties', ids: ['no-such-id'] },
    });
    assertV4Error('contract', unknown, 404, /no-such-id/);
    const invalid = await call('POST', `${emu.url}/_emulator/records/update`, {
      json: { type: 'cars', ids: ['x'] },
    });
    assertV4Error('contract', invalid, 400);
  });

  test('the control API adds records now, with the fields asked for, ids never reused', async () => {
    await fresh();
    const base = (await info(emu)).counts.properties!;
    const texas = await count(api, 'properties', 'province:TX');
    const res = await emu.control<Json>('POST', 'records/add', {
      type: 'properties',
      count: 3,
      fields: { province: 'TX', mostRecentStatus: 'For Sale' },
    });
    assert.equal(res.ids.length, 3);
    assert.equal(new Set(res.ids).size, 3);
    const more = await emu.control<Json>('POST', 'records/add', { type: 'properties' });
    assert.equal(more.ids.length, 1);
    assert.ok(!res.ids.includes(more.ids[0]), 'a new id each time');

    assert.equal(await count(api, 'properties', '*'), base + 4);
    assert.equal(await count(api, 'properties', 'province:TX'), texas + 3);
    for (const id of res.ids) {
      const found = await api.preview('properties', { query: `id:${id}`, num_records: 1 });
      assert.equal(found.num_found, 1, id);
      const [r] = found.records;
      assert.equal(r.province, 'TX');
      assert.equal(r.mostRecentStatus, 'For Sale');
      assert.equal(r.dateAdded, res.date_added);
      assert.equal(r.dateUpdated, res.date_added);
    }
    const { churn } = await info(emu);
    assert.equal(churn.added.properties, 4);
    // Added records can be updated like any other.
    await advance(emu, 5_000);
    const up = await emu.control<Json>('POST', 'records/update', {
      type: 'properties',
      ids: [res.ids[0]],
    });
    const [r] = (await api.preview('properties', { query: `id:${res.ids[0]}`, num_records: 1 }))
      .records;
    assert.equal(r.dateUpdated, up.date_updated);
    assert.equal(r.dateAdded, res.date_added);

    for (const fields of [{ nope: 1 }, { province: 5 }, { id: 'mine' }, { dateUpdated: 'x' }]) {
      const bad = await call('POST', `${emu.url}/_emulator/records/add`, {
        json: { type: 'properties', count: 1, fields },
      });
      assertV4Error('contract', bad, 400);
    }

    await emu.reset();
    await api.login();
    const reset = await info(emu);
    assert.equal(reset.counts.properties, base, 'reset takes the added records away');
    assert.equal(reset.churn.added.properties, 0);
    assert.equal(reset.churn.updated.properties, 0);
    assert.equal(await count(api, 'properties', `id:${res.ids[0]}`), 0);
  });

  test('churn 0 freezes the world', async () => {
    const still = await startEmulator('contract', { ...OPTIONS, churn: 0 });
    try {
      const stillApi = new V4(still);
      await stillApi.login();
      const start = await info(still);
      const sample = (await stillApi.preview('properties', { query: '*', num_records: 10 }))
        .records;
      await advance(still, 365 * DAY);
      const later = await info(still);
      assert.equal(later.churn.per_day, 0);
      assert.deepEqual(later.counts, start.counts);
      for (const type of TYPES) {
        assert.equal(later.churn.updated[type], 0);
        assert.equal(later.churn.added[type], 0);
        assert.equal(await count(stillApi, type, `dateUpdated:[${start.churn.since} TO *]`), 0);
      }
      const again = (await stillApi.preview('properties', { query: '*', num_records: 10 })).records;
      assert.deepEqual(again, sample);
    } finally {
      await still.close();
    }
  });
});
