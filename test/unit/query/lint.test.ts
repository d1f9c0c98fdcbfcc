import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import type { DataType } from '../../../src/catalog.js';
import { QueryError } from '../../../src/errors.js';
import { checkQuery, lintQuery } from '../../../src/query/lint.js';
import { parseQuery } from '../../../src/query/parse.js';

function lint(query: string, type: DataType) {
  return lintQuery(parseQuery(query), type);
}

describe('lintQuery: unknown fields', () => {
  const typos: [DataType, string, string, string][] = [
    ['properties', 'citty', 'city', 'property'],
    ['businesses', 'nmae', 'name', 'business'],
    ['products', 'brnd', 'brand', 'product'],
    ['people', 'frstName', 'firstName', 'people'],
  ];
  for (const [type, typo, fix, schema] of typos) {
    test(`${type}: '${typo}' is reported with a suggestion, in the service's words`, () => {
      const query = `${typo}:x`;
      assert.deepEqual(lint(query, type), [
        {
          message: `field '${typo}' does not exist in the ${schema} schema; did you mean '${fix}'?`,
          span: { start: 0, end: typo.length },
          field: typo,
          suggestion: fix,
          unknown: true,
        },
      ]);
      assert.deepEqual(lint(`${fix}:x`, type), []);
    });
  }

  test('a field nothing resembles gets no suggestion', () => {
    assert.deepEqual(lint('zzzzzzzzzz:1', 'businesses'), [
      {
        message: "field 'zzzzzzzzzz' does not exist in the business schema",
        span: { start: 0, end: 10 },
        field: 'zzzzzzzzzz',
        unknown: true,
      },
    ]);
  });

  test('a field of one data type is unknown in another', () => {
    assert.deepEqual(lint('numBedroom:3', 'properties'), []);
    const [issue] = lint('numBedroom:3', 'businesses');
    assert.equal(
      issue?.message.startsWith("field 'numBedroom' does not exist in the business schema"),
      true,
    );
  });

  test('nested paths: valid ones pass, typos in either part are suggested whole', () => {
    assert.deepEqual(lint('prices.amountMin:[100000 TO *]', 'properties'), []);
    assert.deepEqual(lint('people.phoneNumbers.number:5125550100', 'properties'), []);
    assert.deepEqual(lint('reviews.rating:>=4 hours.day:Monday', 'businesses'), []);
    assert.deepEqual(lint('prices.merchant:Walmart*', 'products'), []);

    const [inner] = lint('prices.amountMn:1', 'properties');
    assert.equal(inner?.suggestion, 'prices.amountMin');
    assert.deepEqual(inner?.span, { start: 0, end: 15 });
    assert.equal(lint('price.amountMin:1', 'properties')[0]?.suggestion, 'prices.amountMin');

    const [intoScalar] = lint('city.name:x', 'properties');
    assert.equal(
      intoScalar?.message.startsWith("field 'city.name' does not exist in the property schema"),
      true,
    );
    assert.equal(lint('prices.amountMin.x:1', 'properties').length, 1);
  });

  test('terms under NOT, inside groups and in ranges are all checked, in query order', () => {
    const issues = lint('(cty:a OR -sttus:b) AND yearBuit:[1 TO 2]', 'properties');
    assert.deepEqual(
      issues.map((i) => [i.field, i.span.start]),
      [
        ['cty', 1],
        ['sttus', 11],
        ['yearBuit', 24],
      ],
    );
  });

  test('a field group with an unknown field is reported once, at the field', () => {
    assert.deepEqual(lint('citty:(Austin OR Dallas OR Houston)', 'properties'), [
      {
        message: "field 'citty' does not exist in the property schema; did you mean 'city'?",
        span: { start: 0, end: 5 },
        field: 'citty',
        suggestion: 'city',
        unknown: true,
      },
    ]);
  });

  test('bare values and the match-all query have nothing to check', () => {
    assert.deepEqual(lint('Austin "New York" Aus*', 'properties'), []);
    assert.deepEqual(lint('', 'people'), []);
    assert.deepEqual(lint('*:*', 'products'), []);
  });
});

