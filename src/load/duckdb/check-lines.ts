import { open } from 'node:fs/promises';
import { csvLineCheck } from './csv-scan.js';
import { type CheckedField, type LineCheck, lineCheck } from './line-checks.js';
import { lineScan, UNSURE } from './line-scan.js';

/**
 * A part of a spooled file whose lines are to be checked (line-checks.ts): bytes `start` to
 * `end`, which begins a line and ends one (or the file).
 */
export interface RangeToCheck {
  path: string;
  start: number;
  end: number;
  /** NDJSON lines, or CSV records after the header (`fields` in its order). */
  format: 'json' | 'csv';
  fields: CheckedField[];
  maxBytes: number;
  /** A merge's key fields, each to be there. */
  keyed: string[];
  /** The range is the whole file: its keys are not returned, only whether one came again. */
  whole?: boolean;
}

/** What the check of a range found. */
export interface RangeChecked {
  /** Its lines, empty ones too (up to the one in doubt). */
  count: number;
  /** Its records: lines not empty (DuckDB's JSON reader skips an empty line; in CSV, a doubt). */
  records: number;
  /** The first line in doubt: its number within the range (from 1), and why. */
  doubt?: { line: number; why: string };
  /**
   * A merge's keys, as the JSON text of their values joined by commas (two lines of one key
   * have the same, unless the same value is written two ways, `1` and `"1"`: read-file.ts
   * trusts it for text keys only), each once; and whether a key came again.
   */
  keys: string[];
  again: boolean;
}

/** What the check of a whole file's lines found (read-file.ts), and by which plan's fields. */
export interface FileChecked {
  signature: string;
  /** CSV: the fields of the header, in its order. */
  header?: CheckedField[];
  records: number;
  doubt?: { line: number; why: string };
  /** A merge's key came in two lines or more. */
  keyAgain: boolean;
}

/** The bytes read at a time by a check. */
const CHUNK = 1 << 20;

/** Checks the lines of a range of a spooled file (see `RangeToCheck`). */
export async function checkRange(range: RangeToCheck): Promise<RangeChecked> {
  const keys = new Set<string>();
  const found: RangeChecked = { count: 0, records: 0, keys: [], again: false };
  const onKey = (key: string) => {
    if (keys.has(key)) found.again = true;
    else keys.add(key);
  };
  const test = lineTest(range, onKey);
  const csv = range.format === 'csv';
  const one = (bytes: Buffer): boolean => {
    found.count++;
    if (bytes.length === 0 && !csv) return true;
    found.records++;
    const why = test(bytes);
    if (why !== undefined) found.doubt = { line: found.count, why };
    return why === undefined;
  };
  if (range.end <= range.start) return found;
  const handle = await open(range.path, 'r');
  // One buffer read into again and again, the line begun and not ended moved to its start: a
  // stream's new megabyte a chunk was external memory that V8 counts towards the next full
  // collection, which then came every few megabytes read (docs/speed.md).
  let buffer = Buffer.allocUnsafe(Math.min(CHUNK, range.maxBytes + 1));
  /** Bytes at the buffer's start of a line not yet ended. */
  let held = 0;
  let at = range.start;
  try {
    while (at < range.end) {
      const want = Math.min(buffer.length - held, range.end - at);
      const { bytesRead } = await handle.read(buffer, held, want, at);
      if (bytesRead === 0) break;
      at += bytesRead;
      const view = buffer.subarray(0, held + bytesRead);
      let start = 0;
      for (let nl = view.indexOf(10, held); nl >= 0; nl = view.indexOf(10, start)) {
        if (!one(view.subarray(start, nl))) return found;
        start = nl + 1;
      }
      held = view.length - start;
      // A line past the size limit is a doubt as it comes: it is not held whole.
      if (held > range.maxBytes) {
        found.count++;
        found.records++;
        found.doubt = { line: found.count, why: 'over the record size limit' };
        return found;
      }
      buffer.copyWithin(0, start, view.length);
      if (held === buffer.length) {
        // A line longer than the buffer: a larger one, up to one byte past the limit.
        const larger = Buffer.allocUnsafe(Math.min(buffer.length * 2, range.maxBytes + 1));
        buffer.copy(larger, 0, 0, held);
        buffer = larger;
      }
    }
  } finally {
    await handle.close();
  }
  if (held > 0) one(buffer.subarray(0, held));
  if (range.whole !== true) found.keys = [...keys];
  return found;
}

/** The test of a line of the range's format. */
function lineTest(
  { format, fields, maxBytes, keyed }: RangeToCheck,
  onKey: (key: string) => void,
): (line: Buffer) => string | undefined {
  if (format === 'csv') return csvLineCheck(fields, maxBytes, keyed, onKey);
  const scan = lineScan(fields, maxBytes, keyed, onKey);
  const check: LineCheck = lineCheck(fields, maxBytes, keyed, onKey);
  return (bytes) => {
    const scanned = scan(bytes);
    return scanned === UNSURE ? check(bytes.toString('utf8'), bytes.length) : scanned;
  };
}

/**
 * Where to split a file of `size` bytes in two for two checks at once: the start of the first
 * line at or after its middle (`size` when there is none).
 */
export async function middleLine(path: string, size: number): Promise<number> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(1 << 16);
    for (let at = Math.floor(size / 2); at < size; at += buffer.length) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, at);
      const nl = buffer.subarray(0, bytesRead).indexOf(10);
      if (nl >= 0) return at + nl + 1;
      if (bytesRead === 0) break;
    }
    return size;
  } finally {
    await handle.close();
  }
}

/**
 * The first line of a file (a CSV header), without its newline, and where the next begins;
 * undefined when none ends within `maxBytes` or the file's first MiB.
 */
export async function firstLine(
  path: string,
  maxBytes: number,
): Promise<{ line: Buffer; end: number } | undefined> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(Math.min(maxBytes, 1 << 20));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const nl = buffer.subarray(0, bytesRead).indexOf(10);
    return nl < 0 ? undefined : { line: buffer.subarray(0, nl), end: nl + 1 };
  } finally {
    await handle.close();
  }
}
