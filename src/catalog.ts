/**
 * The service's data types and the fields of their records: the core fields most records carry
 * (as listed in shared/wire-notes.md), and the further fields the service's schema pages
 * document. One catalogue serves the query linter (a field it does not know is a warning, with
 * the nearest known name; `strict_fields` makes it an error), the emulator (what it generates
 * and what views may name) and the normalizer (each field's kind and column type). The service
 * adds fields over time: one this catalogue lacks still flows through, typed as its data is.
 */

export const DATA_TYPES = ['properties', 'businesses', 'products', 'people'] as const;
export type DataType = (typeof DATA_TYPES)[number];

/** Credit buckets of an account; a data type spends from the bucket of the same meaning. */
export const CREDIT_TYPES = ['business', 'people', 'product', 'property'] as const;
export type CreditType = (typeof CREDIT_TYPES)[number];

export const CREDIT_TYPE_OF: Record<DataType, CreditType> = {
  properties: 'property',
  businesses: 'business',
  products: 'product',
  people: 'people',
};

export type ScalarKind = 'string' | 'number' | 'integer' | 'boolean' | 'date';

export type FieldDef =
  | { kind: ScalarKind }
  | { kind: 'list'; of: ScalarKind }
  | { kind: 'objects'; fields: Record<string, FieldDef> };

export type FieldMap = Record<string, FieldDef>;

const s = { kind: 'string' } as const;
const num = { kind: 'number' } as const;
const int = { kind: 'integer' } as const;
const bool = { kind: 'boolean' } as const;
const date = { kind: 'date' } as const;
const strings = { kind: 'list', of: 'string' } as const;
const dates = { kind: 'list', of: 'date' } as const;
const objects = (fields: FieldMap): FieldDef => ({ kind: 'objects', fields });

const features = objects({ key: s, value: strings });

const phoneNumbers = objects({ number: s, carrier: s, type: s, lastDateSeen: date });

/**
 * Fields of a property's `people[]` entries. The last five are present only on the owner entry
 * of an autotrace result, where the matched person's record is merged in.
 */
const propertyPeople = objects({
  name: s,
  title: s,
  dateSeen: date,
  firstName: s,
  lastName: s,
  emails: strings,
  phoneNumbers,
  keys: strings,
  people_keys: strings,
});

/**
 * The fields most records of a type carry: a table is made with these columns before any record
 * arrives (when no view names its fields), and the emulator's records hold them. The other
 * fields of FIELDS join a table when the data brings them.
 */
