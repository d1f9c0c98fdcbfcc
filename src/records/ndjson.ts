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

  const text = new StringDecoder('utf8');
  let bytesRead = 0;
  let lineNo = 0;
  let rest = '';
  let rows: RecordBatch['rows'] = [];
  let rejects: RejectedLine[] = [];

  const take = (line: string) => {
    lineNo++;
    if (line.length === 0 || /^\s*$/.test(line)) return;
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

  for await (const chunk of source as AsyncIterable<Buffer>) {
    bytesRead += chunk.length;
    const textChunk = rest + text.write(chunk);
    let start = 0;
    for (let nl = textChunk.indexOf('\n'); nl >= 0; nl = textChunk.indexOf('\n', start)) {
      const end = nl > start && textChunk.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      take(textChunk.slice(start, end));
      start = nl + 1;
    }
    rest = textChunk.slice(start);
    if (rows.length >= batchSize) {
      yield { rows, rejects, bytesRead };
      rows = [];
      rejects = [];
    }
  }
  rest += text.end();
  if (rest.length > 0) take(rest.endsWith('\r') ? rest.slice(0, -1) : rest);
  if (rows.length > 0 || rejects.length > 0) yield { rows, rejects, bytesRead };
}
