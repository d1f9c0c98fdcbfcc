import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import {
  CORE_FIELDS,
  DATA_TYPES,
  type DataType,
  FIELDS,
  type FieldDef,
  fieldPaths,
  premadeView,
  resolveField,
  unknownFieldsWarning,
} from '../../src/catalog.js';
import { JobTables, type ShapePlan } from '../../src/records/tables.js';

const kind = (def: FieldDef | undefined) =>
  def === undefined ? undefined : def.kind === 'list' ? `list of ${def.of}` : def.kind;

describe('the catalogue: fields the service documents', () => {
  test('the fields a check against the schema pages found refused are known, with kinds', () => {
    const documented: [DataType, string, string][] = [
      ['properties', 'buildingName', 'string'],
      ['properties', 'taxID', 'string'],
      ['properties', 'mlsNumber', 'string'],
      ['properties', 'absenteeOwner', 'objects'],
      ['properties', 'absenteeOwner.absent', 'boolean'],
      ['properties', 'absenteeOwner.firstDateSeen', 'date'],
      ['properties', 'architecturalStyles', 'list of string'],
      ['properties', 'brandTenant', 'string'],
      ['properties', 'deposits.amount', 'number'],
      ['properties', 'deposits.dateSeen', 'list of date'],
      ['properties', 'availableDates.startDate', 'date'],
      ['properties', 'brokers.licenseType', 'string'],
      ['properties', 'transactions.ownerType', 'string'],
      ['businesses', 'claimed', 'list of string'],
      ['businesses', 'cuisines', 'list of string'],
      ['businesses', 'descriptions.value', 'string'],
      ['businesses', 'domains', 'list of string'],
      ['businesses', 'menus.amountMin', 'number'],
      ['businesses', 'menus.name', 'string'],
      ['businesses', 'careerPageURL', 'string'],
      ['products', 'canonicalBrand', 'string'],
      ['products', 'taxonomyLevel9', 'list of string'],
      ['products', 'reviews.numHelpful', 'integer'],
      ['products', 'reviews.rating', 'number'],
    ];
    for (const [type, path, expected] of documented) {
      assert.equal(kind(resolveField(type, path)), expected, `${type} ${path}`);
      assert.ok(fieldPaths(type).includes(path), `${type} ${path} listed`);
    }
  });

  test('core fields keep their kinds, and their lists of objects gain documented sub-fields', () => {
    for (const type of DATA_TYPES) {
      for (const [name, def] of Object.entries(CORE_FIELDS[type])) {
        const merged = FIELDS[type][name]!;
        assert.equal(kind(merged), kind(def), `${type}.${name}`);
        if (def.kind === 'objects' && merged.kind === 'objects') {
          for (const [sub, subDef] of Object.entries(def.fields)) {
            assert.equal(kind(merged.fields[sub]), kind(subDef), `${type}.${name}.${sub}`);
          }
        }
      }
      // The core fields come first, as the service's record shapes list them.
      assert.deepEqual(
        Object.keys(FIELDS[type]).slice(0, Object.keys(CORE_FIELDS[type]).length),
        Object.keys(CORE_FIELDS[type]),
      );
    }
    assert.equal(kind(resolveField('products', 'primaryCategories')), 'string');
    assert.equal(kind(resolveField('properties', 'brokers.dateSeen')), 'date');
    assert.equal(resolveField('properties', 'brokers.licenseType')?.kind, 'string');
    assert.equal(resolveField('properties', 'licenseType'), undefined);
  });

  test('the flat menus views select menus, which businesses now have', () => {
    for (const name of ['business_flat_menus', 'businesses_all_menusFlat']) {
      const view = premadeView(name)!;
      assert.ok(view.fields.includes('menus'), name);
      for (const field of view.fields) assert.ok(resolveField(view.type, field), field);
    }
  });
});

describe('the catalogue: tables made before any record', () => {
  const plan = (fields?: string[]): ShapePlan => ({
    type: 'properties',
    table: 'homes',
    key: ['id'],
    write: 'merge',
    nested: 'tables',
    ...(fields ? { fields } : {}),
  });
  const columnsOf = (tables: JobTables, name: string) =>
    tables
      .definitions()
      .find((t) => t.name === name)!
      .columns.map((c) => `${c.name} ${c.type}`);

  test('without a view, the core fields: the others join the table when the data has them', () => {
    const tables = new JobTables(plan());
    const names = tables.definitions().map((t) => t.name);
    assert.ok(names.includes('homes__brokers'));
    assert.ok(!names.includes('homes__deposits'));
    assert.ok(!columnsOf(tables, 'homes').includes('buildingName text'));
    assert.ok(!columnsOf(tables, 'homes__brokers').includes('licenseType text'));
    // Their column types are known all the same, for when they come.
    assert.equal(tables.hintsOf('homes').buildingName?.kind, 'string');
  });

  test("a view's documented fields are columns and child tables with the catalogue's types", () => {
    const tables = new JobTables(plan(['id', 'buildingName', 'absenteeOwner', 'deposits']));
    assert.deepEqual(columnsOf(tables, 'homes').slice(0, 2), ['id text', 'buildingName text']);
    assert.ok(columnsOf(tables, 'homes__absentee_owner').includes('absent boolean'));
    assert.ok(columnsOf(tables, 'homes__deposits').includes('amount real'));
  });

  test('a view field the catalogue lacks waits for the data to type it', () => {
    const tables = new JobTables(plan(['id', 'solarPanels']));
    assert.deepEqual(
      columnsOf(tables, 'homes').filter((c) => !c.startsWith('_sluice')),
      ['id text'],
    );
  });
});

describe('unknownFieldsWarning', () => {
  test('one field, with the nearest known name', () => {
    assert.equal(
      unknownFieldsWarning([{ field: 'cty', suggestion: 'city' }], 'properties', 'sent as written'),
      "field 'cty' is not in sluice's catalogue of properties (did you mean 'city'?): sent as written",
    );
  });

  test('several: five named, the rest counted', () => {
    const fields = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((field) => ({ field }));
    assert.equal(
      unknownFieldsWarning(fields, 'any data type', 'sent'),
      "fields 'a', 'b', 'c', 'd', 'e' and 2 more are not in sluice's catalogue of any data type: sent",
    );
  });
});
