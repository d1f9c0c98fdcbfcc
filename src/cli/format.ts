import {
  closest,
  DATA_TYPES,
  type DataType,
  fieldPaths,
  isDataType,
  resolveField,
  type UnknownField,
  unknownFieldsWarning,
} from '../catalog.js';
import { UsageError } from '../errors.js';
import type { IncrementalRange } from '../pipeline/index.js';
import { checkQuery } from '../query/index.js';
import { num, plural } from '../util/words.js';
import { formatTable } from './output.js';

/** Helpers the service commands share: argument checks and the readable form of records. */

export { plural };

const NOUNS: Record<DataType, [string, string]> = {
  properties: ['property', 'properties'],
  businesses: ['business', 'businesses'],
  products: ['product', 'products'],
  people: ['person', 'people'],
};

/** `1 property`, `1,234 properties`. */
export function countOf(n: number, type: DataType): string {
  const [one, many] = NOUNS[type];
  return plural(n, one, many);
}

export function credits(n: number | null | undefined): string {
  return n === undefined || n === null ? 'unknown' : plural(n, 'credit');
}

/** `properties`, or a UsageError that lists the types and suggests the closest one. */
export function dataTypeArg(value: unknown): DataType {
  if (isDataType(value)) return value;
  const text = String(value);
  const hint = closest(text, DATA_TYPES);
  throw new UsageError(
    `unknown data type '${text}': use one of ${DATA_TYPES.join(', ')}${hint ? ` (did you mean ${hint}?)` : ''}`,
  );
}

