import { type DataType, FIELDS, type FieldDef, type ScalarKind } from '../catalog.js';
import { isCorruptDate, type RowValue } from '../schema/types.js';
import { exactNumber, InexactNumber, jsonText, parseExact, stringEnd } from './numbers.js';

/**
 * Turns a record as it arrived (CSV cells, all text; or a parsed NDJSON object) into plain
 * values by the catalogue: numbers from `2022.0`, booleans from `true`, lists from comma-joined
 * cells, nested objects from JSON text. CSV and NDJSON downloads of the same records decode to
 * the same values, which is what makes their tables identical.
 *
 * Empty text and empty lists decode to null: CSV cannot tell them from a missing value, so
 * NDJSON must not either.
 */
export type Decoder = (value: unknown) => unknown;

/** A cell that cannot be decoded (e.g. JSON text that does not parse): the row is rejected. */
export class DecodeError extends Error {}

const NUMBER_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * A number cell's value, exactly as written (see numbers.ts). Text of fewer than 16 characters
 * with no exponent holds at most 15 digits, which a double holds: only longer text, and text
 * with an exponent (which may take it past a double's range, to zero, or to an integer past
 * 2^53: `9.1e16`), are looked at closely.
 */
function numberOf(text: string): number | bigint {
  const value = Number(text);
  if (text.length < 16 && value !== 0 && !/[eE]/.test(text)) return value;
  try {
    return exactNumber(text);
  } catch (error) {
    if (error instanceof InexactNumber) throw new DecodeError(error.message);
    throw error;
  }
}

function decodeScalar(kind: ScalarKind, value: unknown): unknown {
  if (value === null || value === undefined || value === '') return null;
  if (typeof value !== 'string') return value;
  switch (kind) {
    case 'number':
    case 'integer':
      return NUMBER_TEXT.test(value) ? numberOf(value) : value;
    case 'boolean':
      if (value === 'true' || value === 'True' || value === 'TRUE') return true;
      if (value === 'false' || value === 'False' || value === 'FALSE') return false;
      return value;
    case 'date':
      // A date-shaped value that is no real date (2021-02-30, year 0) is corrupt: JavaScript
      // would roll it over and a database would refuse it, so the record is kept aside.
      if (isCorruptDate(value)) {
        throw new DecodeError(`'${value}' is not a valid date`);
      }
      return value;
    default:
      return value;
  }
}

function decodeList(of: ScalarKind, value: unknown): unknown {
  if (value === null || value === undefined || value === '') return null;
  let items: unknown[];
  if (Array.isArray(value)) items = value;
  else if (typeof value === 'string') {
    // A list may also arrive as JSON text (a flattening view, or a variant of the wire).
    const parsed = value.startsWith('[') ? parseJson(value) : value.split(',');
    if (!Array.isArray(parsed)) throw new DecodeError('expected a list');
    items = parsed;
  } else items = [value];
  if (items.length === 0) return null;
  return mapSame(items, (item) => decodeScalar(of, item));
}

/** `items.map(f)`, or `items` itself when `f` changes none of them. */
function mapSame(items: unknown[], f: (item: unknown) => unknown): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const decoded = f(item);
    if (out === undefined) {
      if (decoded === item) continue;
      out = items.slice(0, i);
    }
    out.push(decoded);
  }
  return out ?? items;
}

/**
 * JSON text of a cell (a list, nested objects), its numbers exact (see numbers.ts), and no key
 * twice in one object (see `checkKeysOnce`).
 */
function parseJson(text: string): unknown {
  let value: unknown;
  try {
    value = parseExact(text);
  } catch (error) {
    if (error instanceof InexactNumber) throw new DecodeError(error.message);
    throw new DecodeError(`not valid JSON: ${text.length > 60 ? `${text.slice(0, 60)}...` : text}`);
  }
  checkKeysOnce(text);
  return value;
}

/**
 * Refuses JSON text (already known to parse) that names a key twice in one object: no reading
 * of it keeps both values (JSON.parse and PostgreSQL's jsonb keep the last, SQLite and DuckDB
 * store the text with both), so the record is kept aside rather than one value lost silently.
 * Keys are compared as JSON reads them (`"a"` and `"\u0061"` are one key).
 */
