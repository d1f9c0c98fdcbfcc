import {
  type ColumnType,
  type CopyText,
  finerThanMicroseconds,
  type PackedRows,
  type RowValue,
} from './types.js';

/**
 * The COPY text format (tab-separated, backslash escapes), for packed rows. A parse worker writes
 * its batch's rows in it when the destination takes it (`capabilities.rowEncoding`), so that the writing thread hands COPY the bytes
 * instead of receiving every value as a cloned string to encode itself: on two cores the
 * writing thread had spent more time in garbage collection and in encoding than the server in
 * storing the rows.
 *
 * A line per row, cells separated by tabs. A cell is `\N` for null; text with backslash,
 * newline, carriage return and tab escaped; a number as JavaScript writes it, a bigint as its
 * digits; a boolean `t`/`f` in a boolean column, `1`/`0` in a numeric one, `true`/`false` in
 * any other.
 */

const NEEDS_ESCAPE = /[\\\n\r\t]/;
const ESCAPES = /[\\\n\r\t]/g;
const ESCAPE_OF: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeCopyText(text: string): string {
  return NEEDS_ESCAPE.test(text) ? text.replace(ESCAPES, (c) => ESCAPE_OF[c]!) : text;
}

/** One value as a COPY text cell for a column of `type`. */
export function copyCell(value: RowValue | undefined, type: ColumnType): string {
  if (value === null || value === undefined) return '\\N';
  switch (typeof value) {
    case 'string':
      return escapeCopyText(value);
    case 'boolean':
      if (type === 'boolean') return value ? 't' : 'f';
      if (type === 'integer' || type === 'real') return value ? '1' : '0';
      return value ? 'true' : 'false';
    case 'number':
      if (type === 'boolean') return value === 0 ? 'f' : 't';
      if (type === 'json' && !Number.isFinite(value)) return '\\N';
      return String(value);
    case 'bigint':
      if (type === 'boolean') return value === 0n ? 'f' : 't';
      return value.toString();
    default:
      return escapeCopyText(JSON.stringify(value));
  }
}

/**
 * How a destination wants rows handed to it: bound values, or lines of text its bulk loader
 * reads (`copy-text`: PostgreSQL's COPY text format, written here by the parse workers). A
 * destination names its own (`DestinationCapabilities.rowEncoding`).
 */
export type RowEncoding = 'values' | 'copy-text';

/**
 * A batch's rows as COPY text (the columns `columns` types, those with a value in some row),
 * keeping as values only the columns `keep` names. Undefined when a value's type is not its
 * column's (a boolean in a numeric column, a number in a text one): its cell could not be read
 * back as the same value, so such a batch goes as values.
 */
export function encodeCopyText(
  packed: PackedRows,
  columns: ReadonlyMap<string, ColumnType>,
  keep: readonly string[],
): PackedRows | undefined {
  const width = packed.names.length;
  const at: number[] = [];
  const names: string[] = [];
  const types: ColumnType[] = [];
  for (let c = 0; c < width; c++) {
    const name = packed.names[c]!;
    const type = columns.get(name);
    if (type === undefined) continue; // null in every row
    at.push(c);
    names.push(name);
    types.push(type);
  }
  if (names.length === 0) return undefined;
  const { values, count } = packed;
  let text = '';
  let bigints: Set<string> | undefined;
  let fineTimes: Set<string> | undefined;
  for (let r = 0; r < count; r++) {
    const base = r * width;
    for (let i = 0; i < at.length; i++) {
      const value = values[base + at[i]!];
      const type = types[i]!;
      if (!readsBack(value, type)) return undefined;
      if (typeof value === 'bigint') {
        bigints ??= new Set();
        bigints.add(names[i]!);
      } else if (
        type === 'timestamp' &&
        typeof value === 'string' &&
        finerThanMicroseconds(value)
      ) {
        fineTimes ??= new Set();
        fineTimes.add(names[i]!);
      }
      text += i === 0 ? copyCell(value, type) : `\t${copyCell(value, type)}`;
    }
    text += '\n';
  }
  // A buffer of its own, never a slice of Node's pool: it is transferred to the writing thread.
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  const kept = keep.filter((name) => packed.names.includes(name));
  const keptAt = kept.map((name) => packed.names.indexOf(name));
  const keptValues: RowValue[] = new Array(count * kept.length);
  for (let r = 0, o = 0; r < count; r++) {
    for (const c of keptAt) keptValues[o++] = values[r * width + c] ?? null;
  }
  const copy = {
    names,
    types,
    bytes,
    ...(bigints ? { bigints: [...bigints] } : {}),
    ...(fineTimes ? { fineTimes: [...fineTimes] } : {}),
  };
  return { names: kept, values: keptValues, count, text: copy };
}

