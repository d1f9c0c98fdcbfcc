import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import type { DataType } from '../../../src/catalog.js';
import type { QueryNode } from '../../../src/query/ast.js';
import { addressKey, type CompileOptions, compileQuery } from '../../../src/query/evaluate.js';
import { parseQuery } from '../../../src/query/parse.js';

type Doc = Record<string, unknown> & { id: string };

const properties: Doc[] = [
  {
    id: 'p1',
    address: '123 Main Street',
    city: 'Austin',
    province: 'TX',
    postalCode: '78701',
    dateAdded: '2020-04-12T03:46:45Z',
    yearBuilt: 1998,
    numBedroom: 3,
    numBathroom: 2.5,
    prices: [
      {
        amountMin: 400000,
        amountMax: 450000,
        isSale: true,
        currency: 'USD',
        dateSeen: ['2020-04-12T03:46:45Z', '2021-01-05T10:00:00Z'],
      },
      { amountMin: 2500, amountMax: 2600, isSale: false, currency: 'USD' },
    ],
    people: [
      {
        name: 'Jane Doe',
        emails: ['jane@example.com'],
        phoneNumbers: [{ number: '5125550100', type: 'mobile' }],
      },
    ],
    features: [{ key: 'Pool', value: ['Yes', 'Heated'] }],
    keys: ['us/tx/austin/123mainstreet', 'KEY-ABC'],
  },
  {
    id: 'p2',
    address: '45 Elm Ave.',
    city: 'Dallas',
    province: 'TX',
    postalCode: '75201',
    dateAdded: '2019-12-31T23:59:59Z',
    yearBuilt: 2005,
    numBedroom: 4,
    prices: [{ amountMin: 900000, isSale: true }],
    keys: ['k2'],
  },
  {
    id: 'p3',
    address: '9 W. 57th St, Apt #5',
    city: 'New York',
    province: 'NY',
    dateAdded: '2021-06-01T12:00:00Z',
    prices: [],
    keys: [],
  },
  { id: 'p4', city: 'Austin Heights', address: '' },
];

const businesses: Doc[] = [
  {
    id: 'b1',
    name: "Joe's Diner",
    address: '500 North Lamar Boulevard',
    city: 'Austin',
    categories: ['Restaurants', 'Diners'],
    numEmployeesMin: 10,
    revenueMin: 250000.5,
    dateUpdated: '2023-02-01T00:00:00.000Z',
    reviews: [
      { rating: 5, date: '2022-03-01T00:00:00Z', username: 'amy' },
      { rating: 2, date: '2023-01-15T00:00:00Z', username: 'bob' },
    ],
  },
  {
    id: 'b2',
    name: 'Lamar Hardware',
    address: '12 S Congress Ave',
    city: 'Austin',
    categories: ['Hardware Stores'],
    numEmployeesMin: 60,
    reviews: [{ rating: 3.5, username: 'cy' }],
  },
];

const products: Doc[] = [
  {
    id: 'x1',
    name: 'Widget',
    prices: [
      { merchant: 'Walmart.com', amountMin: 9.99, isSale: false },
      { merchant: 'Target', amountMin: 7.5, isSale: true },
    ],
  },
];

const DATA: Record<DataType, Doc[]> = { properties, businesses, products, people: [] };

function ids(query: string | QueryNode, type: DataType = 'properties', options?: CompileOptions) {
  const ast = typeof query === 'string' ? parseQuery(query) : query;
  const match = compileQuery(ast, type, options);
  return DATA[type].filter((record) => match(record)).map((record) => record.id);
}

