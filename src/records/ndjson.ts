import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { type DataType, FIELDS, type FieldMap } from '../catalog.js';
import { packedColumns } from '../schema/plan.js';
import type { RowValue } from '../schema/types.js';
import {
  DecodeError,
  type Decoder,
  decoderFor,
  fieldDef,
  hasNul,
  NUL_REASON,
  toColumnValue,
} from './decode.js';
import { InexactNumber, parseExact } from './numbers.js';
import {
  boundedLines,
  bytesBeyond,
  isLongLine,
  MAX_RECORD_BYTES,
  tooLongReject,
} from './record-size.js';
import { cutRaw, type DecodedRecord, LOAD_NAMES, type RecordShape } from './shape.js';
import type { PackedBatch, RecordBatch, RejectedLine } from './types.js';

/** Rows and rejects gathered from lines. */
interface Gathered {
  rows: RecordBatch['rows'];
  rejects: RejectedLine[];
}

/**
 * The catalogue's decoder of each field of a data type, looked up once per field name; none for
 * the fields of `asSent`, kept as the file sends them (see RecordShape).
 */
function fieldDecoders(
  type: DataType,
  asSent?: ReadonlySet<string>,
): (key: string) => Decoder | null {
  const fields = FIELDS[type];
  const decoders = new Map<string, Decoder | null>();
  return (key) => {
    let d = decoders.get(key);
    if (d === undefined) {
      const def = asSent?.has(key) ? undefined : fieldDef(fields, key);
      d = def === undefined ? null : decoderFor(def);
      decoders.set(key, d);
    }
    return d;
  };
}

/**
 * One NDJSON line as a JSON object, its numbers exact (numbers.ts) or, in the fields of `asSent`,
 * as written; or undefined with a reject (its line number and text) when it is not one, holds a
 * NUL or a number that cannot be stored as written, or is longer than `maxBytes`; blank lines
 * are undefined too, with no reject.
 */
function parseLine(
  line: string,
  lineNo: number,
  rejects: RejectedLine[],
  maxBytes: number,
  asSent?: ReadonlySet<string>,
): Record<string, unknown> | undefined {
  const bytes = bytesBeyond(line, maxBytes);
  if (bytes !== undefined) {
    rejects.push(tooLongReject(lineNo, line, bytes, maxBytes));
    return undefined;
  }
  if (line.length === 0 || /^\s*$/.test(line)) return undefined;
  let value: unknown;
  try {
    value = parseExact(line, asSent);
  } catch (error) {
    // A raw NUL in a string makes the line invalid JSON too: the NUL is what to say.
    const reason = hasNul(line)
      ? NUL_REASON
      : error instanceof InexactNumber
        ? error.message
        : `not valid JSON: ${(error as Error).message}`;
    rejects.push({ line: lineNo, raw: cutRaw(line), reason });
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    rejects.push({ line: lineNo, raw: cutRaw(line), reason: 'not a JSON object' });
    return undefined;
  }
  if (hasNul(line)) {
    rejects.push({ line: lineNo, raw: cutRaw(line), reason: NUL_REASON });
    return undefined;
  }
  return value as Record<string, unknown>;
}

/**
 * Decodes each field of a parsed line by the catalogue, in order, into `put`; a field with an
 * empty name is skipped when it holds nothing. Throws DecodeError, with the field's name.
 */
function decodeFields(
  value: Record<string, unknown>,
  decoderOf: (key: string) => Decoder | null,
  put: (key: string, decoded: unknown) => void,
): void {
  let key = '';
  try {
    // JSON.parse makes `__proto__` an own property: it is a field like any other.
    for (key of Object.keys(value)) {
      const v = value[key];
      if (key === '') {
        if (v === null || v === '') continue;
        throw new DecodeError('a field with an empty name');
      }
      const decoder = decoderOf(key);
      put(key, decoder === null ? (v === '' ? null : v) : decoder(v));
    }
  } catch (error) {
    if (!(error instanceof DecodeError)) throw error;
    throw new DecodeError(key ? `${key}: ${error.message}` : error.message);
  }
}

/**
 * Reads one NDJSON line into `into`: a row, or a reject with its line number and text when the
 * line is not a JSON object, is longer than `maxBytes` or a value cannot be decoded; blank
 * lines are skipped.
 */