const NUMBERS: ReadonlySet<ColumnType> = new Set(['integer', 'real']);

/** Whether `value`'s cell in a column of `type` reads back as `value` (see `readCell`). */
function readsBack(value: RowValue | undefined, type: ColumnType): boolean {
  switch (typeof value) {
    case 'boolean':
      return type === 'boolean';
    case 'number':
      return NUMBERS.has(type);
    case 'bigint':
      return type === 'integer';
    case 'string':
      return type !== 'boolean' && !NUMBERS.has(type);
    default:
      return value === null || value === undefined;
  }
}

const plain = new WeakMap<PackedRows, PackedRows>();

/**
 * Packed rows with every value, read back from their COPY text if they have one: the same
 * values (`encodeCopyText` writes only cells that read back as they were), but for what UTF-8
 * and the text cannot tell apart (-0 reads back as 0, a lone surrogate as U+FFFD), which the
 * database stores alike.
 */
export function plainRows(packed: PackedRows): PackedRows {
  const { text } = packed;
  if (text === undefined) return packed;
  let rows = plain.get(packed);
  if (rows !== undefined) return rows;
  const width = text.names.length;
  const values: RowValue[] = new Array(packed.count * width);
  const lines = Buffer.from(text.bytes.buffer, text.bytes.byteOffset, text.bytes.byteLength)
    .toString('utf8')
    .split('\n');
  for (let r = 0, o = 0; r < packed.count; r++) {
    const cells = lines[r]!.split('\t');
    for (let c = 0; c < width; c++) values[o++] = readCell(cells[c]!, text.types[c]!);
  }
  rows = {
    names: text.names,
    values,
    count: packed.count,
    ...(packed.constants ? { constants: packed.constants } : {}),
  };
  plain.set(packed, rows);
  return rows;
}

const UNESCAPES = /\\(.)/g;
const UNESCAPE_OF: Record<string, string> = { n: '\n', r: '\r', t: '\t' };

function readCell(cell: string, type: ColumnType): RowValue {
  if (cell === '\\N') return null;
  const text = cell.includes('\\') ? cell.replace(UNESCAPES, (_, c) => UNESCAPE_OF[c] ?? c) : cell;
  if (type === 'boolean') return text === 't';
  if (NUMBERS.has(type)) {
    const value = Number(text);
    // An integer past 2^53 was written from a bigint (`readsBack`): it reads back as one.
    return type === 'integer' && !Number.isSafeInteger(value) && INTEGER.test(text)
      ? BigInt(text)
      : value;
  }
  return text;
}

const INTEGER = /^-?\d+$/;

/**
 * The COPY text of `text`, each line followed by `suffix` (cells of the load's own columns),
 * and its bytes, in a buffer that holds `count` lines.
 */
export function withSuffix(text: CopyText, count: number, suffix: string): Buffer {
  const tail = Buffer.from(`${suffix}\n`);
  const from = Buffer.from(text.bytes.buffer, text.bytes.byteOffset, text.bytes.byteLength);
  const out = Buffer.allocUnsafe(from.length + count * (tail.length - 1));
  let o = 0;
  let start = 0;
  for (let r = 0; r < count; r++) {
    const end = from.indexOf(10, start);
    o += from.copy(out, o, start, end);
    o += tail.copy(out, o);
    start = end + 1;
  }
  return out.subarray(0, o);
}
