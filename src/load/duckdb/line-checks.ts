import type { FieldDef, FieldMap, ScalarKind } from '../../catalog.js';
import type { ColumnType } from '../../schema/types.js';

/**
 * Whether DuckDB reading an NDJSON line (read-file.ts: `json_extract` of the table's fields,
 * each cast by read-checks.ts's `cellValue`) gives exactly what sluice's decoding
 * (records/decode.ts, records/numbers.ts) writes. Checked in JavaScript while DuckDB reads the
 * file, on the other core. Every test is a sufficient condition, never a necessary one: a line
 * in doubt sends its file down sluice's own path, which decides, so a test may refuse more than
 * it must but never less.
 *
 * The line must be what `JSON.stringify` writes of what `JSON.parse` reads of it. That one test
 * rules out a key named twice at any depth, spacing, and every number whose spelling a parse
 * would change (past 2^53, `2.0`, `-0`, `1E3`); and for such text DuckDB's JSON writer (yyjson)
 * writes a nested value as `JSON.stringify` does (test/unit/load/duckdb-line-checks.test.ts
 * holds the two to each other), so the parsed value's tests tell what either writes.
 */

/** A field of the table read from the line: its key, its column's type and its catalogue field. */
export interface CheckedField {
  key: string;
  type: ColumnType;
  def?: FieldDef;
}

/** Why a line is in doubt, or undefined when DuckDB reads it as sluice decodes it. */
export type LineCheck = (line: string, bytes: number) => string | undefined;

/** Why a value is in doubt, or undefined. */
type CellCheck = (value: unknown) => string | undefined;

/** The service's form of a time, its fields in their ranges (the day is checked apart). */
const COMMON_TIME =
  /^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z$/;
/** records/types.ts's DATE_SHAPE. */
const DATE_SHAPE =
  /^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?$/;
const DAY = /^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])$/;
export const INTEGER = /^-?[0-9]{1,15}(?:\.0+)?$/;
export const REAL = /^-?[0-9]{1,15}(?:\.[0-9]{1,20})?$/;
const MINUS_ZERO = /^-0(?:\.0*)?$/;
export const BOOLEAN_TEXT = new Set(['true', 'True', 'TRUE', 'false', 'False', 'FALSE']);
/**
 * A number (as `String` spells it) the two writers may spell otherwise, or sluice refuses: an
 * exponent, or a run of 16 digits (past 2^53, or one a double would round).
 */
const NUMBER_IN_DOUBT = /e|[0-9]{16}/;
/** Scalar kinds whose text sluice decodes into another value (a number, a boolean). */
export const DECODED: readonly ScalarKind[] = ['number', 'integer', 'boolean'];

/** The number written by the digits of `s` from `at` to `to`. */
function digits(s: string, at: number, to: number): number {
  let n = 0;
  for (let i = at; i < to; i++) n = n * 10 + s.charCodeAt(i) - 48;
  return n;
}

/** Whether `yyyy-mm-dd` (its first ten characters, digits) is a real day of a year from 1. */
function realDay(s: string): boolean {
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 7);
  const day = digits(s, 8, 10);
  if (year === 0) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
  return day <= days;
}

/** Text of a number a column of its form (INTEGER, REAL) takes as it is. */
export function numberKept(re: RegExp, s: string): boolean {
  return re.test(s) && !(re === REAL && MINUS_ZERO.test(s));
}

/** A real time in the service's form. */
export function realTime(s: string): boolean {
  return COMMON_TIME.test(s) && realDay(s);
}

/** Text that a date field keeps as it is: not date-shaped, or a real time or day. */
export function dateKept(s: string): boolean {
  return !DATE_SHAPE.test(s) || realTime(s) || (DAY.test(s) && realDay(s));
}

const isEmpty = (v: unknown) => v === undefined || v === null || v === '';

/** A number's text as the line spells it (a canonical line: `String`), or a text's. */
function numberText(v: unknown): string | undefined {
  return typeof v === 'number' ? String(v) : typeof v === 'string' ? v : undefined;
}

