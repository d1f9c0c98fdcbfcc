import type { FieldDef, FieldMap, ScalarKind } from '../../catalog.js';
import type { ColumnType } from '../../schema/types.js';

/**
 * The SQL that tells, cell by cell, whether DuckDB reading an NDJSON line gives exactly what
 * sluice's decoding (records/decode.ts, records/numbers.ts) writes, and the value it writes
 * (see read-file.ts). Every test is a sufficient condition, never a necessary one: a cell in
 * doubt sends its file down sluice's own path, which decides, so a test may refuse more than it
 * must but never less.
 */

/**
 * A line `l` that sluice reads as a record with no doubt about the line itself: within `maxBytes`,
 * a JSON object, no NUL, each key once and one of `keys` (SQL texts), and outside its strings
 * no number with an exponent or a run of 16 digits (which a double may hold otherwise than
 * sluice: `1e-400` is 0 to DuckDB, a reject to sluice).
 */
export function lineKept(l: string, maxBytes: number, keys: readonly string[]): string {
  const bare = `regexp_replace(${l}, '"([^"\\\\]|\\\\.)*"', '""', 'g')`;
  return [
    `strlen(${l}) <= ${maxBytes}`,
    `json_valid(${l})`,
    `json_type(${l}) = 'OBJECT'`,
    `NOT contains(${l}, chr(0))`,
    `NOT contains(${l}, '\\u0000')`,
    `len(json_keys(${l})) = len(list_distinct(json_keys(${l})))`,
    `len(list_filter(json_keys(${l}), k -> NOT list_contains([${keys.join(', ')}], k))) = 0`,
    `NOT regexp_matches(${bare}, '[0-9][eE]|[0-9]{16}')`,
  ]
    .map((test) => `coalesce(${test}, false)`)
    .join(' AND ');
}

/** The column type a field must already have for its values to go in as they are. */
export function columnOf(def: FieldDef | undefined): ColumnType {
  if (def === undefined) return 'text';
  switch (def.kind) {
    case 'number':
      return 'real';
    case 'integer':
    case 'boolean':
      return def.kind;
    case 'date':
      return 'timestamp';
    case 'list':
    case 'objects':
      return 'json';
    default:
      return 'text';
  }
}

const COMMON_TIME = '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z';
/** records/types.ts's DATE_SHAPE, as RE2 reads it. */
const DATE_SHAPE =
  '[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?';

/**
 * A real time in the service's form: DuckDB reads it back as the same text. (Every test here
 * is false, never NULL, where a cast fails: a NULL inside a list's test would pass it.)
 */
function realTime(s: string): string {
  return (
    `coalesce(regexp_full_match(${s}, '${COMMON_TIME}') AND left(${s}, 4) <> '0000' AND ` +
    `strftime(TRY_CAST(${s} AS TIMESTAMPTZ), '%Y-%m-%dT%H:%M:%SZ') = ${s}, false)`
  );
}