describe('compileQuery: combinators', () => {
  test('the empty query and *:* match every record', () => {
    assert.deepEqual(ids(''), ['p1', 'p2', 'p3', 'p4']);
    assert.deepEqual(ids('*:*'), ['p1', 'p2', 'p3', 'p4']);
  });

  test('AND, OR, implicit AND and precedence', () => {
    assert.deepEqual(ids('city:Austin OR city:Dallas'), ['p1', 'p2']);
    assert.deepEqual(ids('province:TX numBedroom:4'), ['p2']);
    assert.deepEqual(ids('province:TX AND numBedroom:4'), ['p2']);
    assert.deepEqual(ids('city:Dallas OR city:Austin AND numBedroom:4'), ['p2']);
    assert.deepEqual(ids('(city:Dallas OR city:Austin) AND numBedroom:3'), ['p1']);
    assert.deepEqual(ids('city:Austin OR city:Dallas OR city:"New York"'), ['p1', 'p2', 'p3']);
    assert.deepEqual(ids('province:TX AND numBedroom:[1 TO 9] AND yearBuilt:<2000'), ['p1']);
  });

  test('NOT or a leading - alone means every record but those matching', () => {
    assert.deepEqual(ids('NOT city:Austin'), ['p2', 'p3', 'p4']);
    assert.deepEqual(ids('-city:Austin'), ['p2', 'p3', 'p4']);
    assert.deepEqual(ids('-province:TX'), ['p3', 'p4']);
    assert.deepEqual(ids('province:TX -city:Dallas'), ['p1']);
    assert.deepEqual(ids('NOT NOT city:Dallas'), ['p2']);
    assert.deepEqual(ids('-*'), []);
  });

  test('field groups', () => {
    assert.deepEqual(ids('city:(Austin OR Dallas)'), ['p1', 'p2']);
    assert.deepEqual(ids('city:(Aus* -Austin)'), ['p4']);
  });

  test('an unknown field the records lack matches nothing, nor names found on every object', () => {
    assert.deepEqual(ids('citty:Austin'), []);
    assert.deepEqual(ids('constructor:*'), []);
    assert.deepEqual(ids('-citty:Austin'), ['p1', 'p2', 'p3', 'p4']);
  });
});

describe('compileQuery: fields no schema lists match on the data the records have', () => {
  // As a service answers on a field it has added and its client does not know yet.
  const homes: Doc[] = [
    {
      id: 'h1',
      solarPanels: true,
      roofArea: 120.5,
      roofAreaText: '95',
      roofDate: '2021-05-03T00:00:00Z',
      heatPump: 'Daikin Altherma',
      leases: [{ tenant: 'Acme', rent: 1200, signed: '2020-01-01T00:00:00Z' }],
      transactions: [{ buyerFirstName: 'Ann', ownerKind: 'individual' }],
    },
    {
      id: 'h2',
      solarPanels: false,
      roofArea: 80,
      roofAreaText: '150',
      heatPump: 'Mitsubishi',
      leases: [{ tenant: 'Globex', rent: 900 }],
      transactions: [{ buyerFirstName: 'Bo', ownerKind: 'company' }],
    },
    { id: 'h3', leases: { tenant: 'Initech' } },
  ];
  const match = (query: string) => {
    const predicate = compileQuery(parseQuery(query), 'properties');
    return homes.filter((home) => predicate(home)).map((home) => home.id);
  };

  test('each value compared as what it is: true/false, numbers, text, dates', () => {
    assert.deepEqual(match('solarPanels:true'), ['h1']);
    assert.deepEqual(match('solarPanels:FALSE'), ['h2']);
    assert.deepEqual(match('roofArea:[100 TO *]'), ['h1']);
    assert.deepEqual(match('roofArea:80'), ['h2']);
    assert.deepEqual(match('roofAreaText:>100'), ['h2']);
    assert.deepEqual(match('heatPump:daikin*'), ['h1']);
    assert.deepEqual(match('heatPump:"Mitsubishi"'), ['h2']);
    assert.deepEqual(match('roofDate:2021'), ['h1']);
    assert.deepEqual(match('roofDate:[2021-01-01 TO 2021-12-31]'), ['h1']);
  });

  test('presence, nested paths, and sub-fields of a known list of objects', () => {
    assert.deepEqual(match('solarPanels:*'), ['h1', 'h2']);
    assert.deepEqual(match('-solarPanels:*'), ['h3']);
    assert.deepEqual(match('leases:*'), ['h1', 'h2', 'h3']);
    assert.deepEqual(match('leases.tenant:Initech'), ['h3']);
    assert.deepEqual(match('leases.rent:<1000'), ['h2']);
    assert.deepEqual(match('leases.signed:*'), ['h1']);
    assert.deepEqual(match('transactions.ownerKind:individual'), ['h1']);
    assert.deepEqual(match('leases:Acme'), []);
  });

  test('names of an object prototype are never read', () => {
    assert.deepEqual(match('constructor:*'), []);
    assert.deepEqual(match('leases.constructor:*'), []);
    assert.deepEqual(match('toString:*'), []);
    assert.deepEqual(match('__proto__:*'), []);
  });

  test('a schema beyond the catalogue gives such a field its kind', () => {
    const schema = (path: string) =>
      path === 'roofAreaText' ? ({ kind: 'number' } as const) : undefined;
    const predicate = compileQuery(parseQuery('roofAreaText:[90 TO 100]'), 'properties', {
      schema,
    });
    assert.deepEqual(
      homes.filter((home) => predicate(home)).map((home) => home.id),
      ['h1'],
    );
  });
});

