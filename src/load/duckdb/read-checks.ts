import type { FieldDef, FieldMap, ScalarKind } from '../../catalog.js';
import { type ColumnType, declaredColumnType } from '../../schema/types.js';

/**
 * The SQL that tells, cell by cell, whether DuckDB reading an NDJSON line gives exactly what
 * sluice's decoding (records/decode.ts, records/numbers.ts) writes, and the value it writes
 * (see read-file.ts). Every test is a sufficient condition, never a necessary one: a cell in
 * doubt sends its file down sluice's own path, which decides, so a test may refuse more than it
 * must but never less.
 */

/**
 * A line `l` (its keys `k`, from `json_keys`) that sluice reads as a record with no doubt about the line itself: within `maxBytes`,
 * a JSON object, no NUL, each key once and one of `keys` (SQL texts). (Its numbers are
 * looked at in the cells: `cellOf`.)
 */
export function lineKept(l: string, k: string, maxBytes: number, keys: readonly string[]): string {
  return [
    `strlen(${l}) <= ${maxBytes}`,
    // Valid JSON (else its keys could not be read, and the file goes back), and an object.
    `starts_with(${l}, '{')`,
    `NOT contains(${l}, chr(0))`,
    `NOT contains(${l}, '\\u0000')`,
    `len(${k}) = len(list_distinct(${k}))`,
    `len(list_filter(${k}, x -> NOT list_contains([${keys.join(', ')}], x))) = 0`,
  ]
    .map((test) => `coalesce(${test}, false)`)
    .join(' AND ');
}

/** The column type a field must already have for its values to go in as they are. */
export function columnOf(def: FieldDef | undefined): ColumnType {
  return def === undefined ? 'text' : declaredColumnType(def);
}

/** The service's form of a time, its fields in their ranges (the day is checked by a cast). */
const COMMON_TIME =
  '[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z';
/** records/types.ts's DATE_SHAPE, as RE2 reads it. */
const DATE_SHAPE =
  '[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?';

/**
 * A real time in the service's form (a real day of a year from 1). (Every test here
 * is false, never NULL, where a cast fails: a NULL inside a list's test would pass it.)
 */
function realTime(s: string): string {
  return (
    `coalesce(regexp_full_match(${s}, '${COMMON_TIME}') AND left(${s}, 4) <> '0000' AND ` +
    `TRY_CAST(left(${s}, 10) AS DATE) IS NOT NULL, false)`
  );
}

/** Text `d` that a date field keeps as it is: not date-shaped, or a real time or date. */
function dateKept(d: string): string {
  return (
    `coalesce(NOT regexp_full_match(${d}, '${DATE_SHAPE}') OR ${realTime(d)} OR ` +
    `(regexp_full_match(${d}, '[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])') AND ` +
    `left(${d}, 4) <> '0000' AND TRY_CAST(${d} AS DATE) IS NOT NULL), false)`
  );
}

/** Every string of JSON text `j` (holding no escaped quote) passes `test` (a lambda of s). */
function everyString(j: string, test: string): string {
  return `list_bool_and(list_transform(regexp_extract_all(${j}, '"([^"]*)"', 1), s -> ${test})) IS NOT FALSE`;
}

const quote = (pattern: string) => `'${pattern.replaceAll("'", "''")}'`;
const has = (j: string, pattern: string) => `regexp_matches(${j}, ${quote(pattern)})`;

function escapeRegex(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
}

/** Scalar kinds whose text sluice decodes into another value (a number, a boolean). */
const DECODED: readonly ScalarKind[] = ['number', 'integer', 'boolean'];

/** The fields of nested objects under a field, at any depth, by what their value must be. */
interface NestedKeys {
  /** Lists, and objects (a list or an object): their value is one, or null. */
  lists: Set<string>;
  objects: Set<string>;
  /** Numbers and booleans, and lists of them: their value holds no text (it would be decoded). */
  decoded: Set<string>;
  decodedLists: Set<string>;
  /** Dates, and lists of dates: each text a real date, or not date-shaped. */
  dates: Set<string>;
  dateLists: Set<string>;
}

