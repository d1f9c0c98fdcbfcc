// Longer than most files on purpose: the synthetic records of every data type are generated here
// together, so that their links (owners, people keys, brokers) stay consistent in one place.
import type { DataType } from '../../catalog.js';
import * as P from './pools.js';

export interface DatasetOptions {
  seed: number;
  scale: number;
}

type Json = Record<string, unknown>;

const BASE_SIZES: Record<DataType, number> = {
  properties: 20_000,
  businesses: 10_000,
  products: 5_000,
  people: 15_000,
};
const TYPE_SALT: Record<DataType, number> = { properties: 0x1b873593, businesses: 0x2c1b3c6d, products: 0x297a2d39, people: 0x5bd1e995 };

/** Share of people who own property; the rest only appear in people searches. */
const OWNING_PEOPLE = 0.4;
const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const EPOCH_2015 = 1_420_070_400;
const SPAN_10Y = 10 * 365 * 86_400;
/**
 * The latest dateUpdated of a record as generated (2025-10-25): before any emulator starts, so
 * every change the emulator's clock brings (see world/world.ts) is newer than all of them.
 */
const UPDATED_MAX = EPOCH_2015 + SPAN_10Y + 86_400 * 300;

/**
 * A record's dateUpdated `delta` seconds after it was added, folded back below UPDATED_MAX
 * rather than cut at it, so that no two records share a second more often than chance says.
 */
function updatedAfter(added: number, delta: number): number {
  const at = added + delta;
  if (at <= UPDATED_MAX) return at;
  return UPDATED_MAX - ((at - UPDATED_MAX) % (UPDATED_MAX - added + 1));
}
/**
 * Owners who are not people of the data set take the people indices just past it (ownerOf), so
 * records that appear later start this far past the base range, where no index is taken.
 */
const NEW_INDEX_GAP = 1_000_000;

