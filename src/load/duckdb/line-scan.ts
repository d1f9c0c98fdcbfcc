import { isUtf8 } from 'node:buffer';
import type { FieldDef, FieldMap } from '../../catalog.js';
import {
  BOOLEAN_TEXT,
  type CheckedField,
  DECODED,
  dateKept,
  INTEGER,
  type KeyRule,
  keyRules,
  numberKept,
  REAL,
  realTime,
} from './line-checks.js';

/**
 * The check of line-checks.ts, made on a line's bytes in one pass, with no value built: about
 * three times cheaper than `JSON.parse` and `JSON.stringify` of a property record and the walk
 * of what they give. It keeps the same promise, and takes no line that check would refuse
 * (test/unit/load/duckdb-line-checks.test.ts holds the two to each other on lines changed in
 * every way the checks look at): the line must be the text `JSON.stringify` writes (no
 * whitespace, each key once, numbers and escapes as JavaScript spells them), and each value
 * pass its field's test. What it cannot tell alone (a key with an escape, or one that
 * JavaScript would move first, as `"7"`), it leaves to line-checks.ts (`UNSURE`).
 */

export const UNSURE = Symbol('unsure');

/** Why a line is in doubt, undefined when it is not, or UNSURE. */
export type LineScan = (line: Buffer) => string | undefined | typeof UNSURE;

/** line-checks.ts's rules of nested keys, by the latin1 reading of their names (see Scanner). */
function latin1Rules(fields: FieldMap): Map<string, KeyRule> {
  return new Map(
    [...keyRules(fields)].map(([name, rule]) => [Buffer.from(name).toString('latin1'), rule]),
  );
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
/** U+FFFD in UTF-8 (line-checks.ts refuses it: what a byte not UTF-8 is decoded as). */
const REPLACEMENT = Buffer.from('\uFFFD');
const isDigit = (c: number | undefined) => c !== undefined && c >= ZERO && c <= NINE;
/** The escapes JSON.stringify writes short (\u is a doubt of its own). */
const SHORT_ESCAPES = new Set([QUOTE, BACKSLASH, 0x62, 0x66, 0x6e, 0x72, 0x74]);

/** A doubt found while scanning: why, or UNSURE. */
class Stop {
  constructor(readonly why: string | typeof UNSURE) {}
}
const stop = (why: string | typeof UNSURE): never => {
  throw new Stop(why);
};

/** What is known of the value just scanned, for the tests of its key. */
enum Kind {
  Text,
  Number,
  Boolean,
  Null,
  List,
  Object,
}

/** How a nested value is scanned: see line-checks.ts's `Walk`. */
interface Walk {
  /** A list of numbers or booleans: it holds no text and no key. */
  noText: boolean;
  /** A list of dates: each text and key kept as a date field keeps it. */
  dates: boolean;
  keys: Map<string, KeyRule> | undefined;
}

/** Node's Buffer's own latin1 decoding, without `toString`'s dispatch. */
type Latin1 = { latin1Slice(start: number, end: number): string };

/**
 * Keys as text, each read once: a line of a file names the same keys as the line before, and
 * making their text again for each would be a third of a scan.
 */
class KeyNames {
  readonly #known = new Map<number, { bytes: Buffer; name: string }[]>();
  #count = 0;

  name(b: Buffer, start: number, end: number): string {
    let hash = end - start;
    for (let i = start; i < end; i++) hash = (Math.imul(hash, 31) + b[i]!) | 0;
    const known = this.#known.get(hash);
    if (known !== undefined) {
      // Indexed: an iterator here was an object made per key of every line.
      for (let k = 0; k < known.length; k++) {
        const key = known[k]!;
        if (sameBytes(key.bytes, b, start, end)) return key.name;
      }
    }
    const name = (b as unknown as Latin1).latin1Slice(start, end);
    // At most so many kept: a file of ever new keys is read as it comes.
    if (this.#count < 4096) {
      this.#count++;
      const key = { bytes: Buffer.from(b.subarray(start, end)), name };
      if (known === undefined) this.#known.set(hash, [key]);
      else known.push(key);
    }
    return name;
  }
}

function sameBytes(bytes: Buffer, b: Buffer, start: number, end: number): boolean {
  if (bytes.length !== end - start) return false;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== b[start + i]) return false;
  return true;
}

