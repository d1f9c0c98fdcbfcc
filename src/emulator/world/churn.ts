import type { DataType } from '../../catalog.js';
import { iso, phone, type Rng } from '../data/dataset.js';
import * as P from '../data/pools.js';

type Json = Record<string, unknown>;

/**
 * How many of its latest changes a record shows: each change adds a price, a status or a phone
 * number, and older ones drop off, so a record read years ahead stays the size it was.
 */
export const KEPT_CHANGES = 3;

export interface Change {
  /** Emulator time of the change, ms. */
  at: number;
  /** Draws of this change alone, the same whenever the record is read. */
  rng: Rng;
}

/**
 * Applies a record's latest changes (at most KEPT_CHANGES), oldest first. A change sets every
 * field it touches from its own draws and the record as generated, never from the changes before
 * it, so applying only the latest few gives the record that replaying all of them would.
 */
export function applyChanges(type: DataType, record: Json, changes: readonly Change[]): void {
  if (changes.length === 0) return;
  switch (type) {
    case 'properties':
      changeProperty(record, changes);
      break;
    case 'businesses':
      changeBusiness(record, changes);
      break;
    case 'products':
      changeProduct(record, changes);
      break;
    case 'people':
      changePerson(record, changes);
      break;
  }
  record.dateUpdated = isoMs(changes.at(-1)!.at);
}

/** The wire's dates have whole seconds: a change is dated by the second it happened in. */
export function isoMs(ms: number): string {
  return iso(Math.floor(ms / 1000));
}

/** A factor 2% to 15% away from 1, up or down: a new price is never the old one. */
function drift(rng: Rng): number {
  const step = 0.02 + rng.next() * 0.13;
  return rng.chance(0.5) ? 1 + step : 1 - step;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

/** A relisting: a new asking price and the status it was seen with. */
function changeProperty(r: Json, changes: readonly Change[]): void {
  const base = r.mostRecentPriceAmount as number;
  const floor = r.floorSizeValue as number | undefined;
  const prices = [...(r.prices as Json[])];
  const statuses = Array.isArray(r.statuses) ? [...(r.statuses as Json[])] : [];
  for (const { at, rng } of changes) {
    const date = isoMs(at);
    const amount = Math.max(1000, Math.round((base * drift(rng)) / 1000) * 1000);
    const status = rng.chance(0.5) ? 'For Sale' : rng.pick(P.STATUSES);
    const price: Json = {
      amountMax: amount,
      amountMin: Math.round(amount * 0.97),
      currency: 'USD',
      date,
      dateSeen: [date],
      isSale: true,
    };
    if (floor) price.pricePerSquareFoot = round2(amount / floor);
    price.sourceURLs = [
      `https://${rng.pick(P.SOURCE_HOSTS)}/listing/${String(r.id).slice(0, 8)}-${rng.int(10, 99)}`,
    ];
    price.type = 'sale';
    prices.push(price);
    statuses.push({ type: status, date, dateSeen: [date], isUnderContract: status === 'Pending' });
    r.mostRecentPriceAmount = amount;
    r.mostRecentPriceDate = date;
    r.mostRecentStatus = status;
    r.mostRecentStatusDate = date;
  }
  r.prices = prices;
  r.statuses = statuses;
}

/** A new phone number, and a new head count where one is known. */
function changeBusiness(r: Json, changes: readonly Change[]): void {
  const hasEmployees = r.numEmployeesMin !== undefined;
  for (const { rng } of changes) {
    r.phones = [phone(rng)];
    if (hasEmployees) {
      const min = rng.pick([1, 5, 10, 20, 50, 100, 200]);
      r.numEmployeesMin = min;
      r.numEmployeesMax = min * 2 + 4;
    }
  }
}

/** A new price, first in the list as the most recent one is. */
function changeProduct(r: Json, changes: readonly Change[]): void {
  const base = r.mostRecentPriceAmount as number;
  const prices = [...(r.prices as Json[])];
  for (const { at, rng } of changes) {
    const date = isoMs(at);
    const max = Math.max(0.99, round2(base * drift(rng)));
    prices.unshift({
      amountMax: max,
      amountMin: round2(max * 0.95),
      currency: 'USD',
      condition: 'new',
      isSale: rng.chance(0.3),
      merchant: rng.pick(P.MERCHANTS),
      dateSeen: [date],
    });
    r.mostRecentPriceAmount = max;
    r.mostRecentPriceDate = date;
  }
  r.prices = prices;
}

/** A new phone number, first; the oldest drop off past KEPT_CHANGES. */
function changePerson(r: Json, changes: readonly Change[]): void {
  let phones = Array.isArray(r.phones) ? [...(r.phones as string[])] : [];
  let numbers = Array.isArray(r.phoneNumbers) ? [...(r.phoneNumbers as Json[])] : [];
  for (const { at, rng } of changes) {
    const number = phone(rng);
    phones = [number, ...phones].slice(0, KEPT_CHANGES);
    numbers = [
      {
        number,
        carrier: rng.pick(P.CARRIERS),
        type: rng.pick(P.PHONE_TYPES),
        lastDateSeen: isoMs(at),
      },
      ...numbers,
    ].slice(0, KEPT_CHANGES);
  }
  r.phones = phones;
  r.phoneNumbers = numbers;
}