const isPrimitiveList = (v: unknown) =>
  !Array.isArray(v) ||
  v.every((x) => x === null || typeof x === 'number' || typeof x === 'boolean');
const isDateList = (v: unknown) =>
  !Array.isArray(v) || v.every((x) => typeof x === 'string' && !x.includes(']') && dateKept(x));

/** What the value of a nested object's key must be, by what its field is. */
export interface KeyRule {
  /** A list, or null. */
  list?: boolean;
  /** Objects: a list or an object, or null. */
  objects?: boolean;
  /** Not a text (a number or a boolean field). */
  decoded?: boolean;
  /** If a list, its items numbers, booleans or null. */
  decodedList?: boolean;
  /** If a text, kept as a date field keeps it. */
  date?: boolean;
  /** If a list, its items texts without `]`, each kept as a date field keeps it. */
  dateList?: boolean;
}

/**
 * The rules of the keys of nested objects under a field, at any depth, by name (a key that two
 * nested objects define alike gets the rules of both). line-scan.ts reads the same rules.
 */
export function keyRules(
  fields: FieldMap,
  into = new Map<string, KeyRule>(),
): Map<string, KeyRule> {
  const rule = (name: string) => {
    const found = into.get(name) ?? {};
    into.set(name, found);
    return found;
  };
  for (const [name, def] of Object.entries(fields)) {
    if (def.kind === 'objects') {
      rule(name).objects = true;
      keyRules(def.fields, into);
      continue;
    }
    const list = def.kind === 'list';
    const scalar = list ? def.of : def.kind;
    if (list) rule(name).list = true;
    if (DECODED.includes(scalar)) rule(name)[list ? 'decodedList' : 'decoded'] = true;
    if (scalar === 'date') rule(name)[list ? 'dateList' : 'date'] = true;
  }
  return into;
}

/** Why a nested key's value `v` breaks its rule, or undefined. */
function ruleBroken(rule: KeyRule, v: unknown): string | undefined {
  if (rule.list && v !== null && !Array.isArray(v)) return 'a list not a list';
  if (rule.objects && (v === null ? false : typeof v !== 'object')) return 'objects not objects';
  if ((rule.decoded && typeof v === 'string') || (rule.decodedList && !isPrimitiveList(v))) {
    return 'a number as text';
  }
  if ((rule.date && typeof v === 'string' && !dateKept(v)) || (rule.dateList && !isDateList(v))) {
    return 'not a real date';
  }
  return undefined;
}

/**
 * How a nested value is walked: `text` tests each text and key (a list of numbers holds none,
 * a list of dates only real dates), `keys` each key's value by its name.
 */
interface Walk {
  text?: (s: string) => string | undefined;
  keys?: Map<string, KeyRule>;
}

/**
 * Why a nested value (below a list or objects field) is in doubt: a text or key empty or
 * holding a quote or `[]`, an empty list, a number with an exponent or a run of 16 digits (one
 * a double would round, or spell otherwise), or a test of `walk`'s.
 */
function walkValue(v: unknown, walk: Walk): string | undefined {
  if (typeof v === 'string') {
    if (v === '' || v.includes('"') || v.includes('[]'))
      return 'an empty text, or a quote or [] in one';
    return walk.text?.(v);
  }
  if (typeof v === 'number') {
    return NUMBER_IN_DOUBT.test(String(v)) ? 'a number spelt otherwise' : undefined;
  }
  if (v === null || typeof v !== 'object') return undefined;
  if (Array.isArray(v)) {
    if (v.length === 0) return 'an empty list';
    for (const item of v) {
      const why = walkValue(item, walk);
      if (why !== undefined) return why;
    }
    return undefined;
  }
  const object = v as Record<string, unknown>;
  for (const key in object) {
    if (key === '' || key.includes('"') || key.includes('[]'))
      return 'an empty key, or a quote or [] in one';
    const value = object[key];
    const rule = walk.keys?.get(key);
    const why = (rule && ruleBroken(rule, value)) ?? walk.text?.(key) ?? walkValue(value, walk);
    if (why !== undefined) return why;
  }
  return undefined;
}