describe('compileQuery: text', () => {
  test('exact values compare the whole value, ignoring case, quoted or not', () => {
    assert.deepEqual(ids('city:austin'), ['p1']);
    assert.deepEqual(ids('city:AUSTIN'), ['p1']);
    assert.deepEqual(ids('city:"new york"'), ['p3']);
    assert.deepEqual(ids('city:New'), []);
    assert.deepEqual(ids('city:"Austin "'), []);
  });

  test('a trailing * matches a prefix, ignoring case', () => {
    assert.deepEqual(ids('city:aus*'), ['p1', 'p4']);
    assert.deepEqual(ids('city:NEW*'), ['p3']);
    assert.deepEqual(ids('postalCode:787*'), ['p1']);
    assert.deepEqual(ids('city:Austin\\ H*'), ['p4']);
  });

  test('field:* needs a present, non-empty value', () => {
    assert.deepEqual(ids('address:*'), ['p1', 'p2', 'p3']);
    assert.deepEqual(ids('yearBuilt:*'), ['p1', 'p2']);
    assert.deepEqual(ids('prices:*'), ['p1', 'p2']);
    assert.deepEqual(ids('keys:*'), ['p1', 'p2']);
    assert.deepEqual(ids('prices.currency:*'), ['p1']);
    assert.deepEqual(ids('-address:*'), ['p4']);
  });

  test('a list of strings matches when any element does', () => {
    assert.deepEqual(ids('keys:key-abc'), ['p1']);
    assert.deepEqual(ids('keys:us/tx*'), ['p1']);
    assert.deepEqual(ids('categories:restaurants', 'businesses'), ['b1']);
    assert.deepEqual(ids('categories:hard*', 'businesses'), ['b2']);
  });

  test('text ranges compare in code-unit order', () => {
    assert.deepEqual(ids('postalCode:[78700 TO 78799]'), ['p1']);
    assert.deepEqual(ids('city:{Austin TO Dallas]'), ['p2', 'p4']);
    assert.deepEqual(ids('city:[Austin TO Dallas}'), ['p1', 'p4']);
    assert.deepEqual(ids('city:>=New'), ['p3']);
    assert.deepEqual(ids('city:[* TO *]'), ['p1', 'p2', 'p3', 'p4']);
  });

  test('case folding handles non-ASCII letters', () => {
    const records = [{ id: 'm', city: 'MÜNCHEN', keys: ['İstanbul'] }];
    const match = (q: string) => compileQuery(parseQuery(q), 'properties')(records[0]!);
    assert.equal(match('city:münchen'), true);
    assert.equal(match('city:mün*'), true);
    assert.equal(match('city:munchen'), false);
    assert.equal(match('keys:"i̇stanbul"'), true);
    assert.equal(match('keys:i̇st*'), true);
  });

  test('bare values search every top-level text field and list of text', () => {
    assert.deepEqual(ids('austin'), ['p1']);
    assert.deepEqual(ids('Aus*'), ['p1', 'p4']);
    assert.deepEqual(ids('KEY-abc'), ['p1']);
    assert.deepEqual(ids('tx'), ['p1', 'p2']);
    assert.deepEqual(ids('"45 elm ave."'), ['p2']);
    assert.deepEqual(ids('diners', 'businesses'), ['b1']);
    // Numbers and nested fields are not searched by bare values.
    assert.deepEqual(ids('1998'), []);
    assert.deepEqual(ids('USD'), []);
  });
});

