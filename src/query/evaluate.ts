// Longer than most files on purpose: the evaluator mirrors the parser, one case per kind of term
// (values, wildcards, ranges, nested paths, address matching), and reads best beside itself.
import { type DataType, FIELDS, type FieldDef, resolveField } from '../catalog.js';
import type { QueryNode, TermNode, TermValue } from './ast.js';

export type RecordPredicate = (record: Record<string, unknown>) => boolean;

export interface CompileOptions {
  /** 'on' (default): `address` terms compare normalized forms; 'off': exactly as written. */
  addressMatching?: 'on' | 'off';
  /** The definition of a dotted field path: the catalogue's by default. */
  schema?: (path: string) => FieldDef | undefined;
}

interface Compiling {
  type: DataType;
  address: 'on' | 'off';
  schema: (path: string) => FieldDef | undefined;
}

/**
 * Compiles a query into a predicate over records (plain JSON objects, absent fields for no
 * value). The emulator scans up to a million records per search, so everything that depends
 * only on the query is worked out here, once: the predicate itself does not parse, lower-case
 * or allocate on the common paths.
 */
export function compileQuery(
  ast: QueryNode,
  type: DataType,
  options: CompileOptions = {},
): RecordPredicate {
  return compileNode(ast, {
    type,
    address: options.addressMatching ?? 'on',
    schema: options.schema ?? ((path) => resolveField(type, path)),
  });
}

/**
 * The form addresses are compared in when address matching is on: lower case, punctuation
 * dropped, whitespace collapsed, and street-type and direction words abbreviated the same way.
 */
export function addressKey(address: string): string {
  const words: string[] = [];
  for (const part of address.toLowerCase().split(/\s+/)) {
    const word = part.replace(/[^\p{L}\p{N}]+/gu, '');
    if (word) words.push(ABBREVIATIONS.get(word) ?? word);
  }
  return words.join(' ');
}

type Test = (value: unknown) => boolean;
type Kind = 'string' | 'number' | 'boolean' | 'date' | 'objects';

const always: RecordPredicate = () => true;
const never = (): boolean => false;

function compileNode(node: QueryNode, c: Compiling): RecordPredicate {
  switch (node.type) {
    case 'all':
      return always;
    case 'not': {
      const child = compileNode(node.child, c);
      return (record) => !child(record);
    }
    case 'and':
      return every(node.children.map((child) => compileNode(child, c)));
    case 'or':
      return some(node.children.map((child) => compileNode(child, c)));
    case 'term':
      return compileTerm(node, c);
  }
}

function every(parts: RecordPredicate[]): RecordPredicate {
  if (parts.length === 2) {
    const [a, b] = parts as [RecordPredicate, RecordPredicate];
    return (record) => a(record) && b(record);
  }
  return (record) => {
    for (let i = 0; i < parts.length; i++) if (!parts[i]!(record)) return false;
    return true;
  };
}

function some(parts: RecordPredicate[]): RecordPredicate {
  if (parts.length === 2) {
    const [a, b] = parts as [RecordPredicate, RecordPredicate];
    return (record) => a(record) || b(record);
  }
  return (record) => {
    for (let i = 0; i < parts.length; i++) if (parts[i]!(record)) return true;
    return false;
  };
}

function compileTerm(node: TermNode, c: Compiling): RecordPredicate {
  const { address } = c;
  const value = node.value;
  if (node.field === null) {
    const fields = textFields(c.type);
    const test = valueTest(value, 'string');
    return (record) => {
      for (let i = 0; i < fields.length; i++) if (anyLeaf(record[fields[i]!], test)) return true;
      return false;
    };
  }
  const def = c.schema(node.field);
  if (!def) return untypedTerm(node.field, value);
  const test =
    node.field === 'address' && (value.kind === 'exact' || value.kind === 'prefix')
      ? addressTest(value, address)
      : valueTest(value, kindOf(def));
  const parts = node.field.split('.');
  if (parts.length === 1) {
    const name = parts[0]!;
    return (record) => anyLeaf(record[name], test);
  }
  return (record) => anyAt(record, parts, 0, test);
}

/**
 * A field the schema does not know matches on the data the record has, as a service matches a
 * field it knows and its client does not: each value is compared as what it is (a number as a
 * number, true or false as such, text as text or as a date), and text that reads as a number
 * as a number when the term's values do too.
 * The path is read through own properties only, so that a name such as 'constructor' never
 * reaches into the prototype of a record.
 */
