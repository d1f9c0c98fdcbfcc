import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { ColumnNames, childTableName, Naming, snakeCase } from '../../../src/schema/naming.js';

const unlimited = new Naming(Number.POSITIVE_INFINITY);
const postgres = new Naming(63);

/** The columns `logical` names get in a table that has `columns`, in that order. */
function columnsFor(naming: Naming, columns: string[], logical: string[]): string[] {
  const names = new ColumnNames(naming, columns);
  return logical.map((name) => names.physical(name));
}

describe('column names per table', () => {
  it('names that differ only in case never meet in one column; the first keeps its name', () => {
    const [city, City, CITY] = columnsFor(unlimited, [], ['city', 'City', 'CITY']);
    assert.equal(city, 'city');
    assert.match(City!, /^City__[0-9a-f]{6}$/);
    assert.match(CITY!, /^CITY__[0-9a-f]{6}$/);
    const folded = [city, City, CITY].map((n) => n!.toLowerCase());
    assert.equal(new Set(folded).size, 3);
  });

  it('a later run finds the same columns, whatever order the names come in', () => {
    const first = columnsFor(unlimited, ['id'], ['City', 'city']);
    const table = ['id', ...first];
    for (const order of [
      ['City', 'city'],
      ['city', 'City'],
    ]) {
      const again = new ColumnNames(unlimited, table);
      for (const name of order) {
        assert.equal(again.physical(name), first[['City', 'city'].indexOf(name)], name);
      }
    }
    // A column of its own for a name the table has in another case: the same one each run.
    const a = columnsFor(unlimited, ['city'], ['City']);
    const b = columnsFor(unlimited, ['city'], ['City']);
    assert.deepEqual(a, b);
    assert.deepEqual(columnsFor(unlimited, ['city', a[0]!], ['City', 'city']), [a[0], 'city']);
  });

  it('a table that holds both already (PostgreSQL let it) is written as it is', () => {
    assert.deepEqual(columnsFor(postgres, ['City', 'city'], ['city', 'City', 'CITY']).slice(0, 2), [
      'city',
      'City',
    ]);
  });

  it('reads a column back as the name it holds, and a column no name took as its own', () => {
    const names = new ColumnNames(unlimited, ['city', 'zip']);
    const City = names.physical('City');
    assert.equal(names.logical(City), 'City');
    assert.equal(names.logical('city'), 'city');
    assert.equal(names.logical('zip'), 'zip');
  });

  it('a field named like the column another one was given does not share it', () => {
    const names = new ColumnNames(unlimited, ['city']);
    const City = names.physical('City');
    const squatter = names.physical(City);
    assert.notEqual(squatter, City);
    assert.notEqual(squatter.toLowerCase(), City.toLowerCase());
    assert.notEqual(squatter.toLowerCase(), 'city');
  });

  it('long names stay within the limit, each in a column of its own', () => {
    const long = 'aVeryLongFieldNameFromTheService'.repeat(3);
    const picked = columnsFor(postgres, [], [long, long.toLowerCase(), `${long}Too`]);
    for (const name of picked) assert.ok(Buffer.byteLength(name) <= 63, name);
    assert.equal(new Set(picked.map((n) => n.toLowerCase())).size, 3);
    assert.equal(picked[0], postgres.column(long), 'a long name is shortened as before');
  });
});

describe('naming: snake_case', () => {
  const snake = new Naming(63, 'snake_case');

  it('spells camelCase, acronyms, digits and spaces as snake_case, keeping __ and leading _', () => {
    const cases: [string, string][] = [
      ['firstName', 'first_name'],
      ['mostRecentPriceDate', 'most_recent_price_date'],
      ['HTTPStatus', 'http_status'],
      ['address2Line', 'address2_line'],
      ['Sq Ft', 'sq_ft'],
      ['already_snake', 'already_snake'],
      ['homes__phoneNumbers', 'homes__phone_numbers'],
      ['address__postalCode', 'address__postal_code'],
      ['_sluice_download_id', '_sluice_download_id'],
      ['_parent_id', '_parent_id'],
      ['prixÉté', 'prix_été'],
      ['---', '---'],
    ];
    for (const [name, expected] of cases) assert.equal(snakeCase(name), expected, name);
    assert.equal(snake.table('texasHomes__prices'), 'texas_homes__prices');
    assert.equal(snake.staging('texasHomes', 'p').startsWith('texas_homes__sluice_new_'), true);
  });

  it('within the identifier limit', () => {
    const long = `${'veryLong'.repeat(10)}Name`;
    assert.ok(Buffer.byteLength(snake.column(long)) <= 63);
    assert.equal(snake.column(long), snake.column(long));
  });

  it('two fields spelt alike never meet in one column, and keep their columns every run', () => {
    const [a, b] = columnsFor(snake, [], ['firstName', 'first_name']);
    assert.equal(a, 'first_name');
    assert.match(b!, /^first_name__[0-9a-f]{6}$/);
    // Later runs, in either order or alone, find the same columns.
    const table = [a!, b!];
    assert.deepEqual(columnsFor(snake, table, ['first_name', 'firstName']), [b, a]);
    assert.deepEqual(columnsFor(snake, table, ['first_name']), [b]);
    assert.deepEqual(columnsFor(snake, table, ['firstName']), [a]);
  });

  it('keep leaves names as they are', () => {
    assert.equal(new Naming(63).column('firstName'), 'firstName');
  });
});

describe('child table names', () => {
  it('keep the rule existing child tables were named by: ASCII camelCase, lowercased', () => {
    const cases: [string, string][] = [
      ['phoneNumbers', 'homes__phone_numbers'],
      ['HTTPStatus', 'homes__http_status'],
      // Where snakeCase differs, the child table keeps the name it always had.
      ['phone numbers', 'homes__phone numbers'],
      ['éA', 'homes__éa'],
      ['a-b', 'homes__a-b'],
    ];
    for (const [field, expected] of cases) assert.equal(childTableName('homes', field), expected);
    // Under naming: snake_case the whole name is spelt as every table's is.
    const snake = new Naming(63, 'snake_case');
    assert.equal(snake.table(childTableName('homes', 'phone numbers')), 'homes__phone_numbers');
  });
});
