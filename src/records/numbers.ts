/**
 * Numbers as the file writes them, kept exactly or refused, never changed. `JSON.parse` and
 * `Number` give a double, which holds every integer up to 2^53 and no more: past it an integer
 * loses its last digits (9007199254740993 becomes 9007199254740992), 1e400 becomes Infinity
 * (stored as NULL) and 1e-400 becomes 0, silently. An integer past 2^53 that fits in 64 bits
 * is kept as a bigint, which every destination stores exactly in an integer column (a 64-bit
 * integer); any other number a double cannot hold makes its record a reject,
 * with the number as written. A fraction a double rounds (0.1, 1.2345678901234567890) is a
 * double as ever: that is what a floating-point column holds.
 */

/** A number that cannot be stored as written: why, with the number as the file writes it. */
export class InexactNumber extends Error {}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A number's parts: sign, digits before the point, after it, and the exponent. */
const NUMBER_PARTS = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/**
 * A number written as `text` (JSON's syntax, or CSV's, which also takes a sign, leading zeros
 * and a bare point), as the value that holds it exactly: a number, or a bigint for an integer
 * past 2^53 within 64 bits. An integer is one however written: with a fraction of zeros, as the
 * real wire writes `2022.0`, or an exponent (`9.007199254740993e15` is 9007199254740993, kept
 * as its plain spelling is). Throws InexactNumber for an integer past 64 bits, a number past a
 * double's range, and one not zero that a double rounds to zero.
 */
export function exactNumber(text: string): number | bigint {
  const value = Number(text);
  const parts = NUMBER_PARTS.exec(text);
  if (parts === null) return value;
  const [, sign = '', whole = '', fraction = '', exponent] = parts;
  const plainInteger = exponent === undefined && !/[1-9]/.test(fraction);
  if (!Number.isFinite(value)) {
    throw new InexactNumber(
      `the number ${text} cannot be stored exactly: ${plainInteger ? 'an integer beyond 64 bits' : "beyond a double's range"}`,
    );
  }
  const digits = whole + fraction;
  if (value === 0) {
    if (/[1-9]/.test(digits)) {
      throw new InexactNumber(
        `the number ${text} cannot be stored exactly: a double rounds it to 0`,
      );
    }
    return value;
  }
  if (Number.isSafeInteger(value) && plainInteger) return value;
  const magnitude = integerOf(digits, whole.length + Number(exponent ?? 0));
  if (magnitude === undefined) return value; // a fraction: a double, as ever
  const integer = sign === '-' ? -magnitude : magnitude;
  if (integer >= -MAX_SAFE && integer <= MAX_SAFE) return value;
  if (integer >= INT64_MIN && integer <= INT64_MAX) return integer;
  throw new InexactNumber(`the number ${text} cannot be stored exactly: an integer beyond 64 bits`);
}

/**
 * A number written as `text`, as a floating-point column holds it, by the rule of every number
 * (see above): a number whose value is an integer, however written, only when its double reads
 * back as that integer (9007199254740993 and 9223372036854775807 are refused, never stored as
 * ...992 and ...6000; so is 2^64 written out, which a double holds but every reader prints as
 * 18446744073709552000); a fraction as its double; nothing past a double's range or rounded to
 * 0. `1.10` is 1.1 and `1e2` is 100: the same numbers. -0 is 0, which every destination stores
 * alike (some drop the sign, others keep it). Throws InexactNumber.
 */
export function exactDouble(text: string): number {
  const value = Number(text);
  const parts = NUMBER_PARTS.exec(text);
  if (parts === null) return value;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = parts;
  const digits = whole + fraction;
  if (!Number.isFinite(value)) {
    throw new InexactNumber(`the number ${text} cannot be stored exactly: beyond a double's range`);
  }
  if (value === 0) {
    if (/[1-9]/.test(digits)) {
      throw new InexactNumber(
        `the number ${text} cannot be stored exactly: a double rounds it to 0`,
      );
    }
    return 0;
  }
  const integer = integerOf(digits, whole.length + Number(exponent));
  if (integer === undefined || readBack(value) === (sign === '-' ? -integer : integer)) {
    return value;
  }
  throw new InexactNumber(
    `the number ${text} cannot be stored exactly: a double holds it as ${String(value)}`,
  );
}