export const CORE_FIELDS: Record<DataType, FieldMap> = {
  properties: {
    id: s,
    address: s,
    city: s,
    province: s,
    postalCode: s,
    country: s,
    county: s,
    countyFIPS: s,
    latitude: s,
    longitude: s,
    geoLocation: s,
    dateAdded: date,
    dateUpdated: date,
    propertyType: s,
    currentOwnerType: s,
    yearBuilt: int,
    numBedroom: int,
    numBathroom: num,
    floorSizeValue: num,
    floorSizeUnit: s,
    lotSizeValue: num,
    zoning: s,
    mostRecentStatus: s,
    mostRecentStatusDate: date,
    mostRecentPriceAmount: num,
    mostRecentPriceDate: date,
    mostRecentOwnerFirstName: s,
    mostRecentOwnerLastName: s,
    mostRecentOwnerPeopleKey: s,
    mostRecentBrokerAgent: s,
    mostRecentBrokerCompany: s,
    prices: objects({
      amountMax: num,
      amountMin: num,
      currency: s,
      date,
      dateSeen: dates,
      isSale: bool,
      isSold: bool,
      pricePerSquareFoot: num,
      sourceURLs: strings,
      type: s,
    }),
    brokers: objects({
      agent: s,
      company: s,
      emails: strings,
      phones: strings,
      licenseNumber: s,
      dateSeen: date,
      people_key: s,
    }),
    statuses: objects({ type: s, date, dateSeen: dates, isUnderContract: bool }),
    transactions: objects({
      saleDate: date,
      price: num,
      sellerFirstName: s,
      sellerLastName: s,
      buyerFirstName: s,
      buyerLastName: s,
      lenderName: s,
      loanAmount: num,
      type: s,
    }),
    features,
    descriptions: objects({ value: s, dateSeen: date, sourceURLs: strings }),
    assessedValues: objects({
      totalAmount: num,
      landAmount: num,
      improvementsAmount: num,
      year: int,
    }),
    propertyTaxes: objects({ amount: num, currency: s, year: int }),
    people: propertyPeople,
    appliances: strings,
    parking: strings,
    imageURLs: strings,
    keys: strings,
    sourceURLs: strings,
  },
  businesses: {
    id: s,
    name: s,
    address: s,
    city: s,
    province: s,
    postalCode: s,
    country: s,
    latitude: s,
    longitude: s,
    geoLocation: s,
    categories: strings,
    primaryCategories: s,
    phones: strings,
    websites: strings,
    emails: strings,
    keys: strings,
    sourceURLs: strings,
    numEmployeesMin: int,
    numEmployeesMax: int,
    revenueMin: num,
    revenueMax: num,
    sic: s,
    yearOpened: int,
    dateAdded: date,
    dateUpdated: date,
    reviews: objects({ date, rating: num, text: s, title: s, username: s }),
    hours: objects({ day: s, hour: s }),
    features,
  },
  products: {
    id: s,
    name: s,
    brand: s,
    manufacturer: s,
    manufacturerNumber: s,
    categories: strings,
    primaryCategories: s,
    upc: strings,
    ean: strings,
    asins: s,
    colors: strings,
    sizes: strings,
    weight: s,
    imageURLs: strings,
    keys: strings,
    sourceURLs: strings,
    dateAdded: date,
    dateUpdated: date,
    mostRecentPriceAmount: num,
    mostRecentPriceDate: date,
    prices: objects({
      amountMax: num,
      amountMin: num,
      currency: s,
      condition: s,
      isSale: bool,
      merchant: s,
      dateSeen: dates,
    }),
    merchants: objects({ name: s, dateSeen: date }),
  },
  people: {
    id: s,
    firstName: s,
    lastName: s,
    address: s,
    city: s,
    province: s,
    postalCode: s,
    country: s,
    emails: strings,
    phones: strings,
    keys: strings,
    businessName: s,
    jobTitle: s,
    dateAdded: date,
    dateUpdated: date,
    phoneNumbers,
  },
};

/** A field seen at a moment, with where: the shape of many of the service's lists of values. */
const sighting = (value: FieldDef) => objects({ dateSeen: dates, sourceURLs: strings, value });

/** Reviews as the property, business and product schemas share them. */
const REVIEW_FIELDS: FieldMap = {
  date,
  dateAdded: date,
  dateSeen: dates,
  doRecommend: bool,
  rating: num,
  sourceURLs: strings,
  text: s,
  title: s,
  userCity: s,
  userProvince: s,
  username: s,
};
const reviews = objects(REVIEW_FIELDS);

/**
 * The fields the service's schema pages document beyond the core ones, with their kinds: text
 * and keyword are strings, float a number, nested a list of objects, and a value shown as a
 * list is one. An entry for a core field of objects adds the sub-fields the pages list for it.
 */
