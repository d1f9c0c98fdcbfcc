import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { type Options, parse } from 'csv-parse/sync';
import type { DataType } from '../catalog.js';
import { SluiceError } from '../errors.js';
import { DecodeError, type Decoder, decodersFor, hasNul, NUL_REASON } from './decode.js';
import {
  boundedLines,
  bytesBeyond,
  isLongLine,
  MAX_RECORD_BYTES,
  tooLongReason,
} from './record-size.js';
import { cutRaw, type DecodedRecord, type RecordShape } from './shape.js';
import type { ParsedRow, RecordBatch, RejectedLine } from './types.js';

/** Text gathered before csv-parse is called on it: large enough that a call costs little. */
const BLOCK_CHARS = 256 * 1024;

const CSV_OPTIONS: Options = {
  relax_column_count: true,
  // A lone CR is data, as it is for the record splitter below.
  record_delimiter: ['\r\n', '\n'],
};

/**
 * Streams a CSV result file through csv-parse, in batches. The header names the columns; a line
 * with the wrong number of cells, broken quoting or an undecodable cell becomes a reject with
 * its line, raw text and reason, and parsing goes on at the next line.
 *
 * The text is cut into whole records first (a newline outside quotes ends one), and csv-parse
 * parses blocks of whole records (see CsvReader).
 *
 * A record longer than `maxBytes` is one reject, and is never gathered whole: a line that passes
 * the limit before its newline is skipped to it (see `boundedLines`), and the text before it
 * ends there, its last record with it (closed or not, as at the end of the file). Text past the
 * limit with no record end in it, over several lines, is an unclosed quote or a record beyond
 * the limit: its first line is rejected and reading goes on at the next line, rather than
 * gathering the rest of the file to find out.
 */
export async function* csvBatches(
  source: Readable,
  type: DataType,
  shape: RecordShape,
  batchSize: number,
  maxBytes = MAX_RECORD_BYTES,
): AsyncGenerator<RecordBatch> {
  let bytesRead = 0;
  const decoder = new StringDecoder('utf8');
  const reader = new CsvReader(type, shape, undefined, maxBytes);
  let splitter = new RecordSplitter();
  let pending = '';
  let nextLine = 1;

  const drain = function* (): Generator<RecordBatch> {
    while (reader.rows.length >= batchSize) {
      yield { rows: reader.rows.slice(0, batchSize), ...reader.takeNotes(), bytesRead };
      reader.rows = reader.rows.slice(batchSize);
    }
  };

  let first = true;
  for await (const chunk of boundedLines(source as AsyncIterable<Buffer>, maxBytes)) {
    if (isLongLine(chunk)) {
      bytesRead += chunk.span;
      // It follows a newline: the text before it is whole lines, read to their end.
      if (pending.length > 0) {
        reader.parseBlock(pending, splitter.split(pending, true), nextLine, true);
        nextLine += newlines(pending);
        pending = '';
        splitter = new RecordSplitter();
      }
      reader.rejectLong(nextLine++, chunk.head.toString('utf8'), chunk.bytes);
      first = false;
      yield* drain();
      continue;
    }
    bytesRead += chunk.length;
    let text = decoder.write(chunk);
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    pending += text;
    if (pending.length < BLOCK_CHARS) continue;
    const ends = splitter.split(pending, false);
    const cut = ends.at(-1);
    if (cut === undefined) {
      if (bytesBeyond(pending, maxBytes) === undefined) continue;
      // No record ends in this much text: an unclosed quote. Reject its first line, go on.
      const used = reader.parseBlock(pending, [pending.length], nextLine, false);
      nextLine += newlines(pending.slice(0, used));
      pending = pending.slice(used);
      splitter = new RecordSplitter();
      yield* drain();
      continue;
    }
    const block = pending.slice(0, cut);
    const used = reader.parseBlock(block, ends, nextLine, false);
    nextLine += newlines(used === block.length ? block : block.slice(0, used));
    if (used === block.length) {
      pending = pending.slice(cut);
      splitter.rebase(cut);
    } else {
      pending = pending.slice(used);
      splitter = new RecordSplitter();
    }
    yield* drain();
  }
  pending += decoder.end();
  if (first && pending.charCodeAt(0) === 0xfeff) pending = pending.slice(1);
  if (pending.length > 0) {
    // The rest, the last record included even without its newline or its closing quote.
    reader.parseBlock(pending, splitter.split(pending, true), nextLine, true);
  }
  yield* drain();
  if (reader.rows.length > 0 || reader.rejects.length > 0 || reader.warnings.length > 0) {
    yield { rows: reader.rows, ...reader.takeNotes(), bytesRead };
  }
}