function untypedTerm(field: string, value: TermValue): RecordPredicate {
  const asNumber = valueTest(value, 'number');
  const asBoolean = valueTest(value, 'boolean');
  const asDate = valueTest(value, 'date');
  const asText = valueTest(value, 'string');
  const numeric = numericTerm(value);
  const test: Test = (v) => {
    switch (typeof v) {
      case 'number':
        return asNumber(v);
      case 'boolean':
        return asBoolean(v);
      case 'string':
        return numeric && NUMBER_TEXT.test(v) ? asNumber(v) : asText(v) || asDate(v);
      default:
        // A nested object (or list of them) only answers whether it is there.
        return value.kind === 'exists' && isPresent(v);
    }
  };
  const parts = field.split('.');
  return (record) => ownAt(record, parts, 0, test);
}

/** Whether every value a term names reads as a number (`5`, `[1 TO *]`, `>2.5`). */
function numericTerm(value: TermValue): boolean {
  const texts =
    value.kind === 'exact'
      ? [value.text]
      : value.kind === 'range'
        ? [value.lower, value.upper].filter((text) => text !== null)
        : [];
  return texts.length > 0 && texts.every((text) => NUMBER_TEXT.test(text.trim()));
}

const NUMBER_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** anyAt through own properties only (see untypedTerm). */
function ownAt(value: unknown, parts: readonly string[], depth: number, test: Test): boolean {
  if (depth === parts.length) return anyLeaf(value, test);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (ownAt(value[i], parts, depth, test)) return true;
    return false;
  }
  if (value === null || typeof value !== 'object') return false;
  const part = parts[depth]!;
  if (!Object.hasOwn(value, part)) return false;
  return ownAt((value as Record<string, unknown>)[part], parts, depth + 1, test);
}

function kindOf(def: FieldDef): Kind {
  const kind = def.kind === 'list' ? def.of : def.kind;
  return kind === 'integer' ? 'number' : kind;
}

/** A list value matches when any element does. */
function anyLeaf(value: unknown, test: Test): boolean {
  if (!Array.isArray(value)) return test(value);
  for (let i = 0; i < value.length; i++) if (test(value[i])) return true;
  return false;
}

/** Descends a dotted path; arrays of objects on the way make the match existential. */
function anyAt(value: unknown, parts: readonly string[], depth: number, test: Test): boolean {
  if (depth === parts.length) return anyLeaf(value, test);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (anyAt(value[i], parts, depth, test)) return true;
    return false;
  }
  if (value === null || typeof value !== 'object') return false;
  return anyAt((value as Record<string, unknown>)[parts[depth]!], parts, depth + 1, test);
}

function valueTest(value: TermValue, kind: Kind): Test {
  switch (value.kind) {
    case 'exists':
      return isPresent;
    case 'exact':
      return exactTest(value.text, kind);
    case 'prefix':
      return prefixTest(value.prefix, kind);
    case 'range':
      return rangeTest(value, kind);
  }
}