const DOCUMENTED: Record<DataType, FieldMap> = {
  properties: {
    absenteeOwner: objects({ absent: bool, firstDateSeen: date, lastDateSeen: date }),
    architecturalStyles: strings,
    availableDates: objects({
      dateSeen: dates,
      endDate: date,
      sourceURLs: strings,
      startDate: date,
    }),
    brandTenant: s,
    brokers: objects({
      firstName: s,
      lastName: s,
      licenseType: s,
      sourceURLs: strings,
      websites: strings,
    }),
    buildingName: s,
    deposits: objects({ amount: num, currency: s, dateSeen: dates, sourceURLs: strings }),
    domains: strings,
    fees: objects({
      amountMax: num,
      amountMin: num,
      currency: s,
      dateSeen: dates,
      sourceURLs: strings,
      type: s,
    }),
    languagesSpoken: strings,
    leasingTerms: sighting(s),
    legalDescription: s,
    listingName: s,
    lotSizeUnit: s,
    managedBy: sighting(s),
    mlsNumber: s,
    mostRecentBrokerDateSeen: date,
    mostRecentBrokerEmails: strings,
    mostRecentBrokerPhones: strings,
    mostRecentBrokerWebsites: strings,
    mostRecentPriceDomain: s,
    mostRecentPriceFirstDateSeen: date,
    mostRecentPriceSourceURL: s,
    mostRecentRentalPriceAmount: num,
    mostRecentRentalPriceDate: date,
    mostRecentRentalPricePeriod: s,
    mostRecentStatusFirstDateSeen: date,
    neighborhoods: strings,
    numFloor: int,
    numPeople: int,
    numRoom: int,
    numUnit: int,
    paymentTypes: strings,
    petPolicy: s,
    phones: strings,
    prices: objects({ availability: s, comment: s, period: s }),
    reviews,
    rules: strings,
    subdivision: s,
    taxID: s,
    title: s,
    transactions: objects({ ownerType: s }),
    websiteIDs: strings,
  },
  businesses: {
    careerPageURL: s,
    claimed: strings,
    cuisines: strings,
    descriptions: objects({ dateSeen: date, sourceURLs: strings, value: s }),
    domains: strings,
    facebookPageURL: s,
    hours: objects({ dept: s }),
    imageURLs: strings,
    isClosed: bool,
    languagesSpoken: strings,
    menuPageURL: s,
    menus: objects({
      amountMax: num,
      amountMin: num,
      category: s,
      currency: s,
      dateSeen: dates,
      description: s,
      name: s,
      sourceURLs: strings,
    }),
    neighborhoods: strings,
    numRoom: int,
    paymentTypes: strings,
    people: objects({ dateSeen: date, email: s, name: s, phone: s, title: s }),
    priceRangeCurrency: s,
    priceRangeMin: num,
    priceRangeMax: num,
    revenueCurrency: s,
    reviews,
    twitter: s,
    websiteIDs: strings,
    yearIncorporated: int,
  },
  products: {
    canonicalBrand: s,
    count: s,
    descriptions: objects({ dateSeen: date, sourceURLs: strings, value: s }),
    dimension: s,
    domains: strings,
    features,
    financingAndLeasing: objects({
      additionalDetails: strings,
      apr: num,
      currency: s,
      dateSeen: dates,
      sourceURLs: strings,
    }),
    flavors: strings,
    isbn: s,
    prices: objects({
      availability: s,
      color: s,
      count: s,
      dateAdded: date,
      flavor: s,
      offer: s,
      returnPolicy: s,
      shipping: s,
      size: s,
      sourceURLs: strings,
    }),
    reviews: objects({ ...REVIEW_FIELDS, didPurchase: bool, id: s, numHelpful: int }),
    secondaryCategories: strings,
    taxonomy: strings,
    ...taxonomyLevels(9),
    vin: s,
    websiteIDs: strings,
  },
  people: {
    jobFunction: s,
    jobLevel: s,
    sourceURLs: strings,
  },
};

/** `taxonomyLevel1` to `taxonomyLevelN`: a product's classification, one level each. */
function taxonomyLevels(levels: number): FieldMap {
  return Object.fromEntries(
    Array.from({ length: levels }, (_, i) => [`taxonomyLevel${i + 1}`, strings]),
  );
}

/**
 * Two field maps as one: the first's fields keep their kinds and order, a list of objects in
 * both gains the second's sub-fields, and the second's other fields follow.
 */
function mergeFields(first: FieldMap, second: FieldMap): FieldMap {
  const out: FieldMap = { ...first };
  for (const [name, def] of Object.entries(second)) {
    const have = Object.hasOwn(out, name) ? out[name] : undefined;
    if (have === undefined) out[name] = def;
    else if (have.kind === 'objects' && def.kind === 'objects')
      out[name] = objects(mergeFields(have.fields, def.fields));
  }
  return out;
}

/** Every field the catalogue knows of each data type: the core ones first, then the others. */
export const FIELDS: Record<DataType, FieldMap> = {
  properties: mergeFields(CORE_FIELDS.properties, DOCUMENTED.properties),
  businesses: mergeFields(CORE_FIELDS.businesses, DOCUMENTED.businesses),
  products: mergeFields(CORE_FIELDS.products, DOCUMENTED.products),
  people: mergeFields(CORE_FIELDS.people, DOCUMENTED.people),
};

