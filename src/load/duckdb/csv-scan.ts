import { isUtf8 } from 'node:buffer';
import type { FieldDef } from '../../catalog.js';
import { type CheckedField, cellCheck, dateKept } from './line-checks.js';
import { jsonTextScan, UNSURE } from './line-scan.js';
import { cellValue } from './read-checks.js';

/**
 * The check of a CSV result file's lines before DuckDB reads it (read-file.ts): each line must
 * be one record of the header's cells that DuckDB's `read_csv` reads, cell by cell, into what
 * sluice's own decoding (records/csv.ts, records/decode.ts) writes. As for NDJSON
 * (line-checks.ts), every test is a sufficient condition: a line in doubt sends its file down
 * sluice's own path, which decides.
 *
 * A line is taken when it is valid UTF-8 with no CR, NUL or `\u0000`, within the record size
 * limit, not empty, and its cells, as many as the header's, are plain or quoted as the service
 * quotes them (a quote opens a cell and closes it, doubled inside): so each record is one line.
 * Cells of text are taken as they are (empty is null); numbers, booleans and times as for NDJSON
 * (line-checks.ts's `cellCheck`); a list or objects field's cell is JSON text as
 * `JSON.stringify` writes it (passing NDJSON's test of such a value), or a list comma-joined of
 * items JSON would write as they are: texts with no quote, backslash or control character, not
 * empty (an empty item is a null), and for dates kept as a date field keeps them; numbers as
 * JavaScript spells them, fewer than 16 characters; `true` and `false`.
 */

const QUOTE = 0x22;
const COMMA = 0x2c;
const CR = 0x0d;

/** Told each cell of a line: its bytes, unquoted, `start` to `end` of `b`, and its place. */
type OnCell = (b: Buffer, start: number, end: number, n: number) => string | undefined;

/**
 * Cuts lines into cells, as csv-parse does where it is sure to (see the top of this file): a
 * cell opening with a quote ends at the quote not doubled that closes it, which a comma or the
 * line's end follows; any other cell ends at a comma, and holds no quote.
 */
export class CellCutter {
  /** Where a quoted cell with doubled quotes is written unquoted (grown as cells need). */
  #scratch = Buffer.alloc(0);