describe('compileQuery: numbers and true/false', () => {
  test('exact numbers compare numerically', () => {
    assert.deepEqual(ids('numBedroom:3'), ['p1']);
    assert.deepEqual(ids('numBathroom:2.50'), ['p1']);
    assert.deepEqual(ids('numBedroom:three'), []);
    assert.deepEqual(ids('revenueMin:250000.5', 'businesses'), ['b1']);
  });

  test('ranges and comparisons, inclusive and exclusive, with open ends', () => {
    assert.deepEqual(ids('numBedroom:[3 TO 4]'), ['p1', 'p2']);
    assert.deepEqual(ids('numBedroom:{3 TO 4]'), ['p2']);
    assert.deepEqual(ids('numBedroom:[3 TO 4}'), ['p1']);
    assert.deepEqual(ids('numBedroom:{3 TO 4}'), []);
    assert.deepEqual(ids('yearBuilt:[* TO 2000]'), ['p1']);
    assert.deepEqual(ids('yearBuilt:[2000 TO *]'), ['p2']);
    assert.deepEqual(ids('numBathroom:>2'), ['p1']);
    assert.deepEqual(ids('numBedroom:<4'), ['p1']);
    assert.deepEqual(ids('numBedroom:<=4'), ['p1', 'p2']);
    assert.deepEqual(ids('numBedroom:>=4'), ['p2']);
    assert.deepEqual(ids('numBedroom:[* TO *]'), ['p1', 'p2']);
    assert.deepEqual(ids('numEmployeesMin:[10 TO 50]', 'businesses'), ['b1']);
  });

  test('numbers stored as text still compare as numbers', () => {
    const match = compileQuery(parseQuery('numBedroom:[2 TO 10]'), 'properties');
    assert.equal(match({ numBedroom: '9' }), true);
    assert.equal(match({ numBedroom: '' }), false);
    assert.equal(match({ numBedroom: 'many' }), false);
  });

  test('a number prefix matches the written digits', () => {
    assert.deepEqual(ids('yearBuilt:19*'), ['p1']);
  });

  test('true/false fields', () => {
    assert.deepEqual(ids('prices.isSale:true'), ['p1', 'p2']);
    assert.deepEqual(ids('prices.isSale:FALSE'), ['p1']);
    assert.deepEqual(ids('prices.isSale:yes'), []);
    assert.deepEqual(ids('prices.isSale:[false TO true]'), []);
    assert.deepEqual(ids('prices.isSale:true', 'products'), ['x1']);
  });
});

describe('compileQuery: nested fields', () => {
  test('a path through arrays of objects matches when any element does', () => {
    assert.deepEqual(ids('prices.amountMin:>5000'), ['p1', 'p2']);
    assert.deepEqual(ids('prices.amountMin:<3000'), ['p1']);
    assert.deepEqual(ids('prices.amountMin:[100000 TO *]'), ['p1', 'p2']);
    assert.deepEqual(ids('prices.merchant:walmart*', 'products'), ['x1']);
    assert.deepEqual(ids('reviews.rating:>=4', 'businesses'), ['b1']);
    assert.deepEqual(ids('reviews.username:CY', 'businesses'), ['b2']);
  });

  test('each term is existential on its own, not tied to one element', () => {
    // p1's sale price and its rent are different elements of prices; both terms still match.
    assert.deepEqual(ids('prices.isSale:false AND prices.amountMin:>100000'), ['p1']);
  });

  test('two levels of arrays, and lists inside arrays of objects', () => {
    assert.deepEqual(ids('people.phoneNumbers.number:5125550100'), ['p1']);
    assert.deepEqual(ids('people.phoneNumbers.type:mob*'), ['p1']);
    assert.deepEqual(ids('people.emails:JANE@example.com'), ['p1']);
    assert.deepEqual(ids('features.value:heated'), ['p1']);
    assert.deepEqual(ids('features.key:pool AND -features.value:no'), ['p1']);
  });

  test('odd shapes along a path do not throw', () => {
    const match = compileQuery(parseQuery('prices.amountMin:>1'), 'properties');
    assert.equal(match({ prices: null }), false);
    assert.equal(match({ prices: 'n/a' }), false);
    assert.equal(match({ prices: [null, 7, { amountMin: 5 }] }), true);
    assert.equal(match({ prices: { amountMin: 5 } }), true);
  });
});