/** A view the service makes for everyone: usable in searches and downloads, readable, fixed. */
export interface PremadeView {
  type: DataType;
  /** The fields it selects, as a created view names them. */
  fields: readonly string[];
}

/**
 * What an `_all` view lists: the core fields. A table made for one starts with their columns,
 * and the record's other fields join it as they come, as for a job without a view.
 */
const everyField = (type: DataType): readonly string[] => Object.keys(CORE_FIELDS[type]);
const except = (type: DataType, ...left: string[]) =>
  everyField(type).filter((field) => !left.includes(field));

const PROPERTY_PLACE = ['id', 'address', 'city', 'province', 'postalCode', 'country'];
const BUSINESS_PLACE = ['id', 'name', 'address', 'city', 'province', 'postalCode', 'country'];
const PRODUCT_NAME = ['id', 'name', 'brand', 'manufacturer', 'categories', 'primaryCategories'];
const DATES = ['dateAdded', 'dateUpdated'];
/** The basic business view, as v4 (`business_basic`) and v3 (`businesses_basic`) name it. */
const BUSINESS_BASIC = [
  ...BUSINESS_PLACE,
  'latitude',
  'longitude',
  'categories',
  'primaryCategories',
  'phones',
  'websites',
  ...DATES,
];

/**
 * The pre-made views, by the names the service's guides and its customers' public clients use:
 * v4 names are singular (`property_flat_prices`), v3 names plural (`products_pricesFlat`); the
 * service has no pre-made people view that they show. A `flat` view selects the nested field it
 * is named for (menus, prices, reviews) beside the fields that place the record. The emulator
 * serves them (a view's fields decide a file's columns); `validate` accepts exactly these names
 * without a `views:` entry.
 */
export const PREMADE_VIEWS: Readonly<Record<string, PremadeView>> = {
  // v4
  property_flat_prices: {
    type: 'properties',
    fields: [
      ...PROPERTY_PLACE,
      'propertyType',
      'mostRecentPriceAmount',
      'mostRecentPriceDate',
      'prices',
      ...DATES,
    ],
  },
  property_flat_reviews: {
    type: 'properties',
    fields: [...PROPERTY_PLACE, 'propertyType', 'reviews', 'descriptions', ...DATES],
  },
  property_preview: {
    type: 'properties',
    fields: [
      ...PROPERTY_PLACE,
      'propertyType',
      'numBedroom',
      'numBathroom',
      'floorSizeValue',
      'mostRecentStatus',
      'mostRecentPriceAmount',
    ],
  },
  property_sourceURLs: {
    type: 'properties',
    fields: [...PROPERTY_PLACE, 'sourceURLs', ...DATES],
  },
  business_all_nested: { type: 'businesses', fields: everyField('businesses') },
  business_basic: {
    type: 'businesses',
    fields: BUSINESS_BASIC,
  },
  business_flat_menus: {
    type: 'businesses',
    fields: [...BUSINESS_PLACE, 'categories', 'primaryCategories', 'menus', ...DATES],
  },
  business_flat_reviews: {
    type: 'businesses',
    fields: [...BUSINESS_PLACE, 'reviews', ...DATES],
  },
  business_no_reviews: { type: 'businesses', fields: except('businesses', 'reviews') },
  product_all_nested: { type: 'products', fields: everyField('products') },
  product_flat_prices: {
    type: 'products',
    fields: [
      'id',
      'name',
      'brand',
      'prices',
      'mostRecentPriceAmount',
      'mostRecentPriceDate',
      ...DATES,
    ],
  },
  product_flat_reviews: {
    type: 'products',
    fields: [...PRODUCT_NAME, 'reviews', 'merchants', ...DATES],
  },
  // v3
  properties_all: { type: 'properties', fields: everyField('properties') },
  properties_all_nested: { type: 'properties', fields: everyField('properties') },
  businesses_all: { type: 'businesses', fields: everyField('businesses') },
  businesses_all_nested: { type: 'businesses', fields: everyField('businesses') },
  businesses_all_nested_no_reviews: {
    type: 'businesses',
    fields: except('businesses', 'reviews'),
  },
  businesses_all_menusFlat: {
    type: 'businesses',
    fields: [...BUSINESS_PLACE, 'categories', 'primaryCategories', 'menus', ...DATES],
  },
  businesses_basic: {
    type: 'businesses',
    fields: BUSINESS_BASIC,
  },
  products_all: { type: 'products', fields: everyField('products') },
  products_basicFields: {
    type: 'products',
    fields: [
      'id',
      'name',
      'brand',
      'manufacturer',
      'categories',
      'primaryCategories',
      'upc',
      'ean',
    ],
  },
  products_pricesFlat: {
    type: 'products',
    fields: ['id', 'name', 'brand', 'prices', 'mostRecentPriceAmount', 'mostRecentPriceDate'],
  },
  products_reviewsFlat: {
    type: 'products',
    fields: [...PRODUCT_NAME, 'reviews', 'merchants', ...DATES],
  },
  products_keysSourceURLs: { type: 'products', fields: ['id', 'keys', 'sourceURLs'] },
  products_multiValuedFieldsNested: { type: 'products', fields: everyField('products') },
};