/**
 * The scan of one line (`b`), at `i`. Texts are read as latin1: every test of a text's value
 * here (a key's name, a date's or a number's form) is of ASCII characters, which a byte of
 * UTF-8 beyond ASCII never reads as in latin1, and latin1 keeps bytes apart (a key twice).
 */
class Scanner {
  b: Buffer = Buffer.alloc(0);
  i = 0;
  /** The last text scanned: its bytes' start and end, and what it held. */
  start = 0;
  end = 0;
  escaped = false;
  /** An escaped quote. */
  quoted = false;
  /** `[]`, or a `]`. */
  emptyList = false;
  closing = false;
  /** The last number scanned: its digits before the point, and after. */
  whole = 0;
  fraction = 0;
  /** How deep in objects the scan is, and the keys met at each depth (`object`). */
  depth = 0;
  readonly #seen: string[][] = [];

  constructor(readonly names: KeyNames) {}

  /** The last text's value, as a key. */
  key(): string {
    return this.names.name(this.b, this.start, this.end);
  }

  /** A text as JSON.stringify writes it (no \u, no \/), ending at its closing quote. */
  text(): void {
    const b = this.b;
    let i = this.i + 1;
    this.start = i;
    this.escaped = false;
    this.quoted = false;
    this.emptyList = false;
    this.closing = false;
    let previous = 0;
    for (;;) {
      const c = b[i];
      if (c === QUOTE) break;
      if (c === undefined || c < 0x20) stop('not JSON');
      if (c === BACKSLASH) {
        const e = b[i + 1]!;
        // \u, or \\ before a u: line-checks.ts refuses any `\u` in the line's text.
        if (e === 0x75 || (e === BACKSLASH && b[i + 2] === 0x75)) stop('a \\u escape');
        if (!SHORT_ESCAPES.has(e)) stop('not as JSON.stringify writes it');
        this.escaped = true;
        if (e === QUOTE) this.quoted = true;
        previous = e;
        i += 2;
        continue;
      }
      if (c === CLOSE_BRACKET) {
        this.closing = true;
        if (previous === OPEN_BRACKET) this.emptyList = true;
      }
      previous = c as number;
      i++;
    }
    this.end = i;
    this.i = i + 1;
  }

  /** The last text's value, as latin1 (see above). */
  content(): string {
    return (this.b as unknown as Latin1).latin1Slice(this.start, this.end);
  }

  /**
   * A number as JSON.stringify writes it: no leading zero, no trailing zero in the fraction, no
   * exponent, no `-0`; and, as line-checks.ts's NUMBER_IN_DOUBT, none JavaScript writes with an
   * exponent (under 1e-6), none of more than 15 digits (no run of 16, none a double rounds).
   */
  number(): void {
    const b = this.b;
    let i = this.i;
    const negative = b[i] === MINUS;
    if (negative) i++;
    const from = i;
    if (b[i] === ZERO) i++;
    else if (isDigit(b[i])) while (isDigit(b[i])) i++;
    else stop('not JSON');
    this.whole = i - from;
    const zero = b[from] === ZERO;
    let significant = zero ? 0 : this.whole;
    this.fraction = 0;
    if (b[i] === DOT) {
      i++;
      const fraction = i;
      while (b[i] === ZERO) i++;
      // 0.000000x: JavaScript writes it 1e-7.
      if (zero && i - fraction >= 6) stop('a number spelt otherwise');
      if (!zero) significant += i - fraction;
      const digits = i;
      while (isDigit(b[i])) i++;
      significant += i - digits;
      this.fraction = i - fraction;
      if (this.fraction === 0) stop('not JSON');
      if (b[i - 1] === ZERO) stop('not as JSON.stringify writes it');
    } else if (zero && negative) {
      stop('not as JSON.stringify writes it');
    }
    if (b[i] === 0x65 || b[i] === 0x45) stop('not as JSON.stringify writes it');
    if (significant > 15) stop('a number spelt otherwise');
    this.i = i;
  }