/** `--fields a,b --fields c` and `--fields a,b,c` alike: trimmed, without empty entries. */
export function listArg(value: string | readonly string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const parts = (typeof value === 'string' ? [value] : value).flatMap((v) => String(v).split(','));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

export function intArg(value: unknown, flag: string, min: number, max?: number): number {
  if (value === undefined)
    throw new UsageError(`give ${flag} N, a whole number of at least ${min}`);
  return numberArg(value, flag, max === undefined ? { min } : { min, max });
}

/** The numbers a flag takes: from `min` (or above `over`) to `max`; whole ones unless told. */
export interface NumberRange {
  min?: number;
  over?: number;
  max?: number;
  whole?: boolean;
}

/**
 * The flag's value as a number in its range, or a UsageError that says the range and what was
 * given (`--parallel must be a whole number from 1 to 64, not abc`).
 */
export function numberArg(value: unknown, flag: string, range: NumberRange): number {
  const { min, over, max, whole = true } = range;
  const text = Array.isArray(value) ? value.join(' ') : String(value);
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\s*[-+]?\d+(\.\d+)?\s*$/.test(value)
        ? Number(value)
        : Number.NaN;
  const fits =
    Number.isFinite(n) &&
    (!whole || Number.isInteger(n)) &&
    (min === undefined || n >= min) &&
    (over === undefined || n > over) &&
    (max === undefined || n <= max);
  if (fits) return n;
  if (Array.isArray(value)) throw new UsageError(`give ${flag} once, not ${value.length} times`);
  const bounds = [
    min !== undefined && max !== undefined ? `from ${num(min)} to ${num(max)}` : undefined,
    min !== undefined && max === undefined ? `at least ${num(min)}` : undefined,
    over !== undefined ? `above ${num(over)}` : undefined,
    min === undefined && max !== undefined ? `at most ${num(max)}` : undefined,
  ].filter((b) => b !== undefined);
  const given = value === true || text.trim() === '' ? 'nothing' : text;
  throw new UsageError(
    `${flag} must be ${whole ? 'a whole number' : 'a number'}${bounds.length > 0 ? ` ${bounds.join(' and ')}` : ''}, not ${given}`,
  );
}

/**
 * A flag that takes a number in a range, checked as the command line is read: a value out of
 * range is a usage error (exit 2) before the command does anything, e.g. writes a run's state.
 */
export function numberFlag(
  flag: string,
  range: NumberRange,
  describe: string,
  defaultValue?: number,
) {
  return {
    describe,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
    coerce: (value: unknown): number => numberArg(value, `--${flag}`, range),
  };
}

/** A query given as several words (`city:Austin AND province:TX` unquoted) is one query. */
export function queryArg(value: string | readonly string[] | undefined): string {
  const query = (typeof value === 'string' ? value : (value ?? []).join(' ')).trim();
  if (query === '') throw new UsageError('the query is empty: give one, e.g. "city:Austin"');
  return query;
}

const DEFAULT_COLUMNS: Record<DataType, string[]> = {
  properties: ['id', 'address', 'city', 'province', 'propertyType', 'mostRecentPriceAmount'],
  businesses: ['id', 'name', 'city', 'province', 'primaryCategories'],
  products: ['id', 'name', 'brand', 'mostRecentPriceAmount'],
  people: ['id', 'firstName', 'lastName', 'city', 'province'],
};

/**
 * How a command treats fields sluice's catalogue does not list: it warns (on stderr, through the
 * log) and sends them, as the service may know them; `--strict-fields` refuses them.
 */
export interface FieldCheck {
  strict: boolean;
  warn: (message: string) => void;
}

export const STRICT_FIELDS_HINT = '--strict-fields refuses such fields';

/**
 * Checks a query before any request: a syntax error, or a value that cannot apply to its
 * field, is refused (SLUICE_QUERY_SYNTAX, SLUICE_QUERY_FIELD); a field the catalogue does not
 * list is a warning, or refused with `--strict-fields`.
 */
export function checkQueryArg(type: DataType, query: string, fields: FieldCheck): void {
  const { unknown } = checkQuery(query, type, { strict: fields.strict });
  if (unknown.length === 0) return;
  fields.warn(
    `query: ${unknownFieldsWarning(unknown, type, `sent as written, the service decides; ${STRICT_FIELDS_HINT}`)}`,
  );
}

/**
 * Checks `--columns` against the catalogue before anything is spent: a column it does not list
 * is shown if the records have it, with a warning, or refused with `--strict-fields`.
 */
export function checkColumns(type: DataType, columns: readonly string[], fields: FieldCheck): void {
  const unknown: UnknownField[] = [];
  for (const column of columns) {
    if (resolveField(type, column)) continue;
    const hint = closest(column, fieldPaths(type));
    if (fields.strict) {
      throw new UsageError(
        `unknown column '${column}': ${type} records have no such field${hint ? ` (did you mean ${hint}?)` : ''}`,
      );
    }
    unknown.push({ field: column, suggestion: hint });
  }
  if (unknown.length > 0) {
    fields.warn(
      `--columns: ${unknownFieldsWarning(unknown, type, `shown where the records have it; ${STRICT_FIELDS_HINT}`)}`,
    );
  }
}

/** `--strict-fields` on the service commands that check fields. */
export const strictFieldsFlag = {
  type: 'boolean',
  default: false,
  describe:
    "Refuse fields sluice's catalogue does not list instead of warning and sending them as written",
} as const;

/** The FieldCheck of a command's flags, warning through the context's log. */
export function fieldCheck(
  args: { 'strict-fields'?: boolean },
  logger: { warn: (message: string) => void },
): FieldCheck {
  return { strict: args['strict-fields'] === true, warn: (message) => logger.warn(message) };
}

/**
 * The columns to show: the requested ones, else the usual ones the records carry, else (a view
 * that drops them) the first fields the records have.
 */
export function chooseColumns(
  type: DataType,
  records: readonly Record<string, unknown>[],
  requested?: readonly string[],
): string[] {
  if (requested && requested.length > 0) return [...requested];
  const present = new Set(records.flatMap((r) => Object.keys(r)));
  const usual = DEFAULT_COLUMNS[type].filter((c) => present.has(c));
  return usual.length > 0 ? usual : [...present].slice(0, 8);
}

export function recordsTable(
  records: readonly Record<string, unknown>[],
  columns: readonly string[],
): string {
  return formatTable(
    [...columns],
    records.map((record) => columns.map((column) => compact(valueAt(record, column)))),
  );
}

/** A dotted path into a record; through arrays of objects it collects every element's value. */
export function valueAt(value: unknown, path: string): unknown {
  let current: unknown = value;
  for (const part of path.split('.')) {
    if (Array.isArray(current)) {
      current = current.flatMap((item) => {
        const inner = isObject(item) ? item[part] : undefined;
        return inner === undefined ? [] : [inner];
      });
    } else if (isObject(current)) {
      current = current[part];
    } else {
      return undefined;
    }
  }
  return current;
}

const CELL_MAX = 40;

/** One short line for any value: lists joined with commas, objects as key=value pairs. */
export function compact(value: unknown): string {
  const text = compactText(value);
  return text.length > CELL_MAX ? `${text.slice(0, CELL_MAX - 1)}…` : text;
}

function compactText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) {
    const parts = value.flat().map(compactText);
    return value.some(isObject) ? `(${value.length}) ${parts.join(' | ')}` : parts.join(', ');
  }
  if (isObject(value)) {
    return Object.entries(value)
      .filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => `${k}=${compactText(v)}`)
      .join(' ');
  }
  return String(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The job's table and how many related tables it also wrote (`--json` lists them all). */
export function tablesText(tables: string[]): string {
  const [main, ...rest] = tables;
  return rest.length === 0 ? (main ?? '') : `${main} (+${rest.length} related)`;
}

export function creditsText(credits: Partial<Record<string, number>>): string {
  const parts = Object.entries(credits).filter(([, n]) => n !== undefined);
  return parts.length === 0
    ? '-'
    : parts.map(([t, n]) => `${n!.toLocaleString('en-US')} ${t}`).join(', ');
}

/** An incremental job's range and cursor, in a line: what it downloaded and where it got to. */
export function rangeText(range: IncrementalRange): string {
  const what =
    range.from === null
      ? `every record${range.full_refresh ? ' (--full-refresh)' : ''}`
      : `${range.cursor} since ${range.from}${range.full_refresh ? ' (--full-refresh)' : ''}`;
  const next = range.next ?? null;
  if (range.kept) return `${what}; cursor stays at ${next ?? '(none)'}: ${range.kept}`;
  if (next === null) return `${what}; no cursor`;
  return next === range.last ? `${what}; cursor stays at ${next}` : `${what}; cursor now ${next}`;
}