/**
 * The integer that `digits` with the point at `point` is (the point may lie past them), or
 * undefined for a fraction. Called for a finite value, not zero: the integer has at most 309
 * digits.
 */
function integerOf(digits: string, point: number): bigint | undefined {
  const lead = /^0*/.exec(digits)![0].length;
  const significant = digits.slice(lead);
  const at = point - lead;
  if (at <= 0 || /[1-9]/.test(significant.slice(at))) return undefined;
  return BigInt(significant.slice(0, at).padEnd(at, '0'));
}

/** The integer a whole double reads back as: its shortest digits, as every reader prints it. */
function readBack(value: number): bigint {
  const [mantissa = '', exponent] = String(value).split('e');
  if (exponent === undefined) return BigInt(mantissa);
  const [whole = '', fraction = ''] = mantissa.split('.');
  return BigInt(whole + fraction) * 10n ** BigInt(Number(exponent) - fraction.length);
}

/**
 * Text that may hold a number a double does not hold as written: a run of 16 digits (2^53 has
 * 16; fewer always fit, and a number of hundreds of digits has such a run), or an exponent (one
 * of three digits or more reaches past a double's range, any other may make an integer past
 * 2^53 of digits split by a point: `9.007199254740993e15`) that ends as a number does, not
 * followed by a letter, a digit or a quote, which leaves out hexadecimal keys in strings
 * (`karen/johnson/50e4906f`: on 4.5% of property records a looser pattern sent the line to the
 * slower look, now on 0.2% of the emulator's, for ids and URLs such as `h1ka80e0-0`). Strings
 * that still match are told apart by that look. One scan of the line: 2.9-3.1 µs for a property
 * record of 2.2 kB, against 11-13 for JSON.parse.
 */