  /** A literal (`true`, `false`, `null`), compared byte by byte (no text made of it). */
  literal(word: string): void {
    const b = this.b;
    const i = this.i;
    if (i + word.length > b.length) stop('not JSON');
    for (let k = 0; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) stop('not JSON');
    this.i += word.length;
  }

  /** A nested value; its kind. */
  nested(walk: Walk, rule: KeyRule | undefined): Kind {
    const b = this.b;
    const c = b[this.i];
    if (c === QUOTE) {
      this.text();
      // Not empty, and no quote (escaped) and no `[]` in a nested text (line-checks.ts).
      if (this.end === this.start || this.quoted || this.emptyList) {
        stop('an empty text, or a quote or [] in one');
      }
      if (walk.noText) stop('a number as text');
      // An escape reads as a character no date holds.
      if (this.escaped) return Kind.Text;
      if ((walk.dates || rule?.date) && !dateKept(this.content())) stop('not a real date');
      return Kind.Text;
    }
    if (c === OPEN_BRACE) {
      this.object(walk);
      return Kind.Object;
    }
    if (c === OPEN_BRACKET) {
      this.list(walk, rule);
      return Kind.List;
    }
    if (c === 0x74 || c === 0x66) {
      this.literal(c === 0x74 ? 'true' : 'false');
      return Kind.Boolean;
    }
    if (c === 0x6e) {
      this.literal('null');
      return Kind.Null;
    }
    this.number();
    return Kind.Number;
  }

  list(walk: Walk, rule: KeyRule | undefined): void {
    const b = this.b;
    this.i++;
    if (b[this.i] === CLOSE_BRACKET) stop('an empty list');
    const items = rule?.dateList ? { ...walk, dates: true } : walk;
    for (;;) {
      const kind = this.nested(items, undefined);
      if (
        rule?.decodedList &&
        kind !== Kind.Number &&
        kind !== Kind.Boolean &&
        kind !== Kind.Null
      ) {
        stop('a number as text');
      }
      // An item a text without `]` (this.closing: of the text just scanned).
      if (rule?.dateList && (kind !== Kind.Text || this.closing)) stop('not a real date');
      const c = b[this.i++];
      if (c === CLOSE_BRACKET) return;
      if (c !== COMMA) stop('not as JSON.stringify writes it');
    }
  }

  object(walk: Walk): void {
    const b = this.b;
    this.i++;
    if (b[this.i] === CLOSE_BRACE) {
      this.i++;
      return;
    }
    // The keys met in this object go to an array kept per depth, none made per object; its
    // first items are this object's (`length = 0` would free the array's store each time). A
    // doubt leaves `depth` as it was: each scan starts it at 0.
    let seen = this.#seen[this.depth];
    if (seen === undefined) {
      seen = [];
      this.#seen[this.depth] = seen;
    }
    this.depth++;
    let count = 0;
    for (;;) {
      if (b[this.i] !== QUOTE) stop('not as JSON.stringify writes it');
      this.text();
      // A key with an escape, or one JavaScript moves first: left to line-checks.ts.
      if (this.escaped) stop(UNSURE);
      if (this.end === this.start || this.emptyList) {
        stop('an empty key, or a quote or [] in one');
      }
      const key = this.key();
      if (isDigit(b[this.start]) && /^(?:0|[1-9][0-9]*)$/.test(key)) stop(UNSURE);
      for (let k = 0; k < count; k++) if (seen[k] === key) stop('not as JSON.stringify writes it');
      seen[count++] = key;
      if (walk.noText) stop('a number as text');
      if (walk.dates && !dateKept(key)) stop('not a real date');
      if (b[this.i++] !== COLON) stop('not as JSON.stringify writes it');
      const rule = walk.keys?.get(key);
      const kind = this.nested(walk, rule);
      if (rule !== undefined) keyTest(rule, kind);
      const c = b[this.i++];
      if (c === CLOSE_BRACE) break;
      if (c !== COMMA) stop('not as JSON.stringify writes it');
    }
    this.depth--;
  }
}