function isPresent(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

function exactTest(text: string, kind: Kind): Test {
  switch (kind) {
    case 'number': {
      const n = parseNumber(text);
      if (Number.isNaN(n)) return never;
      return (v) => toNumber(v) === n;
    }
    case 'boolean': {
      const lower = text.toLowerCase();
      if (lower !== 'true' && lower !== 'false') return never;
      const b = lower === 'true';
      return (v) => v === b || (typeof v === 'string' && equalsFolded(v, lower, true));
    }
    case 'date': {
      // A date matches at the precision it is written in: 2020-04-12 is the whole day.
      const start = isoMillis(text, false);
      if (!Number.isNaN(start)) {
        const end = isoMillis(text, true);
        return (v) => {
          const t = toMillis(v);
          return t >= start && t < end;
        };
      }
      return stringEquals(text);
    }
    case 'objects':
      return never;
    case 'string':
      return stringEquals(text);
  }
}

function stringEquals(text: string): Test {
  const lower = text.toLowerCase();
  const ascii = isAscii(lower);
  return (v) => typeof v === 'string' && equalsFolded(v, lower, ascii);
}

function prefixTest(prefix: string, kind: Kind): Test {
  const lower = prefix.toLowerCase();
  const ascii = isAscii(lower);
  switch (kind) {
    case 'objects':
      return never;
    case 'number':
    case 'boolean':
      // Rare (`yearBuilt:19*`), so turning each number into text is acceptable here.
      return (v) =>
        (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') &&
        startsWithFolded(String(v), lower, ascii);
    case 'date':
    case 'string':
      return (v) => typeof v === 'string' && startsWithFolded(v, lower, ascii);
  }
}

function rangeTest(range: Extract<TermValue, { kind: 'range' }>, kind: Kind): Test {
  const { lower, upper, includeLower, includeUpper } = range;
  if (kind === 'number') {
    const lo = lower === null ? Number.NEGATIVE_INFINITY : parseNumber(lower);
    const hi = upper === null ? Number.POSITIVE_INFINITY : parseNumber(upper);
    if (Number.isNaN(lo) || Number.isNaN(hi)) return never;
    return (v) => {
      const n = toNumber(v);
      if (Number.isNaN(n)) return false;
      return (includeLower ? n >= lo : n > lo) && (includeUpper ? n <= hi : n < hi);
    };
  }
  if (kind === 'date') {
    // Bounds cover the whole period they name, as for exact dates: [* TO 2020-12-31] takes in
    // all of the 31st and {2020 TO *} starts in 2021. Both become one half-open interval.
    const lo = lower === null ? Number.NEGATIVE_INFINITY : isoMillis(lower, !includeLower);
    const hi = upper === null ? Number.POSITIVE_INFINITY : isoMillis(upper, includeUpper);
    if (!Number.isNaN(lo) && !Number.isNaN(hi)) {
      return (v) => {
        const t = toMillis(v);
        return t >= lo && t < hi;
      };
    }
  }
  if (kind === 'boolean' || kind === 'objects') return never;
  return (v) =>
    typeof v === 'string' &&
    (lower === null || (includeLower ? v >= lower : v > lower)) &&
    (upper === null || (includeUpper ? v <= upper : v < upper));
}

function parseNumber(text: string): number {
  return text.trim() === '' ? Number.NaN : Number(text);
}

function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.length > 0) return Number(v);
  return Number.NaN;
}

function toMillis(v: unknown): number {
  if (typeof v === 'string') return isoMillis(v, false);
  if (typeof v === 'number') return v;
  return Number.NaN;
}

const YEAR = 0;
const MONTH = 1;
const DAY = 2;
const MINUTE = 3;
const SECOND = 4;
const FRACTION = 5;

/**
 * Milliseconds of an ISO 8601 date or date-time: the start of the period it names, or with
 * `end` the first millisecond after it (2020-04 ends at 2020-05-01). Written by hand rather
 * than with Date.parse, which reads a time without a zone as local time and allocates; a
 * missing zone here means UTC. NaN for anything else.
 */
// Over 80 lines on purpose: a hand-written scanner on a hot path (every record's dates), one
// character at a time with no allocation; split, it would pass its position around.
function isoMillis(s: string, end: boolean): number {
  const n = s.length;
  const year = digits(s, 0, 4);
  if (year < 0) return Number.NaN;
  let month = 1;
  let day = 1;
  let hour = 0;
  let minute = 0;
  let second = 0;
  let ms = 0;
  let fractionDigits = 0;
  let unit = YEAR;
  let i = 4;
  if (s.charCodeAt(i) === 45) {
    month = digits(s, i + 1, 2);
    if (month < 1 || month > 12) return Number.NaN;
    i += 3;
    unit = MONTH;
    if (s.charCodeAt(i) === 45) {
      day = digits(s, i + 1, 2);
      if (day < 1 || day > 31) return Number.NaN;
      i += 3;
      unit = DAY;
      const t = s.charCodeAt(i);
      if (t === 84 || t === 116 || t === 32) {
        hour = digits(s, i + 1, 2);
        minute = digits(s, i + 4, 2);
        if (s.charCodeAt(i + 3) !== 58 || hour < 0 || hour > 23 || minute < 0 || minute > 59) {
          return Number.NaN;
        }
        i += 6;
        unit = MINUTE;
        if (s.charCodeAt(i) === 58) {
          second = digits(s, i + 1, 2);
          if (second < 0 || second > 60) return Number.NaN;
          i += 3;
          unit = SECOND;
          const dot = s.charCodeAt(i);
          if (dot === 46 || dot === 44) {
            i++;
            while (i < n) {
              const d = s.charCodeAt(i) - 48;
              if (d < 0 || d > 9) break;
              if (fractionDigits < 3) ms = ms * 10 + d;
              fractionDigits++;
              i++;
            }
            if (fractionDigits === 0) return Number.NaN;
            for (let k = fractionDigits; k < 3; k++) ms *= 10;
            unit = FRACTION;
          }
        }
      }
    }
  }
  let offset = 0;
  if (i < n) {
    const z = s.charCodeAt(i);
    if (z === 90 || z === 122) {
      i++;
    } else if (z === 43 || z === 45) {
      const hours = digits(s, i + 1, 2);
      if (hours < 0) return Number.NaN;
      i += 3;
      if (s.charCodeAt(i) === 58) i++;
      let minutes = 0;
      if (i < n) {
        minutes = digits(s, i, 2);
        if (minutes < 0) return Number.NaN;
        i += 2;
      }
      offset = (z === 43 ? 1 : -1) * (hours * 60 + minutes) * 60_000;
    }
  }
  if (i !== n) return Number.NaN;
  let t: number;
  if (!end) t = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  else if (unit === YEAR) t = Date.UTC(year + 1, 0, 1);
  else if (unit === MONTH) t = Date.UTC(year, month, 1);
  else if (unit === DAY) t = Date.UTC(year, month - 1, day + 1);
  else if (unit === MINUTE) t = Date.UTC(year, month - 1, day, hour, minute + 1);
  else if (unit === SECOND) t = Date.UTC(year, month - 1, day, hour, minute, second + 1);
  else
    t =
      Date.UTC(year, month - 1, day, hour, minute, second, ms) +
      10 ** Math.max(0, 3 - fractionDigits);
  return t - offset;
}