function nestedKeys(fields: FieldMap, into?: NestedKeys): NestedKeys {
  const keys = into ?? {
    lists: new Set(),
    objects: new Set(),
    decoded: new Set(),
    decodedLists: new Set(),
    dates: new Set(),
    dateLists: new Set(),
  };
  for (const [name, def] of Object.entries(fields)) {
    const key = escapeRegex(name);
    if (def.kind === 'objects') {
      keys.objects.add(key);
      nestedKeys(def.fields, keys);
      continue;
    }
    const list = def.kind === 'list';
    if (list) keys.lists.add(key);
    const scalar = list ? def.of : def.kind;
    if (DECODED.includes(scalar)) (list ? keys.decodedLists : keys.decoded).add(key);
    if (scalar === 'date') (list ? keys.dateLists : keys.dates).add(key);
  }
  return keys;
}

/**
 * Tests on JSON text `j` for the fields of nested objects under a field, by key (a key that
 * two nested objects define alike gets both tests), one pattern for all keys of a kind.
 */
function nestedTests(j: string, fields: FieldMap, into: Set<string>): void {
  const keys = nestedKeys(fields);
  const any = (set: Set<string>) => `"(?:${[...set].join('|')})":`;
  if (keys.lists.size > 0) into.add(`NOT ${has(j, `${any(keys.lists)}[^\\[n]`)}`);
  if (keys.objects.size > 0) into.add(`NOT ${has(j, `${any(keys.objects)}[^\\[{n]`)}`);
  if (keys.decoded.size > 0) into.add(`NOT ${has(j, `${any(keys.decoded)}"`)}`);
  // A list's items hold no bracket outside a string.
  if (keys.decodedLists.size > 0) {
    into.add(`NOT ${has(j, `${any(keys.decodedLists)}\\[[^\\]]*"`)}`);
  }
  if (keys.dates.size > 0) {
    const values = `regexp_extract_all(${j}, ${quote(`${any(keys.dates)}("[^"]*")`)}, 1)`;
    into.add(
      `list_bool_and(list_transform(${values}, v -> ${everyString('v', dateKept('s'))})) IS NOT FALSE`,
    );
  }
  if (keys.dateLists.size > 0) {
    const values = `regexp_extract_all(${j}, ${quote(`${any(keys.dateLists)}(\\[[^\\]]*\\])`)}, 1)`;
    // A list whose text holds a bracket is in doubt: its items could not all be read.
    into.add(
      `list_bool_and(list_transform(${values}, v -> regexp_full_match(v, '\\[("[^"\\]]*",?)*\\]') AND ${everyString('v', dateKept('s'))})) IS NOT FALSE`,
    );
  }
}

/**
 * No key twice in one object of cell `c` (`bare`: its text): it holds no brace, or is one
 * object, or a list of objects, none holding another (whose keys are looked at); anything
 * deeper, or a brace in a text, is in doubt.
 */
function keysOnce(bare: string, c: string): string {
  return (
    `(NOT contains(${bare}, '{') OR ` +
    `(regexp_full_match(${bare}, '\\{[^{}]*\\}') AND len(json_keys(${c})) = len(list_distinct(json_keys(${c})))) OR ` +
    `(regexp_full_match(${bare}, '\\[(\\{[^{}]*\\},?)*\\]') AND ` +
    `list_bool_and(list_transform(json_keys(${c}, '$[*]'), k -> len(k) = len(list_distinct(k)))) IS NOT FALSE))`
  );
}

/**
 * JSON text `j` of cell `c` (DuckDB's, as yyjson writes it) that is what JSON.stringify of
 * sluice's decoding writes for a field of `def` (a list or objects field).
 */
export function jsonKept(j: string, c: string, def: FieldDef | undefined): string {
  const tests = new Set([
    // No escape that the two writers could spell differently, and so no escaped quote, which
    // makes every string `"[^"]*"`.
    `NOT contains(${j}, '\\u')`,
    `NOT contains(${j}, '\\"')`,
    // No empty text or list, which decode to null.
    `NOT contains(${j}, '""')`,
    `NOT contains(${j}, '[]')`,
    // Numbers as both write them (its text with every string emptied): no exponent, no whole
    // double (`2.0`), no -0, no run of 16 digits (an integer past 2^53, or one a double would
    // round, or 1e-400 spelt out: 0 to DuckDB, a reject to sluice).
    `NOT ${has(`regexp_replace(${j}, '"[^"]*"', '', 'g')`, '[0-9][eE]|[0-9]{16}|[0-9]\\.0*[,\\]}]|[\\[:,]-0[,\\]}]')}`,
  ]);
  if (def?.kind === 'list') {
    if (DECODED.includes(def.of)) tests.add(`NOT contains(${j}, '"')`);
    if (def.of === 'date') tests.add(everyString(j, dateKept('s')));
  }
  if (def?.kind === 'objects') nestedTests(j, def.fields, tests);
  tests.add(keysOnce(j, c));
  return [...tests].join(' AND ');
}

/**
 * A field's cell `c` (JSON; NULL when the line has no such key): when it reads exactly (`ok`),
 * and the value then written, for a column of `type`.
 */
export function cellOf(
  c: string,
  type: ColumnType,
  def: FieldDef | undefined,
): { ok: string; value: string } {
  const t = `json_type(${c})`;
  const s = `json_extract_string(${c}, '$')`;
  let empty = `(${c} IS NULL OR ${t} = 'NULL' OR (${t} = 'VARCHAR' AND ${s} = ''))`;
  // A double DuckDB read as 0 may be a number sluice refuses (1e-400: it rounds to 0).
  const numeric = `${t} IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'VARCHAR') AND NOT (${t} = 'DOUBLE' AND TRY_CAST(${s} AS DOUBLE) = 0)`;
  let ok: string;
  let value: string;
  switch (type) {
    case 'text':
      ok = `${t} = 'VARCHAR'`;
      value = s;
      break;
    case 'integer':
      ok = `${numeric} AND regexp_full_match(${s}, '-?[0-9]{1,15}(\\.0+)?')`;
      value = `TRY_CAST(${s} AS BIGINT)`;
      break;
    case 'real':
      ok =
        `${numeric} AND regexp_full_match(${s}, '-?[0-9]{1,15}(\\.[0-9]{1,20})?') ` +
        `AND NOT regexp_full_match(${s}, '-0(\\.0*)?')`;
      value = `TRY_CAST(${s} AS DOUBLE)`;
      break;
    case 'boolean':
      ok = `(${t} = 'BOOLEAN' OR (${t} = 'VARCHAR' AND ${s} IN ('true', 'True', 'TRUE', 'false', 'False', 'FALSE')))`;
      value = `${s} IN ('true', 'True', 'TRUE')`;
      break;
    case 'timestamp':
      ok = `${t} = 'VARCHAR' AND ${realTime(s)}`;
      value = `TRY_CAST(${s} AS TIMESTAMPTZ)`;
      break;
    default: {
      const j = `CAST(${c} AS VARCHAR)`;
      // Told by its first character (minified JSON): an array, or an object.
      const shape = def?.kind === 'list' ? `starts_with(${j}, '[')` : `left(${j}, 1) IN ('[', '{')`;
      // An empty list is null, as sluice decodes it.
      empty = `(${c} IS NULL OR ${j} IN ('null', '""', '[]'))`;
      ok = `${shape} AND ${jsonKept(j, c, def)}`;
      value = c;
    }
  }
  // A test that is NULL (a cast that failed) is a doubt, never a pass.
  return {
    ok: `coalesce(${empty} OR (${ok}), false)`,
    value: `CASE WHEN ${empty} THEN NULL ELSE ${value} END`,
  };
}