/** line-checks.ts's tests of a nested key's value, by its kind. */
function keyTest(rule: KeyRule, kind: Kind): void {
  if (rule.list && kind !== Kind.List && kind !== Kind.Null) stop('a list not a list');
  if (rule.objects && kind !== Kind.List && kind !== Kind.Object && kind !== Kind.Null) {
    stop('objects not objects');
  }
  if (rule.decoded && kind === Kind.Text) stop('a number as text');
}

/** How a top-level field's value is scanned: whether it is empty (a boolean, no object made). */
type FieldScan = (s: Scanner) => boolean;

/** A top-level value that is null or an empty text: true; else undefined (not scanned). */
function emptyScalar(s: Scanner): boolean | undefined {
  const b = s.b;
  if (b[s.i] === 0x6e) {
    s.literal('null');
    return true;
  }
  if (b[s.i] === QUOTE && b[s.i + 1] === QUOTE) {
    s.i += 2;
    return true;
  }
  return undefined;
}

function fieldScan(type: CheckedField['type'], def: FieldDef | undefined): FieldScan {
  /** A number, or a text of one: `re` its form; a number as JavaScript writes it, `whole`
   * and `fraction` digits at most. */
  const numeric = (re: RegExp, fraction: number, why: string): FieldScan => {
    return (s) => {
      if (emptyScalar(s)) return true;
      if (s.b[s.i] === QUOTE) {
        s.text();
        const text = s.escaped ? '' : s.content();
        if (!numberKept(re, text)) stop(why);
      } else if (isDigit(s.b[s.i]) || s.b[s.i] === MINUS) {
        s.number();
        if (s.whole > 15 || s.fraction > fraction) stop(why);
      } else {
        stop(why);
      }
      return false;
    };
  };
  switch (type) {
    case 'text':
      return (s) => {
        if (s.b[s.i] === 0x6e) {
          s.literal('null');
          return true;
        }
        if (s.b[s.i] !== QUOTE) stop('not text');
        s.text();
        return s.end === s.start;
      };
    case 'integer':
      return numeric(INTEGER, 0, 'not a 15-digit integer');
    case 'real':
      return numeric(REAL, 20, 'not a 15-digit number');
    case 'boolean':
      return (s) => {
        if (emptyScalar(s)) return true;
        const c = s.b[s.i];
        if (c === 0x74 || c === 0x66) {
          s.literal(c === 0x74 ? 'true' : 'false');
          return false;
        }
        if (c !== QUOTE) stop('not a boolean');
        s.text();
        if (s.escaped || !BOOLEAN_TEXT.has(s.content())) stop('not a boolean');
        return false;
      };
    case 'timestamp':
      return (s) => {
        if (emptyScalar(s)) return true;
        if (s.b[s.i] !== QUOTE) stop('not a time in the service form');
        s.text();
        if (s.escaped || !realTime(s.content())) stop('not a time in the service form');
        return false;
      };
    default:
      return jsonScan(def);
  }
}

/** A list or objects field's value (line-checks.ts's `jsonCheck`). */
function jsonScan(def: FieldDef | undefined): FieldScan {
  const list = def?.kind === 'list';
  const walk: Walk = {
    noText: list && DECODED.includes(def.of),
    dates: list && def.of === 'date',
    keys: def?.kind === 'objects' ? latin1Rules(def.fields) : undefined,
  };
  return (s) => {
    if (emptyScalar(s)) return true;
    const b = s.b;
    if (b[s.i] === OPEN_BRACKET && b[s.i + 1] === CLOSE_BRACKET) {
      s.i += 2;
      return true;
    }
    const c = b[s.i];
    if (list ? c !== OPEN_BRACKET : c !== OPEN_BRACKET && c !== OPEN_BRACE) {
      stop(`not ${list ? 'a list' : 'JSON'}`);
    }
    s.nested(walk, undefined);
    return false;
  };
}

