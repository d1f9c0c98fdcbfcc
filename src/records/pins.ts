import type { FieldDef, FieldMap } from '../catalog.js';
import { type ColumnType, isIsoDate, type Row, type RowValue } from '../schema/types.js';
import { checkKeysOnce, DecodeError } from './decode.js';
import { exactDouble, InexactNumber, jsonText } from './numbers.js';
import type { DecodedRecord } from './shape.js';

/**
 * Column hints (`columns:` of a job): a field pinned to a type is stored as that type on every
 * destination, its column made so up front, never widened; a value that does not fit the type
 * rejects its record with the reason (`latitude: 'north' is not a double`).
 *
 * The service sends many numbers as text (`"30.2672"`): a pinned `double` reads them as numbers,
 * by the rule every number is read by (numbers.ts): a value the column would change (an integer
 * a double rounds, `1e-400`) is a reject too, never stored changed.
 */
export type Pins = Readonly<Record<string, ColumnType>>;

/** The catalogue hint that makes a pinned value infer its pinned type (schema/types.ts). */
const HINT_OF: Record<ColumnType, FieldDef> = {
  text: { kind: 'string' },
  integer: { kind: 'integer' },
  real: { kind: 'number' },
  boolean: { kind: 'boolean' },
  timestamp: { kind: 'date' },
  json: { kind: 'list', of: 'string' },
};

/** Catalogue hints with the pinned fields' over them. */
export function pinnedHints(hints: FieldMap, pins: Pins): FieldMap {
  const out: FieldMap = Object.assign(Object.create(null), hints);
  for (const [name, type] of Object.entries(pins)) out[name] = HINT_OF[type];
  return out;
}

const NAMES: Record<ColumnType, string> = {
  text: 'text',
  integer: 'an integer',
  real: 'a double',
  boolean: 'a boolean',
  timestamp: 'a timestamp (an ISO 8601 date)',
  json: 'JSON',
};

const NUMBER = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
const INTEGER = /^\s*[+-]?\d+(?:\.0*)?\s*$/;

function misfit(value: unknown, type: ColumnType): DecodeError {
  const text = typeof value === 'string' ? value : jsonText(value);
  const shown = text.length > 60 ? `${text.slice(0, 60)}...` : text;
  return new DecodeError(`'${shown}' is not ${NAMES[type]} (its type is pinned by columns:)`);
}

/** A decoded value as its pinned type, or DecodeError saying why it cannot be. */
export function pinValue(value: unknown, type: ColumnType): unknown {
  if (value === null || value === undefined || value === '') return null;
  switch (type) {
    case 'text':
      if (typeof value === 'string') return value;
      if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
        return String(value);
      }
      return jsonText(value);
    case 'real':
      return pinnedDouble(value);
    case 'integer':
      if (typeof value === 'bigint') return value;
      if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
      if (typeof value === 'string' && INTEGER.test(value)) {
        const whole = value.trim().replace(/\.0*$/, '');
        const n = Number(whole);
        if (Number.isSafeInteger(n)) return n;
        const big = BigInt(whole);
        if (big >= -(2n ** 63n) && big < 2n ** 63n) return big;
      }
      throw misfit(value, type);
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 1 || value === 0) return value === 1;
      if (typeof value === 'string') {
        const word = value.trim().toLowerCase();
        if (word === 'true' || word === '1') return true;
        if (word === 'false' || word === '0') return false;
      }
      throw misfit(value, type);
    case 'timestamp':
      if (typeof value === 'string' && isIsoDate(value)) return value;
      throw misfit(value, type);
    case 'json':
      // JSON text (a CSV cell of a field the catalogue does not list) is kept as it is, so
      // that CSV and NDJSON of the same records give the same value; with each key once, as
      // every destination then holds the same value.
      if (typeof value === 'string' && isJsonText(value)) {
        checkKeysOnce(value);
        return value;
      }
      return jsonText(value);
  }
}

/**
 * A value of a pinned `double`. A number or bigint was read from the file by the number rule
 * already (an integer past 2^53 is a bigint, kept only when its double reads back as it). Text
 * is read by the same rule, so that a number gives the same value or reject whether the service
 * sends it as text or not, in CSV or NDJSON.
 */
function pinnedDouble(value: unknown): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw misfit(value, 'real');
    return value === 0 ? 0 : value; // -0 is 0 (see exactDouble)
  }
  let text: string;
  if (typeof value === 'bigint') text = value.toString();
  else if (typeof value === 'string' && NUMBER.test(value)) text = value.trim();
  else throw misfit(value, 'real');
  try {
    return exactDouble(text);
  } catch (error) {
    if (!(error instanceof InexactNumber)) throw error;
    throw new DecodeError(`${error.message} (its type is pinned by columns:)`);
  }
}

/**
 * Pins the fields of a decoded record (top-level fields, before they are split into tables:
 * a pinned list or object stays one column), in place.
 */
export function pinRecord(record: DecodedRecord, pins: Pins): void {
  for (const name in pins) {
    if (!Object.hasOwn(record, name)) continue;
    try {
      record[name] = pinValue(record[name], pins[name]!);
    } catch (error) {
      if (error instanceof DecodeError) throw new DecodeError(`${name}: ${error.message}`);
      throw error;
    }
  }
}

/**
 * Pins the columns of a row that were no field of its record (flattened: `address__city`); the
 * record's own were pinned by `pinRecord`.
 */
export function pinRow(row: Row, pins: Pins, record: DecodedRecord): void {
  for (const name in pins) {
    if (!Object.hasOwn(row, name) || Object.hasOwn(record, name)) continue;
    const value = row[name];
    if (value === null) continue;
    try {
      row[name] = pinValue(value, pins[name]!) as RowValue;
    } catch (error) {
      if (error instanceof DecodeError) throw new DecodeError(`${name}: ${error.message}`);
      throw error;
    }
  }
}

/** Whether text is a JSON object or array (what a CSV cell of nested values holds). */
function isJsonText(text: string): boolean {
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