function lineReader(type: DataType, shape: RecordShape, maxBytes: number) {
  const decoderOf = fieldDecoders(type, shape.asSent);
  return (line: string, lineNo: number, into: Gathered): void => {
    const value = parseLine(line, lineNo, into.rejects, maxBytes, shape.asSent);
    if (value === undefined) return;
    const decoded: DecodedRecord = Object.create(null);
    try {
      decodeFields(value, decoderOf, (key, v) => {
        decoded[key] = v;
      });
      // Shaped here too: a pinned column's value that does not fit rejects the record.
      into.rows.push({ line: lineNo, ...shape(decoded) });
    } catch (error) {
      if (!(error instanceof DecodeError)) throw error;
      into.rejects.push({ line: lineNo, raw: cutRaw(line), reason: error.message });
    }
  };
}

/**
 * The job table's rows of `nested: json` NDJSON, packed as they are read (see PackedRows): each
 * line's values go straight to their column's place, with no object made per row, which is
 * what most of a parse worker's time went to.
 */
export class NdjsonPacker {
  readonly #decoderOf: (key: string) => Decoder | null;
  /** This batch's fields, in the order first seen, and where each goes in a row. */
  #names: string[] = [];
  #index = new Map<string, number>();
  /** Fields in the order a value first came in them: the batch's columns (as batchColumns). */
  #valued: number[] = [];
  #hasValue: boolean[] = [];
  #rows: RowValue[][] = [];
  #lines: number[] = [];
  #rejects: RejectedLine[] = [];

  constructor(
    type: DataType,
    readonly hints: FieldMap,
    /** Lines longer than this are rejected (see record-size.ts). */
    readonly maxBytes = MAX_RECORD_BYTES,
  ) {
    this.#decoderOf = fieldDecoders(type);
  }

  get rows(): number {
    return this.#rows.length;
  }

  get rejects(): number {
    return this.#rejects.length;
  }

  /** Keeps a line aside that was not read (one beyond the limit, see `streamLines`). */
  reject(reject: RejectedLine): void {
    this.#rejects.push(reject);
  }