/** The scan of a line of `fields` (see the top of this file and line-checks.ts's `lineCheck`). */
export function lineScan(
  fields: readonly CheckedField[],
  maxBytes: number,
  keyed: readonly string[] = [],
  /** Told the key of each line taken: the JSON text of its values (check-lines.ts). */
  onKey?: (key: string) => void,
): LineScan {
  // By the latin1 reading of each key's UTF-8 (see Scanner).
  const latin1 = (key: string) => Buffer.from(key).toString('latin1');
  const scans = new Map(
    fields.map((f, n) => [latin1(f.key), { n, scan: fieldScan(f.type, f.def) }]),
  );
  const keyedAt = keyed.map((k) => scans.get(latin1(k))?.n ?? -1);
  /** Per field, the number of the line it was last seen in (a key twice), and whether empty. */
  const seenIn = new Array<number>(fields.length).fill(0);
  const emptyIn = new Array<boolean>(fields.length).fill(false);
  /** Per field, where its value's text begins and ends in the line. */
  const valueAt = new Array<number>(fields.length).fill(0);
  const valueEnd = new Array<number>(fields.length).fill(0);
  let lineNo = 0;
  const s = new Scanner(new KeyNames());
  return (line) => {
    lineNo++;
    if (line.length > maxBytes) return 'over the record size limit';
    if (line[0] !== OPEN_BRACE) return 'not a JSON object';
    if (!isUtf8(line)) return 'a byte that is not UTF-8';
    if (line.includes(REPLACEMENT)) return 'a replacement character';
    s.b = line;
    s.depth = 0;
    try {
      s.i = 1;
      if (line[1] !== CLOSE_BRACE) {
        for (;;) {
          if (line[s.i] !== QUOTE) stop('not as JSON.stringify writes it');
          s.text();
          // A key with an escape, or one JavaScript moves first (`"7"`): left to line-checks.ts.
          if (s.escaped || isDigit(line[s.start])) stop(UNSURE);
          const field = scans.get(s.key());
          if (field === undefined) {
            return `a key the table has no column for (${line.toString('utf8', s.start, s.end)})`;
          }
          if (seenIn[field.n] === lineNo) stop('not as JSON.stringify writes it');
          seenIn[field.n] = lineNo;
          if (line[s.i++] !== COLON) stop('not as JSON.stringify writes it');
          valueAt[field.n] = s.i;
          emptyIn[field.n] = field.scan(s);
          valueEnd[field.n] = s.i;
          const c = line[s.i++];
          if (c === CLOSE_BRACE) break;
          if (c !== COMMA) stop('not as JSON.stringify writes it');
        }
      } else {
        s.i = 2;
      }
      if (s.i !== line.length) stop('not as JSON.stringify writes it');
      for (const [k, n] of keyedAt.entries()) {
        if (n < 0 || seenIn[n] !== lineNo || emptyIn[n]) return `no ${keyed[k]}`;
      }
      // The values' text as UTF-8: a line taken is canonical, so this is what JSON.stringify
      // gives of the value for a line line-checks.ts takes.
      if (onKey !== undefined && keyedAt.length > 0) {
        onKey(keyedAt.map((n) => line.toString('utf8', valueAt[n]!, valueEnd[n]!)).join(','));
      }
      return undefined;
    } catch (error) {
      if (error instanceof Stop) return error.why;
      throw error;
    }
  };
}

/**
 * The scan of a list or objects field's JSON text alone (a CSV cell's, csv-scan.ts), as a
 * line's value is scanned: why it is in doubt, undefined, or UNSURE. `[]` is taken (a null).
 */
export function jsonTextScan(
  def: FieldDef | undefined,
): (text: Buffer) => string | undefined | typeof UNSURE {
  const scan = jsonScan(def);
  const s = new Scanner(new KeyNames());
  return (text) => {
    s.b = text;
    s.i = 0;
    s.depth = 0;
    try {
      scan(s);
      return s.i === text.length ? undefined : 'not as JSON.stringify writes it';
    } catch (error) {
      if (error instanceof Stop) return error.why;
      throw error;
    }
  };
}
