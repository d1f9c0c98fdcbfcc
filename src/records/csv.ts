import type { Readable } from 'node:stream';
import { type CsvError, parse } from 'csv-parse';
import type { DataType } from '../catalog.js';
import { DecodeError, type Decoder, decodersFor } from './normalize.js';
import { cutRaw, type DecodedRecord, type RecordShape } from './shape.js';
import type { RecordBatch, RejectedLine } from './types.js';

/**
 * Streams a CSV result file through csv-parse, in batches. The header names the columns; a line
 * with the wrong number of cells, broken quoting or an undecodable cell becomes a reject with
 * its line, raw text and reason, and parsing goes on.
 */
export async function* csvBatches(
  source: Readable,
  type: DataType,
  shape: RecordShape,
  batchSize: number,
): AsyncGenerator<RecordBatch> {
  let bytesRead = 0;
  source.on('data', (chunk: Buffer) => {
    bytesRead += chunk.length;
  });
  let rejects: RejectedLine[] = [];
  const parser = parse({
    bom: true,
    relax_column_count: true,
    info: true,
    raw: true,
    skip_records_with_error: true,
    on_skip: (error: CsvError | undefined, raw?: string) => {
      if (!error) return;
      const line = typeof error.lines === 'number' ? error.lines : 0;
      rejects.push({ line, raw: cutRaw(raw ?? ''), reason: error.message });
    },
  });
  source.on('error', (error) => parser.destroy(error));
  source.pipe(parser);

  let columns: string[] | undefined;
  let decoders: Decoder[] = [];
  let rows: RecordBatch['rows'] = [];
  for await (const { record, info, raw } of parser as AsyncIterable<{
    record: string[];
    info: { lines: number };
    raw: string;
  }>) {
    const line = info.lines - newlinesWithin(raw);
    if (columns === undefined) {
      columns = record;
      decoders = decodersFor(type, columns);
      continue;
    }
    if (record.length !== columns.length) {
      if (record.length === 1 && record[0] === '') continue; // a blank line
      rejects.push({
        line,
        raw: cutRaw(raw),
        reason: `expected ${columns.length} cells as in the header, got ${record.length}`,
      });
    } else {
      try {
        const decoded: DecodedRecord = {};
        for (let i = 0; i < columns.length; i++) decoded[columns[i]!] = decoders[i]!(record[i]);
        rows.push({ line, ...shape(decoded) });
      } catch (error) {
        if (!(error instanceof DecodeError)) throw error;
        rejects.push({ line, raw: cutRaw(raw), reason: error.message });
      }
    }
    if (rows.length >= batchSize) {
      yield { rows, rejects, bytesRead };
      rows = [];
      rejects = [];
    }
  }
  if (rows.length > 0 || rejects.length > 0) yield { rows, rejects, bytesRead };
}

/** Newlines inside a record's raw text, not counting the one that ends it. */
function newlinesWithin(raw: string): number {
  let n = 0;
  for (let i = raw.indexOf('\n'); i >= 0 && i < raw.length - 1; i = raw.indexOf('\n', i + 1)) n++;
  return n;
}