/** 32-bit integer hash (murmur3 finalizer) of a few numbers. */
export function mix(a: number, b: number, c = 0): number {
  let h = Math.imul(a ^ 0x85ebca6b, 0xcc9e2d51) ^ Math.imul(b + 0x6b43a9b5, 0x1b873593) ^ Math.imul(c + 0x3c6ef372, 0x27d4eb2f);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * A small, fast PRNG (mulberry32) seeded per record, so every record can be built on its own,
 * in any order, and is the same for the same seed.
 */
export class Rng {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** A few distinct items of a pool, in pool order. */
  some<T>(items: readonly T[], min: number, max: number): T[] {
    const n = this.int(min, max);
    const start = this.int(0, items.length - 1);
    const out: T[] = [];
    for (let i = 0; i < n && i < items.length; i++) out.push(items[(start + i * 3) % items.length]!);
    return out;
  }
  /** Seconds since the epoch, in 2015..2024. */
  time(): number {
    return EPOCH_2015 + Math.floor(this.next() * SPAN_10Y);
  }
}

export function iso(seconds: number): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}Z`;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

// Multiplying by an odd constant is a bijection on 32-bit integers; its inverse decodes keys.
const KEY_MULTIPLIER = 0x9e3779b1;
const KEY_INVERSE = (() => {
  let inv = KEY_MULTIPLIER;
  for (let i = 0; i < 5; i++) inv = Math.imul(inv, 2 - Math.imul(KEY_MULTIPLIER, inv));
  return inv >>> 0;
})();

const CITY_TABLE: number[] = P.CITIES.flatMap((city, i) => Array.from({ length: city.weight }, () => i));

export interface Owner {
  /** Undefined when the people key matches no person (autotrace finds no match). */
  personIndex: number | undefined;
  peopleKey: string;
  firstName: string;
  lastName: string;
}

/**
 * Deterministic synthetic records of the four data types, built lazily from (seed, type, index):
 * a Dataset costs nothing to create, whatever its scale, and any record can be read at any time.
 */
export class Dataset {
  readonly seed: number;
  readonly #counts: Record<DataType, number>;
  readonly #keyMask: number;

  constructor(options: DatasetOptions) {
    this.seed = options.seed >>> 0;
    const n = (type: DataType) => Math.max(1, Math.round(BASE_SIZES[type] * options.scale));
    this.#counts = { properties: n('properties'), businesses: n('businesses'), products: n('products'), people: n('people') };
    this.#keyMask = mix(this.seed, 0x5eed);
  }

  /** Records of the base range, the records the emulator starts with. */
  count(type: DataType): number {
    return this.#counts[type];
  }

  /** The first index of the records that appear later; the world decides when each does. */
  firstNewIndex(type: DataType): number {
    return this.#counts[type] + NEW_INDEX_GAP;
  }

  record(type: DataType, index: number): Json {
    const later = index >= this.firstNewIndex(type) && index <= 0xffffffff;
    if (!Number.isInteger(index) || index < 0 || (index >= this.#counts[type] && !later)) {
      throw new RangeError(`no ${type} record ${index}`);
    }
    const rng = new Rng(mix(this.seed, TYPE_SALT[type], index));
    switch (type) {
      case 'properties':
        return this.#property(index, rng);
      case 'businesses':
        return this.#business(index, rng);
      case 'products':
        return this.#product(index, rng);
      case 'people':
        return this.#person(index, rng);
    }
  }

  /** The people key of person `index`: `first/last/<hash>`, the hash encoding the index. */
  peopleKey(personIndex: number): string {
    const { first, last } = this.#names(personIndex);
    const code = (Math.imul((personIndex ^ this.#keyMask) >>> 0, KEY_MULTIPLIER) >>> 0).toString(16).padStart(8, '0');
    return `${first.toLowerCase()}/${last.toLowerCase()}/${code}`;
  }

  personIndexByKey(key: string): number | undefined {
    const slash = key.lastIndexOf('/');
    const code = key.slice(slash + 1);
    if (slash < 0 || !/^[0-9a-f]{8}$/.test(code)) return undefined;
    const index = ((Math.imul(Number.parseInt(code, 16), KEY_INVERSE) >>> 0) ^ this.#keyMask) >>> 0;
    if (index >= this.#counts.people || this.peopleKey(index) !== key) return undefined;
    return index;
  }

  ownerOf(propertyIndex: number): Owner | undefined {
    const h = mix(this.seed, 0x0ec7, propertyIndex);
    if (h % 100 >= 75) return undefined;
    const people = this.#counts.people;
    const owners = Math.max(1, Math.floor(people * OWNING_PEOPLE));
    const h2 = mix(h, propertyIndex, 0x77);
    // Most owners are people of the data set (several properties each); some are not.
    const personIndex = (h >>> 8) % 100 < 70 ? h2 % owners : people + (h2 % 1_000_000);
    const { first, last } = this.#names(personIndex);
    return {
      personIndex: personIndex < people ? personIndex : undefined,
      peopleKey: this.peopleKey(personIndex),
      firstName: first,
      lastName: last,
    };
  }

  #names(personIndex: number): { first: string; last: string } {
    const h = mix(this.seed, 0x4a3e, personIndex);
    return { first: P.FIRST_NAMES[h % P.FIRST_NAMES.length]!, last: P.LAST_NAMES[(h >>> 12) % P.LAST_NAMES.length]! };
  }

  id(type: DataType, index: number): string {
    let out = '';
    for (let w = 0; w < 4; w++) {
      let h = mix(this.seed ^ TYPE_SALT[type], index, w);
      for (let i = 0; i < 5; i++) {
        out += ID_ALPHABET[h & 63];
        h >>>= 6;
      }
    }
    return out;
  }

  #place(rng: Rng) {
    const city = P.CITIES[CITY_TABLE[Math.floor(rng.next() * CITY_TABLE.length)]!]!;
    const lat = (city.lat + (rng.next() - 0.5) * 0.3).toFixed(6);
    const lon = (city.lon + (rng.next() - 0.5) * 0.3).toFixed(6);
    const postalCode = String(city.zip + rng.int(0, 40)).padStart(5, '0');
    const direction = rng.chance(0.2) ? `${rng.pick(P.DIRECTIONS)} ` : '';
    const address = `${rng.int(1, 9899)} ${direction}${rng.pick(P.STREETS)} ${rng.pick(P.SUFFIXES)}`;
    return { city, lat, lon, postalCode, address };
  }

  #urls(rng: Rng, id: string, min: number, max: number): string[] {
    const n = rng.int(min, max);
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(`https://${rng.pick(P.SOURCE_HOSTS)}/listing/${id.slice(0, 8)}-${i}`);
    return out;
  }

  #dates(rng: Rng, n: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(iso(rng.time()));
    return out.sort();
  }

  /** A property record; its parts drawn from `rng` in a fixed order (the seed decides them all). */
  #property(index: number, rng: Rng): Json {
    const id = this.id('properties', index);
    const { city, lat, lon, postalCode, address } = this.#place(rng);
    const r: Json = { id, address, city: city.city, province: city.province, postalCode, country: 'US' };
    if (rng.chance(0.9)) {
      r.county = city.county;
      r.countyFIPS = city.countyFIPS;
    }
    r.latitude = lat;
    r.longitude = lon;
    r.geoLocation = `POINT (${lon} ${lat})`;
    const added = rng.time();
    r.dateAdded = iso(added);
    r.dateUpdated = iso(updatedAfter(added, rng.int(0, 3 * 365 * 86_400)));
    const type = rng.pick(P.PROPERTY_TYPES);
    r.propertyType = type;
    const owner = this.ownerOf(index);
    if (owner) r.currentOwnerType = rng.chance(0.85) ? 'Individual' : rng.pick(P.OWNER_TYPES);
    const land = type === 'Land';
    this.#building(r, rng, land);

    const base = rng.int(80, 1800) * 1000;
    const statusDate = rng.time();
    const status = rng.pick(P.STATUSES);
    r.mostRecentStatus = status;
    r.mostRecentStatusDate = iso(statusDate);
    r.mostRecentPriceAmount = base;
    r.mostRecentPriceDate = iso(statusDate);
    if (owner) {
      r.mostRecentOwnerFirstName = owner.firstName;
      r.mostRecentOwnerLastName = owner.lastName;
      r.mostRecentOwnerPeopleKey = owner.peopleKey;
    }
    r.prices = this.#prices(rng, id, base, r.floorSizeValue as number | undefined);
    if (rng.chance(0.6)) this.#brokers(r, index, rng, city.province);
    if (rng.chance(0.7)) {
      r.statuses = [
        { type: status, date: iso(statusDate), dateSeen: this.#dates(rng, rng.int(1, 3)), isUnderContract: status === 'Pending' },
      ];
    }
    if (rng.chance(0.5)) r.transactions = this.#transactions(index, rng, base);
    this.#propertyNotes(r, rng, id, `${type} in ${city.city}`, base);
    this.#propertyPeople(r, index, rng, owner);
    if (!land && rng.chance(0.5)) r.appliances = rng.some(P.APPLIANCES, 1, 4);
    if (rng.chance(0.5)) r.parking = rng.some(P.PARKING, 1, 2);
    if (rng.chance(0.6)) r.imageURLs = Array.from({ length: rng.int(1, 2) }, (_, i) => `https://images.example/${id}/${i}.jpg`);
    r.keys = [`us/${city.province.toLowerCase()}/${city.city.toLowerCase().replaceAll(' ', '')}/${address.toLowerCase().replaceAll(' ', '')}`];
    r.sourceURLs = this.#urls(rng, id, 1, 2);
    return r;
  }

  /** A property's building and lot: none of the building's fields for land. */
  #building(r: Json, rng: Rng, land: boolean): void {
    if (!land && rng.chance(0.9)) r.yearBuilt = rng.int(1900, 2023);
    if (!land && rng.chance(0.92)) r.numBedroom = rng.int(1, 6);
    if (!land && rng.chance(0.9)) r.numBathroom = rng.int(2, 9) / 2;
    if (!land && rng.chance(0.85)) {
      r.floorSizeValue = rng.int(450, 6500);
      r.floorSizeUnit = 'sq. ft.';
    }
    if (rng.chance(0.7)) r.lotSizeValue = round2(rng.int(5, 400) / 100);
    if (rng.chance(0.6)) r.zoning = rng.pick(P.ZONING);
  }

  #prices(rng: Rng, id: string, base: number, floorSize: number | undefined): Json[] {
    const prices: Json[] = [];
    for (let i = rng.int(1, 2); i > 0; i--) {
      const amount = Math.round(base * (0.85 + rng.next() * 0.3));
      const price: Json = {
        amountMax: amount,
        amountMin: Math.round(amount * 0.97),
        currency: 'USD',
        date: iso(rng.time()),
        dateSeen: this.#dates(rng, rng.int(1, 2)),
        isSale: rng.chance(0.8),
      };
      if (rng.chance(0.4)) price.isSold = rng.chance(0.5);
      if (floorSize) price.pricePerSquareFoot = round2(amount / floorSize);
      price.sourceURLs = this.#urls(rng, id, 1, 1);
      price.type = rng.chance(0.85) ? 'sale' : 'rental';
      prices.push(price);
    }
    return prices;
  }

  /** The brokers of a property, people of the dataset, and the most recent of them. */
  #brokers(r: Json, index: number, rng: Rng, province: string): void {
    const brokers: Json[] = [];
    for (let i = rng.int(1, 2); i > 0; i--) {
      const agentIndex = mix(this.seed, 0xb40e, index * 4 + i) % this.#counts.people;
      const { first, last } = this.#names(agentIndex);
      const broker: Json = { agent: `${first} ${last}`, company: rng.pick(P.BROKER_COMPANIES) };
      if (rng.chance(0.7)) broker.emails = [`${first}.${last}@realty.example`.toLowerCase().replaceAll("'", '')];
      if (rng.chance(0.8)) broker.phones = [phone(rng)];
      if (rng.chance(0.6)) broker.licenseNumber = `${province}${rng.int(100000, 999999)}`;
      broker.dateSeen = iso(rng.time());
      if (rng.chance(0.5)) broker.people_key = this.peopleKey(agentIndex);
      brokers.push(broker);
    }
    r.brokers = brokers;
    r.mostRecentBrokerAgent = brokers[0]!.agent;
    r.mostRecentBrokerCompany = brokers[0]!.company;
  }

  #transactions(index: number, rng: Rng, base: number): Json[] {
    const transactions: Json[] = [];
    for (let i = rng.int(1, 2); i > 0; i--) {
      const seller = this.#names(mix(index, i, 0x5e11));
      const buyer = this.#names(mix(index, i, 0xb07e));
      const price = Math.round(base * (0.5 + rng.next() * 0.5));
      const t: Json = {
        saleDate: iso(rng.time()),
        price,
        sellerFirstName: seller.first,
        sellerLastName: seller.last,
        buyerFirstName: buyer.first,
        buyerLastName: buyer.last,
      };
      if (rng.chance(0.7)) {
        t.lenderName = rng.pick(P.LENDERS);
        t.loanAmount = Math.round(price * 0.8);
      }
      t.type = rng.chance(0.9) ? 'Deed' : 'Foreclosure';
      transactions.push(t);
    }
    return transactions;
  }

  /** Features, a description (`what`: the type and the city), assessed values and taxes. */
  #propertyNotes(r: Json, rng: Rng, id: string, what: string, base: number): void {
    if (rng.chance(0.8)) {
      r.features = rng.some(P.FEATURE_KEYS, 1, 3).map((key) => ({ key, value: rng.some(P.FEATURE_VALUES, 1, 2) }));
    }
    if (rng.chance(0.5)) {
      r.descriptions = [
        {
          value: `${what} with ${r.numBedroom ?? 'several'} bedrooms, close to parks and schools.`,
          dateSeen: iso(rng.time()),
          sourceURLs: this.#urls(rng, id, 1, 1),
        },
      ];
    }
    if (rng.chance(0.75)) {
      const total = Math.round(base * 0.8);
      r.assessedValues = [{ totalAmount: total, landAmount: Math.round(total * 0.3), improvementsAmount: Math.round(total * 0.7), year: rng.int(2018, 2024) }];
    }
    if (rng.chance(0.7)) r.propertyTaxes = [{ amount: round2(base * 0.018), currency: 'USD', year: rng.int(2018, 2024) }];
  }

  /** The people named on a property: its owner, and sometimes an agent. */
  #propertyPeople(r: Json, index: number, rng: Rng, owner: Owner | undefined): void {
    const people: Json[] = [];
    if (owner) people.push({ name: `${owner.firstName} ${owner.lastName}`, title: 'owner', dateSeen: iso(rng.time()) });
    if (rng.chance(0.3)) {
      const agent = this.#names(mix(index, 0xa6e7));
      people.push({ name: `${agent.first} ${agent.last}`, title: 'Agent', dateSeen: iso(rng.time()) });
    }
    if (people.length > 0) r.people = people;
  }

  #business(index: number, rng: Rng): Json {
    const id = this.id('businesses', index);
    const { city, lat, lon, postalCode, address } = this.#place(rng);
    const kind = rng.pick(P.BUSINESS_KINDS);
    const name = `${rng.pick(P.BUSINESS_WORDS)} ${kind.noun}`;
    const r: Json = { id, name, address, city: city.city, province: city.province, postalCode, country: 'US' };
    r.latitude = lat;
    r.longitude = lon;
    r.geoLocation = `POINT (${lon} ${lat})`;
    r.categories = [kind.category, ...(rng.chance(0.5) ? ['Local Business'] : [])];
    r.primaryCategories = kind.category;
    if (rng.chance(0.85)) r.phones = [phone(rng)];
    const domain = `${name.toLowerCase().replace(/[^a-z]+/g, '')}${index}.example`;
    if (rng.chance(0.7)) r.websites = [`https://www.${domain}`];
    if (rng.chance(0.5)) r.emails = [`info@${domain}`];
    r.keys = [`us/${city.province.toLowerCase()}/${city.city.toLowerCase().replaceAll(' ', '')}/${name.toLowerCase().replaceAll(' ', '')}`];
    r.sourceURLs = [`https://www.yelp.example/biz/${domain}`];
    if (rng.chance(0.7)) {
      const min = rng.pick([1, 5, 10, 20, 50, 100]);
      r.numEmployeesMin = min;
      r.numEmployeesMax = min * 2 + 4;
    }
    if (rng.chance(0.6)) {
      const min = rng.int(1, 500) * 10_000;
      r.revenueMin = min;
      r.revenueMax = min * 2;
    }
    r.sic = kind.sic;
    if (rng.chance(0.75)) r.yearOpened = rng.int(1950, 2023);
    const added = rng.time();
    r.dateAdded = iso(added);
    r.dateUpdated = iso(updatedAfter(added, rng.int(0, 700 * 86_400)));
    if (rng.chance(0.7)) {
      r.reviews = Array.from({ length: rng.int(1, 4) }, () => {
        const reviewer = this.#names(rng.int(0, 1_000_000));
        return {
          date: iso(rng.time()),
          rating: rng.int(1, 5),
          text: rng.pick(P.REVIEW_TEXTS),
          title: rng.pick(P.REVIEW_TITLES),
          username: `${reviewer.first}${reviewer.last[0]}`,
        };
      });
    }
    if (rng.chance(0.7)) {
      const hours = rng.pick(P.HOURS.slice(0, -1));
      r.hours = P.DAYS.map((day, i) => ({ day, hour: i === 6 && rng.chance(0.5) ? 'Closed' : hours }));
    }
    if (rng.chance(0.5)) {
      r.features = rng.some(['Wi-Fi', 'Parking', 'Wheelchair Accessible', 'Accepts Credit Cards', 'Outdoor Seating'], 1, 3).map((key) => ({
        key,
        value: [rng.chance(0.8) ? 'Yes' : 'No'],
      }));
    }
    return r;
  }

  #product(index: number, rng: Rng): Json {
    const id = this.id('products', index);
    const brand = rng.pick(P.BRANDS);
    const item = rng.pick(P.PRODUCT_NOUNS);
    const r: Json = { id, name: `${brand} ${item.noun} ${rng.int(100, 999)}`, brand };
    if (rng.chance(0.8)) r.manufacturer = `${brand} Inc.`;
    if (rng.chance(0.6)) r.manufacturerNumber = `${brand.slice(0, 3).toUpperCase()}-${rng.int(10000, 99999)}`;
    r.categories = [item.category, rng.chance(0.5) ? 'Gifts' : 'Everyday'];
    r.primaryCategories = item.category;
    if (rng.chance(0.8)) r.upc = [String(rng.int(100000, 999999)) + String(rng.int(100000, 999999))];
    if (rng.chance(0.5)) r.ean = [`0${String(rng.int(100000, 999999))}${String(rng.int(100000, 999999))}`];
    if (rng.chance(0.6)) r.asins = `B0${rng.int(10000000, 99999999)}`;
    if (rng.chance(0.6)) r.colors = rng.some(P.COLORS, 1, 3);
    if (rng.chance(0.4)) r.sizes = rng.some(P.SIZES, 1, 3);
    if (rng.chance(0.7)) r.weight = `${round2(rng.int(10, 2000) / 100)} lbs`;
    r.imageURLs = [`https://images.example/products/${id}.jpg`];
    r.keys = [`${brand.toLowerCase()}/${item.noun.toLowerCase().replaceAll(' ', '')}/${id.slice(0, 6)}`];
    r.sourceURLs = [`https://www.${rng.pick(P.MERCHANTS).toLowerCase().replace(/[^a-z.]/g, '')}/p/${id}`];
    const added = rng.time();
    r.dateAdded = iso(added);
    r.dateUpdated = iso(updatedAfter(added, rng.int(0, 500 * 86_400)));
    const base = rng.int(5, 1500);
    const prices: Json[] = [];
    for (let i = rng.int(1, 4); i > 0; i--) {
      const max = round2(base * (0.9 + rng.next() * 0.3));
      prices.push({
        amountMax: max,
        amountMin: round2(max * 0.95),
        currency: 'USD',
        condition: rng.chance(0.8) ? 'new' : rng.pick(P.CONDITIONS),
        isSale: rng.chance(0.3),
        merchant: rng.pick(P.MERCHANTS),
        dateSeen: this.#dates(rng, rng.int(1, 3)),
      });
    }
    r.prices = prices;
    r.mostRecentPriceAmount = prices[0]!.amountMax;
    r.mostRecentPriceDate = (prices[0]!.dateSeen as string[]).at(-1);
    if (rng.chance(0.7)) r.merchants = rng.some(P.MERCHANTS, 1, 3).map((name) => ({ name, dateSeen: iso(rng.time()) }));
    return r;
  }

  #person(index: number, rng: Rng): Json {
    const { first, last } = this.#names(index);
    const { city, postalCode, address } = this.#place(rng);
    const r: Json = { id: this.id('people', index), firstName: first, lastName: last };
    if (rng.chance(0.9)) {
      r.address = address;
      r.city = city.city;
      r.province = city.province;
      r.postalCode = postalCode;
      r.country = 'US';
    }
    const handle = `${first}.${last}`.toLowerCase().replace(/[^a-z.]/g, '');
    if (rng.chance(0.8)) r.emails = [`${handle}${index % 100}@${rng.pick(P.EMAIL_HOSTS)}`];
    const numbers = rng.chance(0.85) ? Array.from({ length: rng.int(1, 2) }, () => phone(rng)) : [];
    if (numbers.length > 0) r.phones = numbers;
    r.keys = [this.peopleKey(index)];
    if (rng.chance(0.3)) r.businessName = `${rng.pick(P.BUSINESS_WORDS)} ${rng.pick(P.BUSINESS_KINDS).noun}`;
    if (rng.chance(0.6)) r.jobTitle = rng.pick(P.JOB_TITLES);
    const added = rng.time();
    r.dateAdded = iso(added);
    r.dateUpdated = iso(updatedAfter(added, rng.int(0, 900 * 86_400)));
    if (numbers.length > 0) {
      r.phoneNumbers = numbers.map((number) => ({
        number,
        carrier: rng.pick(P.CARRIERS),
        type: rng.pick(P.PHONE_TYPES),
        lastDateSeen: iso(rng.time()),
      }));
    }
    return r;
  }

}

export function phone(rng: Rng): string {
  return `+1${rng.int(200, 989)}${rng.int(200, 999)}${String(rng.int(0, 9999)).padStart(4, '0')}`;
}

/**
 * A property with its owner's people record merged into the owner entry (what autotrace
 * returns), or undefined when the property has no owner entry. Changes `property` in place.
 */
export function mergeOwner(property: Json, person: Json, owner: Owner): Json | undefined {
  const people = property.people as Json[] | undefined;
  const entry = people?.find((p) => p.title === 'owner');
  if (!entry) return undefined;
  entry.firstName = person.firstName;
  entry.lastName = person.lastName;
  if (person.emails) entry.emails = person.emails;
  if (person.phoneNumbers) entry.phoneNumbers = person.phoneNumbers;
  entry.keys = person.keys;
  entry.people_keys = [owner.peopleKey];
  return property;
}