describe('lintQuery: values that cannot apply to the field', () => {
  test('a range or comparison on a true/false field', () => {
    assert.deepEqual(lint('prices.isSale:[false TO true]', 'properties'), [
      {
        message: "a range cannot apply to true/false field 'prices.isSale'",
        span: { start: 14, end: 29 },
        field: 'prices.isSale',
      },
    ]);
    assert.equal(lint('statuses.isUnderContract:>false', 'properties').length, 1);
  });

  test('a true/false field takes true or false in any case, or *', () => {
    assert.deepEqual(
      lint('prices.isSale:true prices.isSold:FALSE prices.isSale:*', 'properties'),
      [],
    );
    assert.deepEqual(lint('prices.isSale:yes', 'products'), [
      {
        message: "field 'prices.isSale' is true or false, not 'yes'",
        span: { start: 14, end: 17 },
        field: 'prices.isSale',
      },
    ]);
    assert.equal(
      lint('prices.isSale:t*', 'products')[0]?.message,
      "wildcards cannot apply to true/false field 'prices.isSale'",
    );
  });

  test('number fields need numbers, in values and range bounds', () => {
    assert.deepEqual(
      lint('numBedroom:3 numBathroom:[1.5 TO *] yearBuilt:>=-1e3', 'properties'),
      [],
    );
    assert.deepEqual(lint('numBedroom:three', 'properties'), [
      {
        message: "field 'numBedroom' holds numbers, not 'three'",
        span: { start: 11, end: 16 },
        field: 'numBedroom',
      },
    ]);
    assert.equal(
      lint('reviews.rating:[1 TO high]', 'businesses')[0]?.message,
      "field 'reviews.rating' holds numbers, not 'high'",
    );
    assert.equal(lint('numBedroom:"  "', 'properties').length, 1);
  });

  test('a field holding nested records can be tested for presence only', () => {
    assert.deepEqual(lint('prices:* reviews:*', 'properties'), []);
    assert.equal(lint('prices:* reviews:*', 'people').length, 2);
    assert.deepEqual(lint('prices:*', 'properties'), []);
    assert.deepEqual(lint('prices:5', 'properties'), [
      {
        message:
          "field 'prices' holds nested records; search one of its fields, such as 'prices.amountMax'",
        span: { start: 7, end: 8 },
        field: 'prices',
      },
    ]);
  });

  test('existence checks are fine on every kind of field', () => {
    const query =
      'city:* yearBuilt:* dateAdded:* prices.isSale:* keys:* features:* prices.dateSeen:*';
    assert.deepEqual(lint(query, 'properties'), []);
  });

  test('text and date fields take any value form', () => {
    assert.deepEqual(
      lint('city:[A TO M] dateAdded:[2020 TO *] dateAdded:2020* postalCode:787*', 'properties'),
      [],
    );
  });
});

describe('checkQuery', () => {
  test('returns the tree of a good query', () => {
    const { ast, unknown } = checkQuery('city:Austin AND prices.amountMin:>100000', 'properties');
    assert.equal(ast.type, 'and');
    assert.deepEqual(unknown, []);
  });

  test('strict: throws the first unknown field as SLUICE_QUERY_FIELD with its span', () => {
    assert.throws(
      () => checkQuery('province:TX AND citty:Austin AND nmae:x', 'properties', { strict: true }),
      (error: unknown) => {
        assert.ok(error instanceof QueryError);
        assert.equal(error.code, 'SLUICE_QUERY_FIELD');
        assert.equal(
          error.message,
          "field 'citty' does not exist in the property schema; did you mean 'city'?",
        );
        assert.deepEqual([error.start, error.end], [16, 21]);
        assert.equal(
          error.excerpt,
          'province:TX AND citty:Austin AND nmae:x\n                ^^^^^',
        );
        return true;
      },
    );
  });

  test('syntax errors come first, as SLUICE_QUERY_SYNTAX', () => {
    assert.throws(
      () => checkQuery('citty:Austin AND', 'properties'),
      (error: unknown) => error instanceof QueryError && error.code === 'SLUICE_QUERY_SYNTAX',
    );
  });
});