/** The test of a list or objects field's value (stored as its JSON text). */
function jsonCheck(def: FieldDef | undefined): CellCheck {
  const walk: Walk = {};
  if (def?.kind === 'list' && DECODED.includes(def.of)) walk.text = () => 'a number as text';
  if (def?.kind === 'list' && def.of === 'date') {
    walk.text = (s) => (dateKept(s) ? undefined : 'not a real date');
  }
  if (def?.kind === 'objects') walk.keys = keyRules(def.fields);
  const list = def?.kind === 'list';
  return (v) => {
    if (isEmpty(v) || (Array.isArray(v) && v.length === 0)) return undefined;
    if (list ? !Array.isArray(v) : typeof v !== 'object') return `not ${list ? 'a list' : 'JSON'}`;
    return walkValue(v, walk);
  };
}

/** The test of a field's value for a column of `type`. */
export function cellCheck(type: ColumnType, def: FieldDef | undefined): CellCheck {
  const numeric = (re: RegExp, v: unknown) => {
    const s = numberText(v);
    return s !== undefined && numberKept(re, s);
  };
  switch (type) {
    case 'text':
      return (v) => (isEmpty(v) || typeof v === 'string' ? undefined : 'not text');
    case 'integer':
      return (v) => (isEmpty(v) || numeric(INTEGER, v) ? undefined : 'not a 15-digit integer');
    case 'real':
      return (v) => (isEmpty(v) || numeric(REAL, v) ? undefined : 'not a 15-digit number');
    case 'boolean':
      return (v) =>
        isEmpty(v) || typeof v === 'boolean' || (typeof v === 'string' && BOOLEAN_TEXT.has(v))
          ? undefined
          : 'not a boolean';
    case 'timestamp':
      return (v) =>
        isEmpty(v) || (typeof v === 'string' && realTime(v))
          ? undefined
          : 'not a time in the service form';
    default:
      return jsonCheck(def);
  }
}

/**
 * The test of a line of `fields`: at most `maxBytes`, a JSON object of their keys as
 * `JSON.stringify` writes it (see the top of this file), with no `\u` escape (a control
 * character, NUL or a lone surrogate, which the writers may spell otherwise), each value
 * passing its field's test, and each of `keyed` (a merge's key) not empty.
 */
export function lineCheck(
  fields: readonly CheckedField[],
  maxBytes: number,
  keyed: readonly string[] = [],
  /** Told the key of each line taken: the JSON text of its values (check-lines.ts). */
  onKey?: (key: string) => void,
): LineCheck {
  const checks = new Map(fields.map((f) => [f.key, cellCheck(f.type, f.def)]));
  return (line, bytes) => {
    if (bytes > maxBytes) return 'over the record size limit';
    if (line.charCodeAt(0) !== 0x7b) return 'not a JSON object';
    if (line.includes('\\u')) return 'a \\u escape';
    // A byte that is not UTF-8 (DuckDB would refuse it; sluice's reject keeps it).
    if (line.includes('\uFFFD')) return 'a replacement character';
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return 'not JSON';
    }
    if (JSON.stringify(record) !== line) return 'not as JSON.stringify writes it';
    for (const key of Object.keys(record)) {
      const check = checks.get(key);
      if (check === undefined) return `a key the table has no column for (${key})`;
      const why = check(record[key]);
      if (why !== undefined) return `${key}: ${why}`;
    }
    for (const key of keyed) {
      const v = record[key];
      if (isEmpty(v) || (Array.isArray(v) && v.length === 0)) return `no ${key}`;
    }
    // A line taken is as JSON.stringify writes it: its values' text is the line's.
    if (onKey !== undefined && keyed.length > 0) {
      onKey(keyed.map((key) => JSON.stringify(record[key])).join(','));
    }
    return undefined;
  };
}
