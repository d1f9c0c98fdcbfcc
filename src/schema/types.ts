import type { FieldDef } from '../catalog.js';

/**
 * Column types, portable across destinations; each destination maps them to its own (in its
 * folder under `load/`). Inference and widening live here, once, for all of them.
 *
 * Widening goes up this order when data disagrees:
 * boolean -> integer -> real -> text; timestamp -> text; json -> text.
 */
export type ColumnType = 'boolean' | 'integer' | 'real' | 'timestamp' | 'json' | 'text';

export interface Column {
  name: string;
  type: ColumnType;
}

/**
 * A value a destination column can hold. Nested values arrive as JSON text; an integer past
 * 2^53 (which a number would round) as a bigint, within 64 bits (records/numbers.ts).
 */
export type RowValue = string | number | bigint | boolean | null;

/** One row: column name -> value. Always a null-prototype object (field names are data). */
export type Row = Record<string, RowValue>;

/** A row with no inherited keys: `__proto__` or `constructor` from the service are columns. */
export function newRow(): Row {
  return Object.create(null) as Row;
}

/**
 * Rows packed for writing: the column names once, then each row's values in that order, row
 * after row. This is how rows cross from a parse worker to the writing thread (with their values
 * in one string and one buffer: records/workers/posted-batch.ts; no object is made per row on either side) and
 * what the destinations bind from. For a destination that takes COPY text, parse workers send the
 * job's rows as COPY text instead (`text`), which the writing thread passes on to COPY.
 */
export interface PackedRows {
  readonly names: readonly string[];
  /** `count` rows of `names.length` values each. */
  readonly values: readonly RowValue[];
  readonly count: number;
  /** Columns with the same value in every row (the load's own columns), not in `values`. */
  readonly constants?: Readonly<Record<string, RowValue>>;
  /**
   * The rows as COPY text, written by a parse worker for a destination that takes
   * it (see copy-text.ts): `names` and `values` then hold only the columns the writing thread
   * reads (keys), and `plainRows` gives back every value.
   */
  readonly text?: CopyText;
}

/** Rows as COPY text lines: the cells of `names`, typed `types`, a line per row. */
export interface CopyText {
  readonly names: readonly string[];
  readonly types: readonly ColumnType[];
  /** UTF-8, each line ended by a newline (a newline in a value is escaped). */
  readonly bytes: Uint8Array;
  /**
   * The columns with a bigint (an integer past 2^53) in some row: a floating-point column
   * would round it, and refuses its row instead (load/core/inexact-rows.ts).
   */
  readonly bigints?: readonly string[];
  /**
   * The timestamp columns with a time finer than a microsecond in some row, which such a column
   * would change: its row is refused (load/core/inexact-rows.ts).
   */
  readonly fineTimes?: readonly string[];
}

/** Row `index` of `packed` (plain rows: see `plainRows`) as an object (for a rejected row). */
export function unpackRow(packed: PackedRows, index: number): Row {
  if (packed.text) throw new Error('unpackRow reads plain rows (plainRows)');
  const row = newRow();
  const width = packed.names.length;
  for (let c = 0; c < width; c++) row[packed.names[c]!] = packed.values[index * width + c] ?? null;
  if (packed.constants) Object.assign(row, packed.constants);
  return row;
}

/** The rows of `packed` (plain rows: see `plainRows`) at `indexes`, in that order. */
export function selectPacked(packed: PackedRows, indexes: readonly number[]): PackedRows {
  if (packed.text) throw new Error('selectPacked reads plain rows (plainRows)');
  const width = packed.names.length;
  const values: RowValue[] = new Array(indexes.length * width);
  let o = 0;
  for (const index of indexes) {
    for (let c = 0, i = index * width; c < width; c++, i++) values[o++] = packed.values[i]!;
  }
  return { ...packed, values, count: indexes.length };
}

const DATE_SHAPE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Whether text has the shape of an ISO-8601 date or date-time. A value with that shape that
 * is not a real date (`2021-02-30`, year 0) is corrupt, not text: see `isIsoDate`.
 */
export function looksLikeIsoDate(text: string): boolean {
  return DATE_SHAPE.test(text);
}

/**
 * True for ISO-8601 dates and date-times that every destination stores as a timestamp: a real
 * calendar day of a year from 1 to 9999, hours 0-23, minutes and seconds 0-59. JavaScript's
 * `Date.parse` accepts `2021-02-30` (as 2 March) and year 0; PostgreSQL refuses both.
 */