/** Text `d` that a date field keeps as it is: not date-shaped, or a real time or date. */
function dateKept(d: string): string {
  return (
    `coalesce(NOT regexp_full_match(${d}, '${DATE_SHAPE}') OR ${realTime(d)} OR ` +
    `(regexp_full_match(${d}, '[0-9]{4}-[0-9]{2}-[0-9]{2}') AND left(${d}, 4) <> '0000' AND ` +
    `strftime(TRY_CAST(${d} AS DATE), '%Y-%m-%d') = ${d}), false)`
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

/**
 * Tests on JSON text `j` for the fields of nested objects under a field, by key (a key that
 * two nested objects define alike gets both tests): a list or object field's value is one (or
 * null), a number or boolean field's never text (which would be decoded), a date field's text
 * a real date, a list of such the same for each item.
 */
function nestedTests(j: string, fields: FieldMap, into: Set<string>): void {
  for (const [name, def] of Object.entries(fields)) {
    const key = `"${escapeRegex(name)}":`;
    if (def.kind === 'list' || def.kind === 'objects') {
      into.add(`NOT ${has(j, `${key}[^${def.kind === 'list' ? '\\[' : '\\[{'}n]`)}`);
    }
    if (def.kind === 'objects') nestedTests(j, def.fields, into);
    const scalar = def.kind === 'list' ? def.of : def.kind === 'objects' ? undefined : def.kind;
    if (scalar === undefined) continue;
    if (DECODED.includes(scalar)) {
      // No text at all in its value (a list's items hold no bracket outside a string).
      into.add(`NOT ${has(j, def.kind === 'list' ? `${key}\\[[^\\]]*"` : `${key}"`)}`);
    } else if (scalar === 'date') {
      const values =
        def.kind === 'list'
          ? `regexp_extract_all(${j}, ${quote(`${key}(\\[[^\\]]*\\])`)}, 1)`
          : `regexp_extract_all(${j}, ${quote(`${key}("[^"]*")`)}, 1)`;
      // A list whose text holds a bracket is in doubt: its items could not all be read.
      into.add(
        `list_bool_and(list_transform(${values}, v -> ${
          def.kind === 'list' ? `regexp_full_match(v, '\\[("[^"\\]]*",?)*\\]') AND ` : ''
        }${everyString('v', dateKept('s'))})) IS NOT FALSE`,
      );
    }
  }
}

/**
 * JSON text `j` of cell `c` (DuckDB's, as yyjson writes it) that is what JSON.stringify of
 * sluice's decoding writes for a field of `def` (a list or objects field).
 */
export function jsonKept(j: string, c: string, def: FieldDef | undefined): string {
  /** The text with every string emptied: its numbers and structure only. */
  const bare = `regexp_replace(${j}, '"[^"]*"', '""', 'g')`;
  const tests = new Set([
    // No escape that the two writers could spell differently, and so no escaped quote, which
    // makes every string `"[^"]*"`.
    `NOT contains(${j}, '\\u')`,
    `NOT contains(${j}, '\\"')`,
    // No empty text or list, which decode to null.
    `NOT contains(${j}, '""')`,
    `NOT contains(${j}, '[]')`,
    // Numbers as both write them: no exponent, no whole double (`2.0`), no -0, no run of 16
    // digits (an integer past 2^53, or one a double would round).
    `NOT ${has(bare, '[0-9][eE]')}`,
    `NOT ${has(bare, '[0-9]{16}')}`,
    `NOT ${has(bare, '[0-9]\\.0*([^0-9]|$)')}`,
    `NOT ${has(bare, '(^|[^0-9.])-0([^0-9.]|$)')}`,
  ]);
  if (def?.kind === 'list') {
    if (DECODED.includes(def.of)) tests.add(`NOT contains(${j}, '"')`);
    if (def.of === 'date') tests.add(everyString(j, dateKept('s')));
  }
  if (def?.kind === 'objects') nestedTests(j, def.fields, tests);
  // No key twice in one object.
  tests.add(
    `NOT EXISTS (SELECT 1 FROM json_tree(${c}) WHERE key IS NOT NULL GROUP BY parent, key HAVING count(*) > 1)`,
  );
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
  const numeric = `${t} IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'VARCHAR')`;
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
      const shapes = def?.kind === 'list' ? `('ARRAY')` : `('ARRAY', 'OBJECT')`;
      // An empty list is null, as sluice decodes it.
      empty = `(${empty} OR ${j} = '[]')`;
      ok = `${t} IN ${shapes} AND ${jsonKept(j, c, def)}`;
      value = c;
    }
  }
  // A test that is NULL (a cast that failed) is a doubt, never a pass.
  return {
    ok: `coalesce(${empty} OR (${ok}), false)`,
    value: `CASE WHEN ${empty} THEN NULL ELSE ${value} END`,
  };
}