/** The number written in `count` ASCII digits at `at`, or -1. */
function digits(s: string, at: number, count: number): number {
  if (at + count > s.length) return -1;
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    value = value * 10 + d;
  }
  return value;
}

const textFieldCache = new Map<DataType, string[]>();

/** Top-level fields a bare value searches: text and lists of text. */
function textFields(type: DataType): string[] {
  let fields = textFieldCache.get(type);
  if (!fields) {
    fields = Object.entries(FIELDS[type])
      .filter(([, def]) => def.kind === 'string' || (def.kind === 'list' && def.of === 'string'))
      .map(([name]) => name);
    textFieldCache.set(type, fields);
  }
  return fields;
}

// Case-insensitive comparison without lower-casing each record's value: ASCII is folded by
// hand, and only a non-ASCII difference falls back to toLowerCase (which knows Unicode).

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 128) return false;
  return true;
}

function equalsFolded(v: string, lower: string, lowerIsAscii: boolean): boolean {
  const n = v.length;
  if (n !== lower.length) {
    // Lower-casing can lengthen a string ('İ' becomes two code units), never shorten it.
    return n < lower.length && !lowerIsAscii && v.toLowerCase() === lower;
  }
  for (let i = 0; i < n; i++) {
    const c = v.charCodeAt(i);
    const d = lower.charCodeAt(i);
    if (c === d) continue;
    if (c >= 65 && c <= 90) {
      if (c + 32 === d) continue;
      return false;
    }
    if (c < 128) return false;
    return v.toLowerCase() === lower;
  }
  return true;
}

function startsWithFolded(v: string, lower: string, lowerIsAscii: boolean): boolean {
  const m = lower.length;
  if (v.length < m) return !lowerIsAscii && v.toLowerCase().startsWith(lower);
  for (let i = 0; i < m; i++) {
    const c = v.charCodeAt(i);
    const d = lower.charCodeAt(i);
    if (c === d) continue;
    if (c >= 65 && c <= 90) {
      if (c + 32 === d) continue;
      return false;
    }
    if (c < 128) return false;
    return v.toLowerCase().startsWith(lower);
  }
  return true;
}

const ABBREVIATIONS: ReadonlyMap<string, string> = new Map([
  ['street', 'st'],
  ['avenue', 'ave'],
  ['road', 'rd'],
  ['drive', 'dr'],
  ['boulevard', 'blvd'],
  ['lane', 'ln'],
  ['court', 'ct'],
  ['place', 'pl'],
  ['highway', 'hwy'],
  ['parkway', 'pkwy'],
  ['circle', 'cir'],
  ['terrace', 'ter'],
  ['suite', 'ste'],
  ['apartment', 'apt'],
  ['north', 'n'],
  ['south', 's'],
  ['east', 'e'],
  ['west', 'w'],
  ['northeast', 'ne'],
  ['northwest', 'nw'],
  ['southeast', 'se'],
  ['southwest', 'sw'],
]);

/** Each abbreviation with every word that abbreviates to it, the abbreviation first. */
const SPELLINGS = new Map<string, string[]>();
for (const [long, short] of ABBREVIATIONS) {
  const list = SPELLINGS.get(short) ?? [short];
  list.push(long);
  SPELLINGS.set(short, list);
}