describe('checkQuery: an open catalogue', () => {
  test("the vendor's autotrace query passes: transactions.ownerType is documented", () => {
    const query =
      'transactions.buyerFirstName:* AND transactions.buyerLastName:* AND transactions.ownerType:individual';
    assert.deepEqual(checkQuery(query, 'properties').unknown, []);
    assert.deepEqual(checkQuery(query, 'properties', { strict: true }).unknown, []);
  });

  test('fields the schema pages document are known, with their kinds', () => {
    const documented: [DataType, string][] = [
      ['properties', 'buildingName:"Castle Beach Club" taxID:12-345 mlsNumber:7781'],
      ['properties', 'absenteeOwner.absent:true architecturalStyles:Ranch brandTenant:Bob*'],
      ['properties', 'deposits.amount:[100 TO *] availableDates.startDate:[2026 TO *]'],
      ['properties', 'brokers.licenseType:TREC'],
      ['businesses', 'claimed:* cuisines:Seafood descriptions.value:sandwich* domains:*'],
      ['businesses', 'menus.name:Burger menus.amountMin:<10 careerPageURL:*'],
      ['products', 'canonicalBrand:Samsung taxonomyLevel2:parts reviews.rating:>=4'],
    ];
    for (const [type, query] of documented) {
      assert.deepEqual(checkQuery(query, type, { strict: true }).unknown, [], query);
    }
    // Known fields keep their kinds: a true/false field still refuses other values.
    assert.throws(
      () => checkQuery('absenteeOwner.absent:maybe', 'properties'),
      (error: unknown) => error instanceof QueryError && error.code === 'SLUICE_QUERY_FIELD',
    );
    assert.throws(
      () => checkQuery('deposits.amount:lots', 'properties'),
      /field 'deposits.amount' holds numbers, not 'lots'/,
    );
  });

  test('a field the catalogue lacks is returned with the nearest known name, not thrown', () => {
    const { ast, unknown } = checkQuery(
      'cty:Austin AND solarPanels:true AND cty:Dallas',
      'properties',
    );
    assert.equal(ast.type, 'and');
    assert.deepEqual(
      unknown.map((u) => [u.field, u.suggestion, u.span.start]),
      [
        ['cty', 'city', 0],
        ['solarPanels', undefined, 15],
      ],
    );
  });

  test('a value that cannot apply to a known field is refused, beside unknown fields', () => {
    assert.throws(
      () => checkQuery('solarPanels:true AND yearBuilt:old', 'properties'),
      /field 'yearBuilt' holds numbers, not 'old'/,
    );
  });

  test('a schema beyond the catalogue (the emulator serves extra fields) knows them', () => {
    const schema = (path: string) =>
      path === 'solarPanels' ? ({ kind: 'boolean' } as const) : undefined;
    assert.deepEqual(
      checkQuery('solarPanels:true', 'properties', { strict: true, schema }).unknown,
      [],
    );
    assert.throws(
      () => checkQuery('solarPanels:sunny', 'properties', { schema }),
      /is true or false, not 'sunny'/,
    );
  });

  test('thousands of unknown fields come back at once, the first few with suggestions', () => {
    const query = Array.from({ length: 9000 }, (_, i) => `citx${i}:x`).join(' ');
    const { unknown } = checkQuery(query, 'properties');
    assert.equal(unknown.length, 9000);
    assert.equal(unknown[0]?.suggestion, 'city');
    assert.equal(unknown.filter((u) => u.suggestion !== undefined).length, 5);
  });
});

describe('checkQuery: queries made to be slow', () => {
  // How long such queries take is measured by test/bench/query.ts.
  const thrown = (query: string) => {
    try {
      checkQuery(query, 'properties', { strict: true });
    } catch (error) {
      return error;
    }
    assert.fail('expected a QueryError');
  };

  test('thousands of unknown fields: the first is named at once, with its suggestion', () => {
    // Every one was measured against every known field for a suggestion only the first gets.
    const query = Array.from({ length: 9000 }, (_, i) => `citx${i}:x`).join(' ');
    const error = thrown(query);
    assert.ok(error instanceof QueryError);
    assert.equal(error.code, 'SLUICE_QUERY_FIELD');
    assert.equal(
      error.message,
      "field 'citx0' does not exist in the property schema; did you mean 'city'?",
    );
  });

  test('a field name of the longest a query allows is unknown at once, with no suggestion', () => {
    // No known name is near it, but finding that out cost its length times each one's.
    const name = 'ab.'.repeat(33_000).slice(0, -1);
    const error = thrown(`${name}:x`);
    assert.ok(error instanceof QueryError);
    assert.equal(error.message, `field '${name}' does not exist in the property schema`);
  });

  test('a query over the length limit is refused before it is parsed', () => {
    const error = thrown('city:Austin '.repeat(1_000_000));
    assert.ok(error instanceof QueryError);
    assert.equal(error.code, 'SLUICE_QUERY_TOO_LONG');
    assert.match(error.message, /^query is 12,000,000 characters long; the limit is 100,000/);
  });
});
