import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { type DataType, FIELDS } from '../catalog.js';
import {
  DecodeError,
  type Decoder,
  decoderFor,
  fieldDef,
  hasNul,
  NUL_REASON,
} from './normalize.js';
import { cutRaw, type DecodedRecord, type RecordShape } from './shape.js';
import type { RecordBatch, RejectedLine } from './types.js';

/** Rows and rejects gathered from lines. */
interface Gathered {
  rows: RecordBatch['rows'];
  rejects: RejectedLine[];
}

/**
 * Reads one NDJSON line into `into`: a row, or a reject with its line number and text when the
 * line is not a JSON object or a value cannot be decoded; blank lines are skipped.
 */
function lineReader(type: DataType, shape: RecordShape) {
  const fields = FIELDS[type];
  const decoders = new Map<string, Decoder | null>();
  const decoderOf = (key: string): Decoder | null => {
    let d = decoders.get(key);
    if (d === undefined) {
      const def = fieldDef(fields, key);
      d = def === undefined ? null : decoderFor(def);
      decoders.set(key, d);
    }
    return d;
  };
  return (line: string, lineNo: number, into: Gathered): void => {
    if (line.length === 0 || /^\s*$/.test(line)) return;
    const { rows, rejects } = into;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      rejects.push({
        line: lineNo,
        raw: cutRaw(line),
        reason: `not valid JSON: ${(error as Error).message}`,
      });
      return;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      rejects.push({ line: lineNo, raw: cutRaw(line), reason: 'not a JSON object' });
      return;
    }
    if (hasNul(line)) {
      rejects.push({ line: lineNo, raw: cutRaw(line), reason: NUL_REASON });
      return;
    }
    const decoded: DecodedRecord = Object.create(null);
    let key = '';
    try {
      // JSON.parse makes `__proto__` an own property; copying it into a null-prototype object
      // keeps it a field like any other.
      for (key of Object.keys(value)) {
        const v = (value as Record<string, unknown>)[key];
        if (key === '') {
          if (v === null || v === '') continue;
          throw new DecodeError('a field with an empty name');
        }
        const decoder = decoderOf(key);
        decoded[key] = decoder === null ? (v === '' ? null : v) : decoder(v);
      }
    } catch (error) {
      if (!(error instanceof DecodeError)) throw error;
      const reason = key ? `${key}: ${error.message}` : error.message;
      rejects.push({ line: lineNo, raw: cutRaw(line), reason });
      return;
    }
    rows.push({ line: lineNo, ...shape(decoded) });
  };
}

/**
 * Streams a newline-delimited JSON result file, in batches. A line that is not a JSON object
 * becomes a reject with its line number and text; blank lines are skipped.
 */
export async function* ndjsonBatches(
  source: Readable,
  type: DataType,
  shape: RecordShape,
  batchSize: number,
): AsyncGenerator<RecordBatch> {
  const take = lineReader(type, shape);
  const text = new StringDecoder('utf8');
  let bytesRead = 0;
  let lineNo = 0;
  let rest = '';
  let gathered: Gathered = { rows: [], rejects: [] };

  for await (const chunk of source as AsyncIterable<Buffer>) {
    bytesRead += chunk.length;
    const textChunk = rest + text.write(chunk);
    let start = 0;
    for (let nl = textChunk.indexOf('\n'); nl >= 0; nl = textChunk.indexOf('\n', start)) {
      const end = nl > start && textChunk.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      take(textChunk.slice(start, end), ++lineNo, gathered);
      start = nl + 1;
    }
    rest = textChunk.slice(start);
    if (gathered.rows.length >= batchSize) {
      yield { ...gathered, bytesRead };
      gathered = { rows: [], rejects: [] };
    }
  }
  rest += text.end();
  if (rest.length > 0) take(rest.endsWith('\r') ? rest.slice(0, -1) : rest, ++lineNo, gathered);
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
): Gathered {
  const take = lineReader(type, shape);
  const gathered: Gathered = { rows: [], rejects: [] };
  let lineNo = firstLine;
  let start = 0;
  while (start < text.length) {
    let nl = text.indexOf('\n', start);
    if (nl < 0) nl = text.length;
    const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
    take(text.slice(start, end), lineNo++, gathered);
    start = nl + 1;
  }
  return gathered;
}