function addressTest(
  value: { kind: 'exact'; text: string } | { kind: 'prefix'; prefix: string },
  mode: 'on' | 'off',
): Test {
  if (mode === 'off') {
    if (value.kind === 'exact') {
      const text = value.text;
      return (v) => v === text;
    }
    const prefix = value.prefix;
    return (v) => typeof v === 'string' && v.startsWith(prefix);
  }
  const match =
    value.kind === 'exact' ? addressEquals(value.text) : addressStartsWith(value.prefix);
  return (v) => typeof v === 'string' && match(v);
}

/*
 * The two matchers below give the same answers as comparing addressKey(v) with the query's key,
 * but walk the record's ASCII text in place instead of building its key: each query word is
 * compared with a record word (case folded, punctuation skipped) in any of its spellings. Text
 * with non-ASCII characters, rare in addresses, takes the addressKey path.
 */

function addressEquals(text: string): (v: string) => boolean {
  const key = addressKey(text);
  const words = key === '' ? [] : key.split(' ').map(spellings);
  return (v) => {
    const n = v.length;
    let w = 0;
    let i = 0;
    while (i < n) {
      const c = v.charCodeAt(i);
      if (c >= 128) return addressKey(v) === key;
      if (isSpace(c)) {
        i++;
        continue;
      }
      let hasWord = isWordChar(c);
      let j = i + 1;
      for (; j < n; j++) {
        const d = v.charCodeAt(j);
        if (d >= 128) return addressKey(v) === key;
        if (isSpace(d)) break;
        if (isWordChar(d)) hasWord = true;
      }
      if (hasWord) {
        const forms = words[w];
        if (forms === undefined || !matchesAny(v, i, j, forms)) return false;
        w++;
      }
      i = j;
    }
    return w === words.length;
  };
}

function addressStartsWith(prefix: string): (v: string) => boolean {
  const key = addressKey(prefix);
  if (key === '') return () => true;
  const all = key.split(' ');
  const last = all.pop()!;
  const head = all.map(spellings);
  // A record word that is a long form counts as its abbreviation: 'street' is 'st', so it
  // starts with 's' and 'st' but not with 'str'.
  const accept: string[] = [];
  const reject: string[] = [];
  for (const [long, short] of ABBREVIATIONS) {
    if (short.startsWith(last)) accept.push(long);
    else if (long.startsWith(last)) reject.push(long);
  }
  return (v) => {
    const n = v.length;
    let w = 0;
    let i = 0;
    while (i < n) {
      const c = v.charCodeAt(i);
      if (c >= 128) return addressKey(v).startsWith(key);
      if (isSpace(c)) {
        i++;
        continue;
      }
      let hasWord = isWordChar(c);
      let j = i + 1;
      for (; j < n; j++) {
        const d = v.charCodeAt(j);
        if (d >= 128) return addressKey(v).startsWith(key);
        if (isSpace(d)) break;
        if (isWordChar(d)) hasWord = true;
      }
      if (hasWord) {
        if (w < head.length) {
          if (!matchesAny(v, i, j, head[w]!)) return false;
          w++;
        } else {
          if (matchesAny(v, i, j, accept)) return true;
          if (matchesAny(v, i, j, reject)) return false;
          return wordStartsWith(v, i, j, last);
        }
      }
      i = j;
    }
    return false;
  };
}

function spellings(word: string): string[] {
  return SPELLINGS.get(word) ?? [word];
}

function matchesAny(v: string, start: number, end: number, forms: readonly string[]): boolean {
  for (let f = 0; f < forms.length; f++) if (wordEquals(v, start, end, forms[f]!)) return true;
  return false;
}

/** Whether v[start, end) read as an address word (letters and digits, lower case) is `word`. */
function wordEquals(v: string, start: number, end: number, word: string): boolean {
  let k = 0;
  for (let p = start; p < end; p++) {
    const c = v.charCodeAt(p);
    if (!isWordChar(c)) continue;
    if (k >= word.length || word.charCodeAt(k) !== foldAscii(c)) return false;
    k++;
  }
  return k === word.length;
}

function wordStartsWith(v: string, start: number, end: number, word: string): boolean {
  let k = 0;
  for (let p = start; p < end; p++) {
    const c = v.charCodeAt(p);
    if (!isWordChar(c)) continue;
    if (k === word.length) return true;
    if (word.charCodeAt(k) !== foldAscii(c)) return false;
    k++;
  }
  return k === word.length;
}

/** ASCII whitespace, as /\s/ sees it. */
function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

function isWordChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

function foldAscii(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}