/** The pre-made view of that name, or undefined (never a property of Object.prototype). */
export function premadeView(name: string): PremadeView | undefined {
  return Object.hasOwn(PREMADE_VIEWS, name) ? PREMADE_VIEWS[name] : undefined;
}

/** Singular name of a data type as the service's messages use it ("business schema"). */
export const SCHEMA_NAME: Record<DataType, string> = {
  properties: 'property',
  businesses: 'business',
  products: 'product',
  people: 'people',
};

export function isDataType(value: unknown): value is DataType {
  return typeof value === 'string' && (DATA_TYPES as readonly string[]).includes(value);
}

/**
 * The definition of a dotted field path (`prices.amountMin`) in a data type, or undefined.
 * Paths descend through arrays of objects; a path into a scalar or a list is unknown.
 */
export function resolveField(type: DataType, path: string): FieldDef | undefined {
  let fields: FieldMap | undefined = FIELDS[type];
  let def: FieldDef | undefined;
  for (const part of path.split('.')) {
    if (!fields || !Object.hasOwn(fields, part)) return undefined;
    def = fields[part];
    fields = def?.kind === 'objects' ? def.fields : undefined;
  }
  return def;
}

/** Every dotted path of a data type, parents before children (for suggestions and listings). */
export function fieldPaths(type: DataType): string[] {
  const out: string[] = [];
  const walk = (fields: FieldMap, prefix: string) => {
    for (const [name, def] of Object.entries(fields)) {
      out.push(prefix + name);
      if (def.kind === 'objects') walk(def.fields, `${prefix}${name}.`);
    }
  };
  walk(FIELDS[type], '');
  return out;
}

/** A field name the catalogue does not list, with the nearest name it does, when one is near. */
export interface UnknownField {
  field: string;
  suggestion?: string | undefined;
}

/** Fields named in a warning; the rest are counted. */
const NAMED = 5;

/**
 * What to say of names the catalogue does not list: `field 'cty' is not in sluice's catalogue
 * of properties (did you mean 'city'?): <then>`, or `fields 'a', 'b' (did you mean 'c'?) are
 * ...`, naming at most five. `of` says whose catalogue: a data type, or `any data type`.
 */
export function unknownFieldsWarning(
  fields: readonly UnknownField[],
  of: string,
  then: string,
): string {
  const name = (f: UnknownField) => `'${f.field}'`;
  const guess = (f: UnknownField) => (f.suggestion ? ` (did you mean '${f.suggestion}'?)` : '');
  const catalogue = `sluice's catalogue of ${of}`;
  if (fields.length === 1) {
    const [only] = fields as [UnknownField];
    return `field ${name(only)} is not in ${catalogue}${guess(only)}: ${then}`;
  }
  const named = fields.slice(0, NAMED).map((f) => `${name(f)}${guess(f)}`);
  const more = fields.length > NAMED ? ` and ${fields.length - NAMED} more` : '';
  return `fields ${named.join(', ')}${more} are not in ${catalogue}: ${then}`;
}

/** The closest known name to `input` within a small edit distance, for "did you mean" hints. */
export function closest(input: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(input.length / 3)) + 1;
  const lower = input.toLowerCase();
  for (const candidate of candidates) {
    const d = editDistance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}