describe('compileQuery: dates', () => {
  test('bounds written as dates work against full timestamps', () => {
    assert.deepEqual(ids('dateAdded:[2020-01-01 TO *]'), ['p1', 'p3']);
    assert.deepEqual(ids('dateAdded:>=2020'), ['p1', 'p3']);
    assert.deepEqual(ids('dateAdded:[2020-04 TO 2020-04]'), ['p1']);
    assert.deepEqual(ids('dateAdded:[2019-06-01T00:00:00Z TO 2020-06-01T00:00:00.000Z]'), [
      'p1',
      'p2',
    ]);
  });

  test('a bound covers the whole period it names', () => {
    // p2 was added on the last second of 2019-12-31.
    assert.deepEqual(ids('dateAdded:[* TO 2019-12-31]'), ['p2']);
    assert.deepEqual(ids('dateAdded:<=2019-12-31'), ['p2']);
    assert.deepEqual(ids('dateAdded:<2019-12-31'), []);
    assert.deepEqual(ids('dateAdded:>2019-12-31'), ['p1', 'p3']);
    assert.deepEqual(ids('dateAdded:{2019 TO 2021}'), ['p1']);
    assert.deepEqual(ids('dateAdded:{2019-12-31T23:59 TO *]'), ['p1', 'p3']);
  });

  test('an exact date matches at its precision', () => {
    assert.deepEqual(ids('dateAdded:2020-04-12'), ['p1']);
    assert.deepEqual(ids('dateAdded:2020-04'), ['p1']);
    assert.deepEqual(ids('dateAdded:2021'), ['p3']);
    assert.deepEqual(ids('dateAdded:"2020-04-12T03:46:45Z"'), ['p1']);
    assert.deepEqual(ids('dateAdded:"2020-04-12T03:46:46Z"'), []);
  });

  test('time zones and fractions', () => {
    // 2020-04-11T23:00-05:00 is 2020-04-12T04:00Z, after p1's 03:46:45Z.
    assert.deepEqual(ids('dateAdded:[2020-04-11T23:00:00-05:00 TO *]'), ['p3']);
    assert.deepEqual(ids('dateAdded:[2020-04-11T22:00:00-0500 TO *]'), ['p1', 'p3']);
    assert.deepEqual(ids('dateAdded:[2020-04-12T05:46:45+02:00 TO 2020-04-12T05:46:45+02:00]'), [
      'p1',
    ]);
    assert.deepEqual(ids('dateUpdated:2023-02-01T00:00:00.0Z', 'businesses'), ['b1']);
    assert.deepEqual(ids('dateUpdated:{* TO 2023-02-01T00:00:00.001Z}', 'businesses'), ['b1']);
  });

  test('lists of dates and dates in arrays of objects', () => {
    assert.deepEqual(ids('prices.dateSeen:[2021-01-01 TO 2021-12-31]'), ['p1']);
    assert.deepEqual(ids('reviews.date:>=2023', 'businesses'), ['b1']);
  });

  test('a date prefix matches the written text; a bound that is no date compares as text', () => {
    assert.deepEqual(ids('dateAdded:2020*'), ['p1']);
    assert.deepEqual(ids('dateAdded:[2020-04-12T TO *]'), ['p1', 'p3']);
  });
});