  add(line: string, lineNo: number): void {
    const value = parseLine(line, lineNo, this.#rejects, this.maxBytes);
    if (value === undefined) return;
    const row: RowValue[] = new Array(this.#names.length).fill(null);
    /** Fields that get their first value of the batch from this line. */
    const first: number[] = [];
    try {
      decodeFields(value, this.#decoderOf, (key, v) => {
        let at = this.#index.get(key);
        if (at === undefined) {
          at = this.#names.length;
          // Its column, as `jsonRow` names it (never one of the load's own: see OwnNames).
          this.#names.push(LOAD_NAMES.column(key));
          this.#index.set(key, at);
        }
        const stored = toColumnValue(v);
        row[at] = stored;
        if (stored !== null && !this.#hasValue[at]) first.push(at);
      });
    } catch (error) {
      if (!(error instanceof DecodeError)) throw error;
      this.#rejects.push({ line: lineNo, raw: cutRaw(line), reason: error.message });
      return;
    }
    for (const at of first) {
      this.#hasValue[at] = true;
      this.#valued.push(at);
    }
    this.#rows.push(row);
    this.#lines.push(lineNo);
  }

  /** The batch read since the last one; the next one starts afresh. */
  take(bytesRead: number): PackedBatch {
    const columns = this.#valued;
    const names = columns.map((at) => this.#names[at]!);
    const width = names.length;
    const values: RowValue[] = new Array(this.#rows.length * width);
    let o = 0;
    for (const row of this.#rows) {
      for (let c = 0; c < width; c++) values[o++] = row[columns[c]!] ?? null;
    }
    const rows = { names, values, count: this.#rows.length };
    const batch: PackedBatch = {
      rows,
      columns: packedColumns(rows, this.hints),
      lines: this.#lines,
      rejects: this.#rejects,
      bytesRead,
    };
    this.#names = [];
    this.#index = new Map();
    this.#valued = [];
    this.#hasValue = [];
    this.#rows = [];
    this.#lines = [];
    this.#rejects = [];
    return batch;
  }
}

/**
 * Splits text into lines (`\n` or `\r\n`; the last may have none), numbered from `firstLine`;
 * returns the number the next line would have.
 */
function eachLine(
  text: string,
  firstLine: number,
  take: (line: string, n: number) => void,
): number {
  let lineNo = firstLine;
  let start = 0;
  while (start < text.length) {
    let nl = text.indexOf('\n', start);
    if (nl < 0) nl = text.length;
    const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
    take(text.slice(start, end), lineNo++);
    start = nl + 1;
  }
  return lineNo;
}

/** A block of whole lines (see `ndjsonBlock`) as one packed batch of `nested: json` rows. */
export function ndjsonPackedBlock(
  text: string,
  firstLine: number,
  packer: NdjsonPacker,
): PackedBatch {
  eachLine(text, firstLine, (line, n) => packer.add(line, n));
  return packer.take(0);
}

/** `ndjsonBatches` for `nested: json` rows, packed as they are read. */
export async function* ndjsonPackedBatches(
  source: Readable,
  packer: NdjsonPacker,
  batchSize: number,
): AsyncGenerator<PackedBatch> {
  let bytesRead = 0;
  const lines = streamLines(
    source,
    (line, n) => packer.add(line, n),
    (reject) => packer.reject(reject),
    packer.maxBytes,
  );
  for await (bytesRead of lines) {
    if (packer.rows >= batchSize) yield packer.take(bytesRead);
  }
  if (packer.rows > 0 || packer.rejects > 0) yield packer.take(bytesRead);
}

/**
 * Hands each line of a streamed file to `take` (`\n` or `\r\n` ends one; the last may have
 * none), numbered from 1, and yields the bytes read so far after each chunk's lines and once
 * more after the last line. A byte order mark opening the file is not part of its first line.
 * A line longer than `maxBytes` is not gathered: `reject` gets its reject (its first 10 kB and
 * its size) in its place, so memory stays bounded whatever the file (see `boundedLines`).
 */
async function* streamLines(
  source: Readable,
  take: (line: string, lineNo: number) => void,
  reject: (reject: RejectedLine) => void,
  maxBytes: number,
): AsyncGenerator<number> {
  const text = new StringDecoder('utf8');
  let bytesRead = 0;
  let lineNo = 1;
  /** The text after the last newline, which the next piece goes on. */
  let rest = '';
  let first = true;
  for await (const piece of boundedLines(source as AsyncIterable<Buffer>, maxBytes)) {
    if (isLongLine(piece)) {
      // It follows a newline (or opens the file): nothing of another line is held.
      bytesRead += piece.span;
      reject(tooLongReject(lineNo++, piece.head.toString('utf8'), piece.bytes, maxBytes));
      first = false;
      yield bytesRead;
      continue;
    }
    bytesRead += piece.length;
    let decoded = text.write(piece);
    if (first && decoded.length > 0) {
      if (decoded.charCodeAt(0) === 0xfeff) decoded = decoded.slice(1);
      first = false;
    }
    // Only the new text is searched: a long line held piece by piece is scanned once.
    const newline = decoded.lastIndexOf('\n');
    if (newline < 0) {
      rest += decoded;
      continue;
    }
    // The piece's whole lines; what follows its last newline waits for the next piece.
    lineNo = eachLine(rest + decoded.slice(0, newline + 1), lineNo, take);
    rest = decoded.slice(newline + 1);
    yield bytesRead;
  }
  rest += text.end();
  if (rest.length > 0) take(rest.endsWith('\r') ? rest.slice(0, -1) : rest, lineNo);
  yield bytesRead;
}

/**
 * Streams a newline-delimited JSON result file, in batches. A line that is not a JSON object,
 * or longer than `maxBytes`, becomes a reject with its line number and text; blank lines are
 * skipped.
 */
export async function* ndjsonBatches(
  source: Readable,
  type: DataType,
  shape: RecordShape,
  batchSize: number,
  maxBytes = MAX_RECORD_BYTES,
): AsyncGenerator<RecordBatch> {
  const take = lineReader(type, shape, maxBytes);
  let bytesRead = 0;
  let gathered: Gathered = { rows: [], rejects: [] };
  const lines = streamLines(
    source,
    (line, n) => take(line, n, gathered),
    (reject) => gathered.rejects.push(reject),
    maxBytes,
  );
  for await (bytesRead of lines) {
    if (gathered.rows.length >= batchSize) {
      yield { ...gathered, bytesRead };
      gathered = { rows: [], rejects: [] };
    }
  }
  if (gathered.rows.length > 0 || gathered.rejects.length > 0) yield { ...gathered, bytesRead };
}

/**
 * A block of whole NDJSON lines (cut at newlines by the caller, so that blocks of one file can
 * be parsed by several workers at once), whose first line is `firstLine` of its file.
 */
export function ndjsonBlock(
  text: string,
  firstLine: number,
  type: DataType,
  shape: RecordShape,
  maxBytes = MAX_RECORD_BYTES,
): Gathered {
  const take = lineReader(type, shape, maxBytes);
  const gathered: Gathered = { rows: [], rejects: [] };
  eachLine(text, firstLine, (line, n) => take(line, n, gathered));
  return gathered;
}