export function isIsoDate(text: string): boolean {
  const fast = commonDate(text);
  if (fast !== undefined) return fast;
  const m = DATE_SHAPE.exec(text);
  if (m === null) return false;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const last = month === 2 && leap ? 29 : DAYS[month - 1]!;
  if (day > last) return false;
  if (m[4] !== undefined && (Number(m[4]) > 23 || Number(m[5]) > 59)) return false;
  if (m[6] !== undefined && Number(m[6]) > 59) return false;
  const zone = m[7];
  if (zone !== undefined && zone !== 'Z') {
    // An offset's minutes past 59 (`+05:99`) are refused by one destination, taken as +06:39 by
    // another and kept as text by the third: three values, so none.
    if (Number(zone.slice(1, 3)) > 15 || Number(zone.slice(-2)) > 59) return false;
  }
  return true;
}

/**
 * Whether an ISO date's seconds have a digit other than 0 past the sixth of their fraction
 * (`00:00:00.1234567Z`): finer than a microsecond, which a timestamp column cannot hold (one
 * destination rounds it, another cuts it). Zeros past the sixth change nothing. The service's own form is
 * shorter than any such date, and is told by its length alone.
 */
export function finerThanMicroseconds(text: string): boolean {
  // `YYYY-MM-DDTHH:MM:SS.` and seven digits at least.
  if (text.length < 27 || text.charCodeAt(19) !== 46) return false;
  for (let i = 26; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
    if (c !== 48) return true;
  }
  return false;
}

/** Whether a date is corrupt: it has the shape of an ISO date but is no real one. */
export function isCorruptDate(text: string): boolean {
  const fast = commonDate(text);
  if (fast !== undefined) return !fast;
  return looksLikeIsoDate(text) && !isIsoDate(text);
}

function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/**
 * The service's own form, `YYYY-MM-DDTHH:MM:SSZ`, checked without a regular expression (a
 * record holds dozens of dates): true or false for that form, undefined for any other text.
 */
function commonDate(text: string): boolean | undefined {
  if (
    text.length !== 20 ||
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 84 ||
    text.charCodeAt(13) !== 58 ||
    text.charCodeAt(16) !== 58 ||
    text.charCodeAt(19) !== 90
  ) {
    return undefined;
  }
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if ((year | month | day | hour | minute | second) < 0) return undefined;
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const last = month === 2 && leap ? 29 : DAYS[month - 1]!;
  return day <= last && hour <= 23 && minute <= 59 && second <= 59;
}

/**
 * The column type a value asks for. The catalogue's hint decides between text and timestamp or
 * json; the value decides the rest, so an unexpected value widens the column instead of failing.
 */
export function inferColumnType(value: RowValue, hint?: FieldDef): ColumnType {
  switch (typeof value) {
    case 'boolean':
      return 'boolean';
    case 'number':
      // A catalogue `number` (a price, an area) is real even when this value is whole, so that
      // the next fractional value does not widen the column.
      return Number.isSafeInteger(value) && hint?.kind !== 'number' ? 'integer' : 'real';
    case 'bigint':
      // Only an integer column holds it exactly: a floating-point one refuses its row.
      return 'integer';
    case 'string':
      if (hint === undefined) return 'text';
      if (hint.kind === 'objects' || hint.kind === 'list') return 'json';
      if (hint.kind === 'date' && isIsoDate(value)) return 'timestamp';
      return 'text';
    default:
      return 'text';
  }
}

/** The type a catalogue field gets before any value is seen (tables created up front). */
export function declaredColumnType(hint: FieldDef): ColumnType {
  switch (hint.kind) {
    case 'boolean':
      return 'boolean';
    case 'integer':
      return 'integer';
    case 'number':
      return 'real';
    case 'date':
      return 'timestamp';
    case 'list':
    case 'objects':
      return 'json';
    default:
      return 'text';
  }
}

const NUMERIC: readonly ColumnType[] = ['boolean', 'integer', 'real'];

/** The narrowest type both `a` and `b` fit: boolean < integer < real < text; timestamp, json < text. */
export function widen(a: ColumnType, b: ColumnType): ColumnType {
  if (a === b) return a;
  const ia = NUMERIC.indexOf(a);
  const ib = NUMERIC.indexOf(b);
  if (ia >= 0 && ib >= 0) return NUMERIC[Math.max(ia, ib)]!;
  return 'text';
}

/**
 * A value as text for a text column, the same on every destination: `1999` (never `1999.0`),
 * `true`/`false`, a bigint's digits.
 */
export function textOf(value: string | number | bigint | boolean): string {
  return typeof value === 'string' ? value : String(value);
}