/**
 * One block of a CSV file cut at a record end, parsed on its own (a parse worker's share of a
 * file, see ParserPool): `columns` is the file's header, undefined for the block that holds it.
 * `forced`: no record ends in the block (an unclosed quote), which is read as one record.
 * Returns the reader, with the block's rows and rejects and the header it knows, and, when a
 * broken record moved where later records end, the lines of the block it used (the rest is read
 * again with the text that follows it, as `csvBatches` does; undefined: all of it).
 */
export function csvBlock(
  text: string,
  firstLine: number,
  options: { final: boolean; forced: boolean; columns: string[] | undefined },
  type: DataType,
  shape: RecordShape,
  maxBytes = MAX_RECORD_BYTES,
): { reader: CsvReader; usedLines?: number } {
  const reader = new CsvReader(type, shape, options.columns, maxBytes);
  const ends = options.forced ? [text.length] : new RecordSplitter().split(text, options.final);
  const used = ends.length === 0 ? 0 : reader.parseBlock(text, ends, firstLine, options.final);
  return used === text.length ? { reader } : { reader, usedLines: newlines(text.slice(0, used)) };
}

/**
 * Takes whole records of a CSV file, block by block, into rows and rejects. A block csv-parse
 * refuses is parsed again record by record, so one broken record costs only itself: a record
 * that runs over several lines because of an unbalanced quote is rejected for its first line,
 * and the lines after it are read again as records of their own. So every record of the file
 * is loaded or rejected, none swallowed.
 */
export class CsvReader {
  rows: ParsedRow[] = [];
  rejects: RejectedLine[] = [];
  /** What reading the header changed (see `distinctColumns`), said once per file. */
  warnings: string[] = [];
  /** The header as the file has it. */
  #header: string[] | undefined;
  /** The header's names, each once: the row keys. */
  #columns: string[] | undefined;
  #decoders: Decoder[] = [];

  constructor(
    readonly type: DataType,
    readonly shape: RecordShape,
    columns?: string[],
    /** Records longer than this are rejected (see record-size.ts). */
    readonly maxBytes = MAX_RECORD_BYTES,
  ) {
    if (columns !== undefined) this.#setColumns(columns, false);
  }

  /** The header's names as the file has them, once it has been read. */
  get columns(): string[] | undefined {
    return this.#header;
  }

