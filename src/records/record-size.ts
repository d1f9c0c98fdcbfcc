import { cutRaw } from './shape.js';
import type { RejectedLine } from './types.js';

/**
 * The size beyond which a record (an NDJSON line, a CSV record) is rejected instead of loaded:
 * 4 MiB, unless `SLUICE_MAX_RECORD_BYTES` says otherwise (pipeline/load/normalize.ts).
 *
 * The service's largest records are a few tens of kB (a property with every nested array: its
 * people, prices, transactions, taxes), so this is a hundred times that. It is also what a
 * parse worker (a heap of 48 MB, parallel.ts) can hold as one record: parsing a record takes
 * several times its size (its text, the parsed value, the row's values, its COPY text), and
 * lines of 8 MiB (escaped newlines, arrays of small numbers or objects) and of 16 MiB (one
 * plain string) ran a worker out of memory, where every shape of 4 MiB tried loaded.
 * Without a limit, one line of 150 MB ran the main thread out of its heap after minutes of
 * gathering it, killing the run and blocking the pipeline for good.
 */
export const MAX_RECORD_BYTES = 4 << 20;

/** Why a record of `bytes` bytes is rejected. */
export function tooLongReason(bytes: number, limit: number): string {
  return `a record of ${bytes.toLocaleString('en-US')} bytes, more than the ${limit.toLocaleString('en-US')} a record may hold (SLUICE_MAX_RECORD_BYTES)`;
}

/**
 * The UTF-8 size of a record's text in memory (its line end not counted) when it is beyond
 * `limit`, else undefined. Cheap for the usual record: a character takes at most three bytes
 * (four for a surrogate pair, two characters), so short text is never measured.
 */
export function bytesBeyond(text: string, limit: number): number | undefined {
  if (text.length * 3 <= limit) return undefined;
  let end = text.length;
  if (text.charCodeAt(end - 1) === 10) end -= text.charCodeAt(end - 2) === 13 ? 2 : 1;
  const bytes = Buffer.byteLength(end === text.length ? text : text.slice(0, end));
  return bytes > limit ? bytes : undefined;
}

/** The reject of a record beyond the limit: its first 10 kB and its size. */
export function tooLongReject(
  line: number,
  head: string,
  bytes: number,
  limit: number,
): RejectedLine {
  return { line, raw: cutRaw(head), reason: tooLongReason(bytes, limit) };
}

/** A line beyond the limit, taken out of a file's bytes (see `boundedLines`). */
export interface LongLine {
  /** Bytes of the line, its newline not counted. */
  readonly bytes: number;
  /** Bytes of the file it took: its newline too (none when it ends the file). */
  readonly span: number;
  /** Its first bytes, enough for the reject's 10 kB of text in any script. */
  readonly head: Buffer;
}

/** Bytes kept of a line beyond the limit: 10 kB of text, of up to four bytes a character. */
const HEAD_BYTES = 40_000;

export function isLongLine(piece: Buffer | LongLine): piece is LongLine {
  return !Buffer.isBuffer(piece);
}

/**
 * A file's bytes with each line that passes `limit` bytes before its newline taken out, and
 * handed on as a LongLine in its place. The bytes of an unfinished line are held back until its
 * newline comes (then they go on, with the bytes up to it), until they pass the limit (then the
 * rest of the line is skipped to its newline, counted and never gathered), or until the file
 * ends. So a reader after this holds at most the limit and a chunk of one line, whatever the
 * file: a line of 150 MB costs its first 40 kB. Every piece but the file's last ends with a
 * newline or is held-back bytes of the line the next piece ends. A newline byte is never part
 * of a UTF-8 character, so lines are cut the same whatever the text.
 *
 * Lines that end in the chunk they began in are not measured here (readers check each record
 * they parse, `bytesBeyond`): this only bounds what is gathered.
 */
export async function* boundedLines(
  source: AsyncIterable<Buffer>,
  limit: number,
): AsyncGenerator<Buffer | LongLine> {
  /** The bytes of the unfinished line. */
  let held: Buffer[] = [];
  let heldBytes = 0;
  /** The line being skipped: its bytes so far, its head, whether its last byte is a CR. */
  let skipped: { bytes: number; head: Buffer; cr: boolean } | undefined;
  // A CR before the newline belongs to the line end, not to the line (as readers count it).
  const longLine = ({ bytes, head, cr }: { bytes: number; head: Buffer; cr: boolean }) => ({
    bytes: cr ? bytes - 1 : bytes,
    span: bytes,
    head,
  });
  for await (const chunk of source) {
    let rest = chunk;
    if (skipped !== undefined) {
      const newline = rest.indexOf(10);
      const end = newline < 0 ? rest.length : newline;
      // A limit below the reject's 10 kB: its text is taken on from the bytes skipped.
      if (skipped.head.length < HEAD_BYTES && end > 0) {
        const more = rest.subarray(0, Math.min(end, HEAD_BYTES - skipped.head.length));
        skipped.head = Buffer.concat([skipped.head, more]);
      }
      if (newline < 0) {
        skipped.bytes += rest.length;
        skipped.cr = rest[rest.length - 1] === 13;
        continue;
      }
      if (newline > 0) skipped.cr = rest[newline - 1] === 13;
      skipped.bytes += newline;
      const line = longLine(skipped);
      yield { ...line, span: line.span + 1 };
      skipped = undefined;
      rest = rest.subarray(newline + 1);
    }
    const last = rest.lastIndexOf(10);
    if (last >= 0) {
      for (const piece of held) yield piece;
      held = [];
      heldBytes = 0;
      yield rest.subarray(0, last + 1);
      rest = rest.subarray(last + 1);
    }
    if (rest.length === 0) continue;
    held.push(rest);
    heldBytes += rest.length;
    if (heldBytes > limit) {
      const head = Buffer.concat(held, Math.min(heldBytes, HEAD_BYTES));
      skipped = { bytes: heldBytes, head, cr: rest[rest.length - 1] === 13 };
      held = [];
      heldBytes = 0;
    }
  }
  if (skipped !== undefined) yield longLine(skipped);
  for (const piece of held) yield piece;
}