  /**
   * How many cells `line` holds, each handed to `onCell` in turn; or why the line is in doubt:
   * its cells, more than `most`, or `onCell`'s answer.
   */
  cut(line: Buffer, most: number, onCell: OnCell): number | string {
    let i = 0;
    let quote = line.indexOf(QUOTE);
    for (let n = 0; ; n++) {
      if (n === most) return `more cells than the header's ${most}`;
      let b = line;
      let start = i;
      let end: number;
      if (quote === i) {
        let close = line.indexOf(QUOTE, i + 1);
        let doubled = false;
        while (close >= 0 && line[close + 1] === QUOTE) {
          doubled = true;
          close = line.indexOf(QUOTE, close + 2);
        }
        if (close < 0) return 'a quote not closed on its line';
        i = close + 1;
        if (i < line.length && line[i] !== COMMA) return 'text after a closing quote';
        quote = line.indexOf(QUOTE, i);
        start++;
        end = close;
        if (doubled) {
          if (this.#scratch.length < end - start)
            this.#scratch = Buffer.alloc(Math.max(line.length, 1 << 16));
          b = this.#scratch;
          end = unquote(line, start, end, b);
          start = 0;
        }
      } else {
        const comma = line.indexOf(COMMA, i);
        end = comma < 0 ? line.length : comma;
        if (quote >= 0 && quote < end) return 'a quote inside a cell';
        i = end;
      }
      const why = onCell(b, start, end, n);
      if (why !== undefined) return why;
      if (i >= line.length) return n + 1;
      i++; // the comma (at the end of the line, a last cell follows, empty)
    }
  }
}

/** A header's names, or why they are in doubt (sluice renames a name given twice). */
export function csvHeader(line: Buffer): string[] | string {
  const why = bytesInDoubt(line);
  if (why !== undefined) return why;
  const names: string[] = [];
  const cut = new CellCutter().cut(line, Number.POSITIVE_INFINITY, (b, start, end) => {
    names.push(b.toString('utf8', start, end));
    return undefined;
  });
  if (typeof cut === 'string') return `the header: ${cut}`;
  if (new Set(names).size !== names.length) return 'the header names a column twice';
  if (names.some((n) => n === '' || n.startsWith('_')))
    return 'the header has a column sluice names';
  return names;
}

function bytesInDoubt(line: Buffer): string | undefined {
  if (line.length === 0) return 'an empty line';
  if (line.includes(CR)) return 'a carriage return';
  if (line.includes(0)) return 'a NUL character';
  if (!isUtf8(line)) return 'not UTF-8';
  return undefined;
}

/** Why a cell (bytes `start` to `end` of `b`, unquoted) is in doubt, or undefined. */
type CellTest = (b: Buffer, start: number, end: number) => string | undefined;

/** Node's Buffer's own latin1 decoding (ASCII tests read bytes past it as no match). */
type Latin1 = { latin1Slice(start: number, end: number): string };
const latin1 = (b: Buffer, start: number, end: number) =>
  (b as unknown as Latin1).latin1Slice(start, end);

/** A number as JavaScript spells it, short enough that a double holds it as written. */
const PLAIN_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?$/;

/** The test of a comma-joined list's items (the cell not empty), by the list's kind of item. */
function itemsTest(def: FieldDef & { kind: 'list' }): CellTest {
  switch (def.of) {
    case 'number':
    case 'integer':
    case 'boolean': {
      const item =
        def.of === 'boolean'
          ? (s: string) => s === 'true' || s === 'false'
          : (s: string) => s.length < 16 && PLAIN_NUMBER.test(s) && String(Number(s)) === s;
      return (b, start, end) =>
        latin1(b, start, end).split(',').every(item) ? undefined : 'an item not as JSON writes it';
    }
    default: {
      const dates = def.of === 'date';
      return (b, start, end) => {
        let from = start;
        for (let i = start; i <= end; i++) {
          const c = i === end ? COMMA : b[i]!;
          if (c < 0x20 || c === QUOTE || c === BACKSLASH) return 'an item JSON would escape';
          if (c !== COMMA) continue;
          // An empty item is a null; a date item kept as a date field keeps it.
          if (i === from || (dates && !dateKept(latin1(b, from, i)))) {
            return 'an item empty, or no real date';
          }
          from = i + 1;
        }
        return undefined;
      };
    }
  }
}

/** The test of a list or objects field's cell: JSON text, or (a list) items comma-joined. */
function jsonCellTest(def: FieldDef | undefined): CellTest {
  const scan = jsonTextScan(def);
  const parsed = cellCheck('json', def);
  const items = def?.kind === 'list' ? itemsTest(def) : undefined;
  return (b, start, end) => {
    if (start === end) return undefined;
    const first = b[start];
    if (first === OPEN_BRACKET || (items === undefined && first === OPEN_BRACE)) {
      const text = b.subarray(start, end);
      const scanned = scan(text);
      if (scanned !== UNSURE) return scanned;
      // What the scan leaves (a key with an escape, or one JavaScript moves first).
      const cell = text.toString('utf8');
      if (cell.includes('\\u')) return 'a \\u escape';
      let value: unknown;
      try {
        value = JSON.parse(cell);
      } catch {
        return 'not JSON';
      }
      if (JSON.stringify(value) !== cell) return 'not as JSON.stringify writes it';
      return parsed(value);
    }
    return items === undefined ? 'not JSON' : items(b, start, end);
  };
}

/** The test of a cell of a column of `type` (line-checks.ts's `cellCheck`, on its text). */
function cellTest(field: CheckedField): CellTest | undefined {
  if (field.type === 'text') return undefined;
  if (field.type === 'json') return jsonCellTest(field.def);
  const check = cellCheck(field.type, field.def);
  return (b, start, end) => (start === end ? undefined : check(latin1(b, start, end)));
}

/** The test of a line of a CSV file whose header reads `fields` (its cells, in order). */
export function csvLineCheck(
  fields: readonly CheckedField[],
  maxBytes: number,
  keyed: readonly string[] = [],
  /** Told the key of each line taken: the JSON text of its cells joined by commas. */
  onKey?: (key: string) => void,
): (line: Buffer) => string | undefined {
  const tests = fields.map(cellTest);
  const keys = keyed.map((k) => fields.findIndex((f) => f.key === k));
  // A key field the header lacks: every line is without its key.
  const keyMissing = keys.some((at) => at < 0);
  const count = fields.length;
  const keyText: string[] = [];
  const cutter = new CellCutter();
  const onCell: OnCell = (b, start, end, n) => {
    const why = tests[n]?.(b, start, end);
    if (why !== undefined) return `${fields[n]!.key}: ${why}`;
    const k = keys.indexOf(n);
    if (k >= 0) {
      if (start === end) return 'a line without its key';
      keyText[k] = b.toString('utf8', start, end);
    }
    return undefined;
  };
  return (line) => {
    if (line.length > maxBytes) return 'over the record size limit';
    const bad = bytesInDoubt(line);
    if (bad !== undefined) return bad;
    if (line.includes(ESCAPED_NUL)) return 'a \\u0000 escape';
    const cells = cutter.cut(line, count, onCell);
    if (typeof cells === 'string') return cells;
    if (cells !== count) return `${cells} cells where the header has ${count}`;
    if (keys.length === 0) return undefined;
    if (keyMissing) return 'a line without its key';
    onKey?.(keyText.map((k) => JSON.stringify(k)).join(','));
    return undefined;
  };
}

/** Writes the quoted cell's bytes `start` to `end` of `line` into `to`, each `""` as `"`. */
function unquote(line: Buffer, start: number, end: number, to: Buffer): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    to[n++] = line[i]!;
    if (line[i] === QUOTE) i++;
  }
  return n;
}

const ESCAPED_NUL = Buffer.from('\\u0000');
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const BACKSLASH = 0x5c;

/**
 * The value written of a CSV cell `c` (VARCHAR, NULL when empty) of a column of `field`, for a
 * line csvLineCheck took.
 */
export function csvCellValue(c: string, field: CheckedField): string {
  if (field.type !== 'json') return cellValue(c, field.type);
  const def = field.def;
  let value = `CAST(${c} AS JSON)`;
  if (def?.kind === 'list') {
    const joined = ['number', 'integer', 'boolean'].includes(def.of)
      ? `'[' || ${c} || ']'`
      : `'["' || replace(${c}, ',', '","') || '"]'`;
    value = `CASE WHEN starts_with(${c}, '[') THEN ${value} ELSE CAST(${joined} AS JSON) END`;
  }
  return `CASE WHEN ${c} IS NULL OR ${c} = '' OR ${c} = '[]' THEN NULL ELSE ${value} END`;
}