describe('compileQuery: addresses', () => {
  test('with matching on (the default), case, punctuation, spacing and suffixes do not matter', () => {
    assert.deepEqual(ids('address:"123 main st"'), ['p1']);
    assert.deepEqual(ids('address:"123  MAIN   STREET."'), ['p1']);
    assert.deepEqual(ids('address:"45 elm avenue"'), ['p2']);
    assert.deepEqual(ids('address:"9 West 57th Street, Apt 5"'), ['p3']);
    assert.deepEqual(
      ids('address:"9 W 57th St Apt. #5"', 'properties', { addressMatching: 'on' }),
      ['p3'],
    );
    assert.deepEqual(ids('address:"500 N Lamar Blvd"', 'businesses'), ['b1']);
    assert.deepEqual(ids('address:"12 south congress avenue"', 'businesses'), ['b2']);
  });

  test('with matching on, words still have to be the same words', () => {
    assert.deepEqual(ids('address:"123 Main"'), []);
    assert.deepEqual(ids('address:"123 Main St Apt 1"'), []);
    assert.deepEqual(ids('address:"124 Main St"'), []);
    assert.deepEqual(ids('address:"45 Elm Rd"'), []);
  });

  test('address prefixes compare normalized forms too', () => {
    assert.deepEqual(ids('address:123\\ main*'), ['p1']);
    assert.deepEqual(ids('address:123\\ Main\\ St*'), ['p1']);
    assert.deepEqual(ids('address:9\\ west*'), ['p3']);
    assert.deepEqual(ids('address:4*'), ['p2']);
  });

  test('with matching off, the address must be exactly as stored', () => {
    const off = { addressMatching: 'off' } as const;
    assert.deepEqual(ids('address:"123 Main Street"', 'properties', off), ['p1']);
    assert.deepEqual(ids('address:"123 main street"', 'properties', off), []);
    assert.deepEqual(ids('address:"123 Main St"', 'properties', off), []);
    assert.deepEqual(ids('address:"45 Elm Ave."', 'properties', off), ['p2']);
    assert.deepEqual(ids('address:"45 Elm Ave"', 'properties', off), []);
    assert.deepEqual(ids('address:123*', 'properties', off), ['p1']);
    assert.deepEqual(ids('address:"500 North Lamar Boulevard"', 'businesses', off), ['b1']);
  });

  test('other fields are not normalized like addresses', () => {
    assert.deepEqual(ids('"123 main st"'), []);
    assert.deepEqual(ids('people.name:"jane doe."'), []);
  });
});

describe('addressKey', () => {
  test('normalizes case, punctuation, spacing and common abbreviations', () => {
    assert.equal(addressKey('123 Main Street, Apt. #4'), '123 main st apt 4');
    assert.equal(addressKey('  9   W.  57th   St '), '9 w 57th st');
    assert.equal(addressKey('500 North Lamar Boulevard'), '500 n lamar blvd');
    assert.equal(
      addressKey('1 South Road East Drive Lane Court Place Avenue West'),
      '1 s rd e dr ln ct pl ave w',
    );
    assert.equal(addressKey("O'Brien Ln - Unit 7"), 'obrien ln unit 7');
    assert.equal(addressKey('Calle Niño 5'), 'calle niño 5');
    assert.equal(addressKey(''), '');
    assert.equal(addressKey('---'), '');
  });

  test('the in-place matchers agree with comparing keys', () => {
    const samples = [
      '123 Main Street',
      '123 MAIN ST.',
      '123 main st apt 4',
      '123 Main St, Apt. #4',
      '123 Main Str',
      '123 Mainstreet',
      'Main Street 123',
      '9 W. 57th St',
      '9 West 57th Street',
      '9 W 57 St',
      '500 North Lamar Boulevard',
      '500 N. Lamar Blvd.',
      '500 N Lamar',
      'Calle Niño 5',
      'CALLE NIÑO 5',
      'Calle Nino 5',
      'İstiklal Caddesi 5',
      'i̇stiklal caddesi 5',
      '1\u00a0Main\u00a0St',
      '1 Main St',
      ' - ',
      '',
      'st',
      'street',
      's',
      'south',
      'str',
    ];
    const prefixes = [
      '123',
      '123 main',
      '123 main s',
      '123 main st',
      '123 main str',
      'mai',
      's',
      'so',
      'st',
      '9 w',
      '9 west 5',
      'calle ni',
      '1 ma',
      '',
    ];
    for (const query of samples) {
      const exact = compileQuery(term({ kind: 'exact', text: query, quoted: true }), 'properties');
      for (const address of samples) {
        assert.equal(
          exact({ address }),
          addressKey(address) === addressKey(query),
          `address:${JSON.stringify(query)} against ${JSON.stringify(address)}`,
        );
      }
    }
    for (const prefix of prefixes) {
      const starts = compileQuery(term({ kind: 'prefix', prefix }), 'properties');
      for (const address of samples) {
        assert.equal(
          starts({ address }),
          addressKey(address).startsWith(addressKey(prefix)),
          `address:${JSON.stringify(prefix)}* against ${JSON.stringify(address)}`,
        );
      }
    }
  });
});

function term(
  value: { kind: 'exact'; text: string; quoted: boolean } | { kind: 'prefix'; prefix: string },
): QueryNode {
  const span = { start: 0, end: 0 };
  return { type: 'term', field: 'address', fieldSpan: span, value, valueSpan: span, span };
}