export function checkKeysOnce(text: string): void {
  /** The keys of each object open at this point; null for an array. */
  const open: (Set<string> | null)[] = [];
  const marks = /[{}[\]"]/g;
  for (let m = marks.exec(text); m !== null; m = marks.exec(text)) {
    const i = m.index;
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACE) open.push(new Set());
    else if (c === OPEN_BRACKET) open.push(null);
    else if (c !== QUOTE_MARK) open.pop();
    else {
      const end = stringEnd(text, i);
      marks.lastIndex = end;
      const keys = open.at(-1);
      if (keys && text.charCodeAt(afterSpace(text, end)) === COLON) {
        const raw = text.slice(i + 1, end - 1);
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (keys.has(key)) {
          const shown = key.length > 60 ? `${key.slice(0, 60)}...` : key;
          throw new DecodeError(
            `its JSON names the key '${shown}' twice in one object, so one of its values would be lost`,
          );
        }
        keys.add(key);
      }
    }
  }
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const QUOTE_MARK = 0x22;
const COLON = 0x3a;

/** Where the first character that is not JSON's white space is, from `at`. */
function afterSpace(text: string, at: number): number {
  let i = at;
  while (
    i < text.length &&
    (text[i] === ' ' || text[i] === '\n' || text[i] === '\t' || text[i] === '\r')
  )
    i++;
  return i;
}

function decodeObjects(fields: Record<string, FieldDef>, value: unknown): unknown {
  if (value === null || value === undefined || value === '') return null;
  let parsed: unknown = value;
  if (typeof value === 'string') parsed = parseJson(value);
  if (Array.isArray(parsed)) {
    if (parsed.length === 0) return null;
    return mapSame(parsed, (item) => decodeObject(fields, item));
  }
  if (parsed !== null && typeof parsed === 'object') return decodeObject(fields, parsed);
  throw new DecodeError('expected a list of objects');
}

/**
 * An object decoded by the catalogue. Values that decode to themselves (the usual case: the
 * service's JSON is already typed) leave the object as it was parsed, which is only read from,
 * never written to; the first value that changes makes a null-prototype copy, so that a field
 * named `__proto__` stays a field.
 */
function decodeObject(fields: Record<string, FieldDef>, item: unknown): unknown {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return item;
  const source = item as Record<string, unknown>;
  const keys = Object.keys(source);
  let out: Record<string, unknown> | undefined;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const value = source[key];
    const def = fieldDef(fields, key);
    const decoded = def === undefined ? value : decoderFor(def)(value);
    if (out === undefined) {
      if (decoded === value) continue;
      out = Object.create(null) as Record<string, unknown>;
      for (let j = 0; j < i; j++) out[keys[j]!] = source[keys[j]!];
    }
    out[key] = decoded;
  }
  return out ?? source;
}

/** The catalogue's definition of a field; never an inherited property such as `constructor`. */
export function fieldDef(fields: Record<string, FieldDef>, name: string): FieldDef | undefined {
  return Object.hasOwn(fields, name) ? fields[name] : undefined;
}

export const NUL_REASON = 'holds a NUL character (U+0000), which PostgreSQL cannot store';

const ESCAPED_NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/;

/**
 * Whether a record's text holds a NUL character, raw or as a JSON escape. Neither PostgreSQL's
 * text nor its jsonb can store one, so such a record is kept aside on every destination alike.
 */
export function hasNul(text: string): boolean {
  return text.includes('\u0000') || (text.includes('\\u0000') && ESCAPED_NUL.test(text));
}

const cache = new WeakMap<FieldDef, Decoder>();

export function decoderFor(def: FieldDef): Decoder {
  let decoder = cache.get(def);
  if (decoder === undefined) {
    if (def.kind === 'list') decoder = (v) => decodeList(def.of, v);
    else if (def.kind === 'objects') decoder = (v) => decodeObjects(def.fields, v);
    else {
      const kind = def.kind;
      decoder = (v) => decodeScalar(kind, v);
    }
    cache.set(def, decoder);
  }
  return decoder;
}

/** Fields not in the catalogue keep their value; empty text still means null. */
const decodeUnknown: Decoder = (v) => (v === '' || v === undefined ? null : v);

/**
 * One decoder per column, looked up once per file rather than once per cell; the fields of
 * `asSent` are kept as the file sends them (see RecordShape).
 */
export function decodersFor(
  type: DataType,
  columns: readonly string[],
  asSent?: ReadonlySet<string>,
): Decoder[] {
  const fields = FIELDS[type];
  return columns.map((name) => {
    const def = asSent?.has(name) ? undefined : fieldDef(fields, name);
    return def === undefined ? decodeUnknown : decoderFor(def);
  });
}

/**
 * Stores a decoded value in one column: nested values become JSON text (`nested: json`), an
 * integer past 2^53 stays a bigint (numbers.ts).
 */
export function toColumnValue(value: unknown): RowValue {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'bigint':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : null;
    default:
      return jsonText(value);
  }
}