  /**
   * The header, read from the file or given (the file's, read by another reader, which said
   * what it renamed). A repeated name keeps its cells in a column of its own, decoded as the
   * field it names.
   */
  #setColumns(header: string[], read: boolean): void {
    const { columns, renamed } = distinctColumns(header);
    this.#header = header;
    this.#columns = columns;
    this.#decoders = decodersFor(this.type, header, this.shape.asSent);
    if (read && renamed.length > 0) {
      const list = renamed.map((r) => `${r.name} (column ${r.at + 1}) as ${columns[r.at]}`);
      this.warnings.push(
        `the header names a column more than once; each later one loads as a column of its own: ${list.join(', ')}`,
      );
    }
  }

  /** The rejects and warnings so far, for a batch; the next batch starts without them. */
  takeNotes(): { rejects: RejectedLine[]; warnings?: string[] } {
    const { rejects, warnings } = this;
    this.rejects = [];
    this.warnings = [];
    return warnings.length > 0 ? { rejects, warnings } : { rejects };
  }

  #reject(line: number, raw: string, reason: string): void {
    // Without its header a file cannot be read: the next line would be taken for it.
    if (this.#columns === undefined) {
      throw new SluiceError(`the header line of the file cannot be read: ${reason}`, {
        code: 'SLUICE_BAD_FILE',
      });
    }
    this.rejects.push({ line, raw: cutRaw(raw), reason });
  }

  /** A line beyond the limit, skipped unread: its first bytes as text, and its size. */
  rejectLong(line: number, head: string, bytes: number): void {
    this.#reject(line, head, tooLongReason(bytes, this.maxBytes));
  }

  /** One parsed record, at `line`, whose text is `raw`. */
  #take(record: string[], line: number, raw: string): void {
    if (raw === '\n' || raw === '\r\n' || raw === '') return; // a blank line
    const bytes = bytesBeyond(raw, this.maxBytes);
    if (bytes !== undefined) {
      this.#reject(line, raw, tooLongReason(bytes, this.maxBytes));
      return;
    }
    const columns = this.#columns;
    if (columns === undefined) {
      this.#setColumns(record, true);
      return;
    }
    if (record.length !== columns.length) {
      this.#reject(
        line,
        raw,
        `expected ${columns.length} cells as in the header, got ${record.length}`,
      );
      return;
    }
    if (hasNul(raw)) {
      this.#reject(line, raw, NUL_REASON);
      return;
    }
    const decoded: DecodedRecord = Object.create(null);
    const decoders = this.#decoders;
    let i = 0;
    try {
      for (; i < columns.length; i++) {
        const name = columns[i]!;
        if (name === '') {
          if (record[i] === '') continue;
          throw new DecodeError('a value in a column with no name in the header');
        }
        decoded[name] = decoders[i]!(record[i]);
      }
      // Shaped here too: a pinned column's value that does not fit rejects the record.
      this.rows.push({ line, ...this.shape(decoded) });
    } catch (error) {
      if (!(error instanceof DecodeError)) throw error;
      const name = columns[i];
      this.#reject(line, raw, name ? `${name}: ${error.message}` : error.message);
    }
  }

  /**
   * Parses `text`, whole records ending at `ends`, whose first line is `firstLine`. Returns how
   * much of it was used: all of it, unless a broken record moved where later records end and
   * `final` is false; then the rest is read again with the text that follows it.
   */
  parseBlock(text: string, ends: number[], firstLine: number, final: boolean): number {
    let records: string[][] | undefined;
    try {
      records = parse(text, CSV_OPTIONS) as string[][];
    } catch {
      // Somewhere in the block a record is broken: find it, one record at a time.
    }
    if (records === undefined || records.length !== ends.length) {
      return this.#parseEach(text, ends, firstLine, final);
    }
    let start = 0;
    let line = firstLine;
    for (let i = 0; i < records.length; i++) {
      const end = ends[i]!;
      const raw = text.slice(start, end);
      this.#take(records[i]!, line, raw);
      line += newlines(raw);
      start = end;
    }
    return text.length;
  }

  /**
   * Record by record: each is parsed alone. A record that fails and runs over several lines
   * does so because of an unbalanced quote: its first line is rejected, and the text after that
   * line is cut into records again, so the quote no longer pairs with one further down.
   */
  #parseEach(text: string, recordEnds: number[], firstLine: number, final: boolean): number {
    let ends: number[] | undefined = recordEnds;
    let k = 0;
    let start = 0;
    let line = firstLine;
    for (;;) {
      let end: number;
      if (ends !== undefined) {
        if (k >= ends.length) break;
        end = ends[k++]!;
      } else {
        end = nextRecordEnd(text, start);
        if (end < 0) {
          if (!final || start >= text.length) break;
          end = text.length;
        }
      }
      const raw = text.slice(start, end);
      const failure = this.#parseOne(raw, line, !final && end === text.length);
      const newline = raw.indexOf('\n');
      if (failure !== undefined && newline >= 0 && newline < raw.length - 1) {
        this.#reject(line, raw.slice(0, newline + 1), failure);
        start += newline + 1;
        line += 1;
        ends = undefined; // cut the rest again, one record at a time
        continue;
      }
      if (failure !== undefined) this.#reject(line, raw, failure);
      line += newlines(raw);
      start = end;
    }
    return start;
  }

  /**
   * Parses one record's text; undefined when it was taken, else why it could not be. `cut`: the
   * text stops where this piece of the file does, not where the file does.
   */
  #parseOne(raw: string, line: number, cut: boolean): string | undefined {
    let records: string[][];
    try {
      records = parse(raw, CSV_OPTIONS) as string[][];
    } catch (error) {
      return csvReason(error, raw, line, cut);
    }
    if (records.length === 0) return undefined;
    if (records.length > 1) return 'more than one record where one was expected';
    this.#take(records[0]!, line, raw);
    return undefined;
  }
}

/**
 * Finds where records end in CSV text: just past each newline that is outside quotes. Scanning
 * resumes where it stopped when more text arrives, so each character is looked at once.
 */
class RecordSplitter {
  #pos: number;
  #inQuotes = false;
  #recordStart: number;

  /** Starts at `from`, outside quotes. */
  constructor(from = 0) {
    this.#pos = from;
    this.#recordStart = from;
  }