const MAY_NOT_FIT = /\d(?:\d{15}|[eE][+-]?\d+(?![\w"]))/;

/**
 * JSON text as `JSON.parse` reads it, but with its numbers exact (`exactNumber`): most text holds
 * no number that may not fit a double and is parsed as it is. Otherwise the numbers that may not
 * are found outside strings, each put in the text as a string that names it, and read from its
 * own text once the rest is parsed. Throws JSON.parse's SyntaxError for text that is not JSON,
 * and InexactNumber for a number that cannot be held, naming its field (`prices.amountMin`).
 *
 * `asText`: fields of the object the text is whose numbers are kept as the text writes them
 * (a field pinned `text`: `{"yearBuilt":2022.0}` gives `'2022.0'`, `1e400` its text too).
 */
export function parseExact(text: string, asText?: ReadonlySet<string>): unknown {
  const spelled = asText !== undefined && asText.size > 0;
  if (!spelled && !MAY_NOT_FIT.test(text)) return JSON.parse(text);
  const all = numberTokens(text);
  const tokens = spelled ? all : all.filter((t) => MAY_NOT_FIT.test(text.slice(t.start, t.end)));
  if (tokens.length === 0) return JSON.parse(text);
  // The strings that name the numbers begin with a character the text does not hold, raw or
  // escaped: no string of the text can be taken for one.
  const mark = unusedMark(text);
  const escaped = `\\u${mark.charCodeAt(0).toString(16)}`;
  let named = '';
  let at = 0;
  tokens.forEach((token, i) => {
    named += `${text.slice(at, token.start)}"${escaped}${i}"`;
    at = token.end;
  });
  named += text.slice(at);
  let value: unknown;
  try {
    value = JSON.parse(named);
  } catch (error) {
    JSON.parse(text); // its own error, with its own positions
    throw error;
  }
  const numbers = tokens.map((t) => text.slice(t.start, t.end));
  if (spelled && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    for (const key of asText) {
      const held = Object.hasOwn(object, key) ? object[key] : undefined;
      if (typeof held === 'string' && held.length > 1 && held[0] === mark) {
        define(object, key, numbers[Number(held.slice(1))]!);
      }
    }
  }
  return restore(value, mark, numbers, '');
}

/** Where each number of JSON text (outside strings) begins and ends. */
function numberTokens(text: string): { start: number; end: number }[] {
  const tokens: { start: number; end: number }[] = [];
  const length = text.length;
  for (let i = 0; i < length; ) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = stringEnd(text, i);
    } else if (c === MINUS || isDigit(c)) {
      let end = i + 1;
      while (end < length && isNumberPart(text.charCodeAt(end))) end++;
      tokens.push({ start: i, end });
      i = end;
    } else i++;
  }
  return tokens;
}

const QUOTE = 34;
const BACKSLASH = 92;
const MINUS = 45;

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** A character of a JSON number after its first: a digit, `.`, `e`, `E`, `+` or `-`. */
function isNumberPart(c: number): boolean {
  return isDigit(c) || c === 46 || c === 101 || c === 69 || c === 43 || c === MINUS;
}

/** Just past the quote that closes the string opened at `open` (or the text's end). */
export function stringEnd(text: string, open: number): number {
  for (let close = text.indexOf('"', open + 1); close >= 0; close = text.indexOf('"', close + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return close + 1;
  }
  return text.length;
}

/**
 * A character of Unicode's private use area that `text` holds neither raw nor escaped: the
 * first one tried, but for text made to hold them. Those tried are written `\ueDDD` with
 * decimal digits, so that an escape of one has two spellings only (`e` or `E`).
 */
function unusedMark(text: string): string {
  for (let n = 0; n < 1000; n++) {
    const hex = `e${String(n).padStart(3, '0')}`;
    const mark = String.fromCharCode(Number.parseInt(hex, 16));
    const escaped = [`\\u${hex}`, `\\uE${hex.slice(1)}`];
    if (!text.includes(mark) && !escaped.some((e) => text.includes(e))) return mark;
  }
  // Never so in a record: it would have to hold all thousand of them.
  throw new InexactNumber('its numbers cannot be read exactly: the text holds every mark tried');
}

/**
 * `value` with each string that names a number (`mark` and its place in `numbers`) replaced by
 * the number, read exactly; `path` is where `value` is, for the reason of one that cannot be.
 */
function restore(value: unknown, mark: string, numbers: string[], path: string): unknown {
  if (typeof value === 'string') {
    if (value.length < 2 || value[0] !== mark) return value;
    try {
      return exactNumber(numbers[Number(value.slice(1))]!);
    } catch (error) {
      if (!(error instanceof InexactNumber) || path === '') throw error;
      throw new InexactNumber(`${path}: ${error.message}`);
    }
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = restore(value[i], mark, numbers, path);
    return value;
  }
  if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const before = object[key];
      const after = restore(before, mark, numbers, path ? `${path}.${key}` : key);
      if (after !== before) define(object, key, after);
    }
  }
  return value;
}

/** Sets a field, defined rather than assigned: a field named `__proto__` stays a field. */
function define(object: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(object, key, {
    value,
    writable: true,
    enumerable: true,
    configurable: true,
  });
}

/**
 * JSON text of a decoded value, as `JSON.stringify` writes it, its bigints as their digits:
 * `JSON.stringify` cannot write a bigint (and Node 20 has no `JSON.rawJSON`), so a value that
 * holds one is written by the small serializer below, the others by `JSON.stringify` itself.
 */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    // A decoded value is plain data, never circular: a TypeError here is a bigint.
    if (!(error instanceof TypeError)) throw error;
    return withBigints(value) ?? 'null';
  }
}

function withBigints(value: unknown): string | undefined {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return `[${value.map((v) => withBigints(v) ?? 'null').join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    const fields: string[] = [];
    for (const key of Object.keys(object)) {
      const text = withBigints(object[key]);
      if (text !== undefined) fields.push(`${JSON.stringify(key)}:${text}`);
    }
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value);
}
