/**
 * Fields served beyond the core ones (`--extra-field`, `PUT /_emulator/fields`): documented
 * fields the emulator does not make up by default, and fields no catalogue lists, as a service
 * that has added a field serves it. They are part of the emulator's schema: searched, named in
 * views, written into files; a field outside that schema is still 400, in the service's words.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { CORE_FIELDS } from '../../src/catalog.js';
import { ExtraFields, parseExtraField } from '../../src/emulator/world/extra-fields.js';
import type { EmulatorHarness } from '../helpers/emulator.js';
import {
  advance,
  assertV4Error,
  fetchBytes,
  type Json,
  parseCsvText,
  parseNdjson,
  resultUrls,
  runTime,
  startEmulator,
  V4,
  WIRES,
} from './support.js';

const FIELDS = [
  'properties.buildingName',
  'properties.transactions.ownerType=individual|company',
  'properties.deposits.amount',
  'properties.solarPanels:boolean',
];

describe('extra fields: specs', () => {
  test('kinds come from the catalogue for the fields it lists, else as written', () => {
    assert.deepEqual(parseExtraField('properties.buildingName').def, { kind: 'string' });
    assert.deepEqual(parseExtraField('properties.deposits.amount').def, { kind: 'number' });
    assert.deepEqual(parseExtraField('properties.solarPanels:boolean').def, { kind: 'boolean' });
    assert.deepEqual(parseExtraField('businesses.tags:list').def, { kind: 'list', of: 'string' });
    assert.deepEqual(parseExtraField('properties.roofArea:number=80|120.5').values, [80, 120.5]);
  });

  test('a spec that cannot be served says why', () => {
    const bad: [string, RegExp][] = [
      ['homes.x', /homes is not a data type/],
      ['properties', /expected TYPE\.FIELD/],
      ['properties.city.name', /city is not a list of objects/],
      ['properties.prices', /holds nested records: serve its fields \(prices\.amountMax\)/],
      ['properties.yearBuilt:string', /the catalogue lists it as integer/],
      ['properties.x:colour', /kind is one of string, number/],
      ['properties.x:integer=1|two', /'two' is not a whole number/],
      ['properties.bad-name', /a field name is letters/],
    ];
    for (const [spec, message] of bad) assert.throws(() => parseExtraField(spec), message, spec);
  });

  test('the schema: the catalogue and the extra paths, a new list of objects made on the way', () => {
    const extras = ExtraFields.parse(['properties.leases.tenant', 'people.solarPanels:boolean']);
    assert.deepEqual(extras.resolve('properties', 'leases'), {
      kind: 'objects',
      fields: { tenant: { kind: 'string' } },
    });
    assert.equal(extras.resolve('properties', 'city')?.kind, 'string');
    assert.equal(extras.resolve('properties', 'solarPanels'), undefined);
    assert.ok(extras.knows('solarPanels') && extras.knows('leases.tenant'));
    assert.deepEqual(extras.columns('properties'), [
      ...Object.keys(CORE_FIELDS.properties),
      'leases',
    ]);
  });
});

for (const wire of WIRES) {
  describe(`extra fields (${wire})`, () => {
    let emu: EmulatorHarness;
    let api: V4;

    before(async () => {
      emu = await startEmulator(wire, { extraFields: FIELDS });
      api = new V4(emu);
      await api.login();
    });
    after(() => emu.close());

    test('they are served on every record, and a list of objects gets them on each item', async () => {
      const { records } = await api.preview('properties', { query: '*', num_records: 10 });
      for (const record of records) {
        assert.match(record.buildingName, /^buildingName \d+$/);
        assert.equal(typeof record.solarPanels, 'boolean');
        assert.ok(record.deposits.length === 1 && typeof record.deposits[0].amount === 'number');
        for (const t of record.transactions ?? []) {
          assert.ok(['individual', 'company'].includes(t.ownerType));
        }
      }
      assert.ok(
        records.some((r: Json) => r.transactions === undefined),
        'none made up',
      );
      // The same seed serves the same values.
      const again = await api.preview('properties', { query: '*', num_records: 10 });
      assert.deepEqual(again.records, records);
    });

    test("the vendor's autotrace query counts, and searches match on their values", async () => {
      const count = async (query: string) =>
        (await api.preview('properties', { query, num_records: 0 })).num_found;
      const all = await count('*');
      const traced = await count(
        'transactions.buyerFirstName:* AND transactions.buyerLastName:* AND transactions.ownerType:individual',
      );
      assert.ok(traced > 0 && traced < all);
      const sunny = await count('solarPanels:true');
      assert.equal(sunny + (await count('solarPanels:false')), all);
      assert.ok(sunny > 0 && sunny < all);
      assert.equal(await count('deposits.amount:[0 TO *]'), all);
      // Documented, not served: known to the schema, and matched on the data (none).
      assert.equal(await count('taxID:*'), 0);
      const unknown = await api.search('properties', { query: 'roofColour:red', num_records: 0 });
      assertV4Error(wire, unknown, 400, /roofColour.*does not exist in the property schema/);
    });

    test('views name them; files hold them (a CSV column for each) as of the download start', async () => {
      const view = { name: 'open', fields: ['id', 'buildingName', 'solarPanels', 'deposits'] };
      assert.equal((await api.call('POST', '/views', view)).status, 201);
      const bad = await api.call('POST', '/views', { name: 'bad', fields: ['id', 'roofColour'] });
      assertV4Error(wire, bad, 400, /unknown field in view: roofColour/);

      const { id } = await api.startDownload('properties', {
        query: 'solarPanels:true',
        num_records: 5,
        view: 'open',
      });
      // Served from now on: the download keeps the fields it started with.
      await emu.control('PUT', 'fields', { fields: ['properties.taxID'] });
      await advance(emu, runTime(emu, 5));
      const [url] = resultUrls(wire, await api.download(id));
      const records = parseNdjson((await fetchBytes(url!)).body.toString('utf8'));
      assert.equal(records.length, 5);
      for (const record of records) {
        assert.deepEqual(Object.keys(record), ['id', 'buildingName', 'solarPanels', 'deposits']);
        assert.equal(record.solarPanels, true);
      }

      const csv = await api.startDownload('properties', {
        query: '*',
        num_records: 3,
        format: 'csv',
      });
      await advance(emu, runTime(emu, 3));
      const [csvUrl] = resultUrls(wire, await api.download(csv.id));
      const [header, ...rows] = parseCsvText((await fetchBytes(csvUrl!)).body.toString('utf8'));
      assert.deepEqual(header, [...Object.keys(CORE_FIELDS.properties), 'taxID']);
      for (const row of rows) assert.match(row.at(-1)!, /^taxID \d+$/);
    });

    test('the control API lists and replaces them; a bad spec is 400; reset restores', async () => {
      const set = await emu.control<{ fields: string[] }>('PUT', 'fields', {
        fields: ['businesses.cuisines'],
      });
      assert.deepEqual(set.fields, ['businesses.cuisines']);
      const { records } = await api.preview('businesses', { query: 'cuisines:*', num_records: 1 });
      assert.ok(Array.isArray(records[0].cuisines));
      const info = await emu.control<{ extra_fields: string[] }>('GET', 'info');
      assert.deepEqual(info.extra_fields, ['businesses.cuisines']);
      await assert.rejects(
        emu.control('PUT', 'fields', { fields: ['properties.prices'] }),
        /400.*holds nested records/,
      );
      await emu.reset();
      await api.login();
      assert.deepEqual((await emu.control<{ fields: string[] }>('GET', 'fields')).fields, FIELDS);
    });
  });
}