  /**
   * The end offsets of the whole records in `text` from where the last call stopped. With
   * `final`, text after the last newline (or inside an unclosed quote) ends one more record.
   */
  split(text: string, final: boolean): number[] {
    const ends: number[] = [];
    const start = this.#pos;
    let i = start;
    let inQuotes = this.#inQuotes;
    let lastEnd = -1;
    let nextQuote = text.indexOf('"', i);
    while (i < text.length) {
      if (inQuotes) {
        if (nextQuote < 0) {
          i = text.length;
          break;
        }
        // A doubled quote inside a quoted cell closes and opens again: the same result.
        inQuotes = false;
        i = nextQuote + 1;
        nextQuote = text.indexOf('"', i);
        continue;
      }
      const newline = text.indexOf('\n', i);
      if (newline < 0) {
        if (nextQuote < 0) {
          i = text.length;
          break;
        }
        inQuotes = true;
        i = nextQuote + 1;
        nextQuote = text.indexOf('"', i);
        continue;
      }
      if (nextQuote >= 0 && nextQuote < newline) {
        inQuotes = true;
        i = nextQuote + 1;
        nextQuote = text.indexOf('"', i);
        continue;
      }
      ends.push(newline + 1);
      lastEnd = newline + 1;
      i = newline + 1;
    }
    this.#pos = i;
    this.#inQuotes = inQuotes;
    if (lastEnd >= 0) this.#recordStart = lastEnd;
    if (final && this.#recordStart < text.length) {
      ends.push(text.length);
    }
    return ends;
  }

  /** The caller dropped the text before `offset`: positions move back by as much. */
  rebase(offset: number): void {
    this.#pos -= offset;
    this.#recordStart -= offset;
  }
}

/**
 * The header's names with each repeated one made distinct, so that no cell is dropped: a second
 * `city` becomes `city__2`, a third `city__3`, or the next number that no other column has.
 * Names left empty stay so (their cells must be empty).
 */
function distinctColumns(header: readonly string[]): {
  columns: string[];
  renamed: { name: string; at: number }[];
} {
  const taken = new Set(header);
  const seen = new Map<string, number>();
  const columns: string[] = [];
  const renamed: { name: string; at: number }[] = [];
  for (const [at, name] of header.entries()) {
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    if (count === 1 || name === '') {
      columns.push(name);
      continue;
    }
    let n = count;
    while (taken.has(`${name}__${n}`)) n++;
    const column = `${name}__${n}`;
    taken.add(column);
    columns.push(column);
    renamed.push({ name, at });
  }
  return { columns, renamed };
}

function newlines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * What csv-parse said about `raw`, the text of a record starting at line `line` of the file, with
 * the lines it names as lines of the file. Its own count starts at 1 in the text it was given and
 * is not the file's: it ends a line at every CR and every LF, except the LF of a CRLF that ends a
 * record, while the file's lines end at LF only. So a CRLF inside a quoted cell counts twice, a
 * CR in a cell once: the line is found again by counting both ways over `raw`.
 */
function csvReason(error: unknown, raw: string, line: number, cut: boolean): string {
  const message = error instanceof Error ? error.message : String(error);
  const inFile = (n: string) => fileLine(raw, line, Number(n));
  // Cut: csv-parse stopped at the end of the text gathered to look for the closing quote, not
  // at the end of the file, as its message would have it.
  const open =
    cut && (error as { code?: unknown }).code === 'CSV_QUOTE_NOT_CLOSED'
      ? /\bat line (\d+)/.exec(message)?.[1]
      : undefined;
  if (open !== undefined) {
    return `Quote Not Closed: still open at line ${inFile(open)}, ${raw.length.toLocaleString('en-US')} characters further on`;
  }
  return message.replace(
    /\b(at|on) line (\d+)/g,
    (_, word: string, n: string) => `${word} line ${inFile(n)}`,
  );
}

const QUOTE = 0x22;
const CR = 0x0d;
const LF = 0x0a;

/**
 * The file line of csv-parse's line `n` of `raw` (see csvReason). Quotes are followed as the
 * record splitter follows them: up to the error csv-parse reports, it agrees with that.
 */
function fileLine(raw: string, firstLine: number, n: number): number {
  let counted = 1;
  let line = firstLine;
  let inQuotes = false;
  for (let i = 0; i < raw.length && counted < n; i++) {
    const c = raw.charCodeAt(i);
    if (c === QUOTE) inQuotes = !inQuotes;
    else if (c === LF) {
      counted++;
      line++;
    } else if (c === CR) {
      counted++;
      if (!inQuotes && raw.charCodeAt(i + 1) === LF) {
        i++;
        line++;
      }
    }
  }
  return line;
}

/** Just past the first newline outside quotes from `from`, or -1 if there is none. */
function nextRecordEnd(text: string, from: number): number {
  let i = from;
  let newline = text.indexOf('\n', i);
  for (;;) {
    const quote = text.indexOf('"', i);
    if (quote < 0 || (newline >= 0 && newline < quote)) return newline < 0 ? -1 : newline + 1;
    const close = text.indexOf('"', quote + 1);
    if (close < 0) return -1;
    i = close + 1;
    if (newline >= 0 && newline < i) newline = text.indexOf('\n', i);
  }
}
