import type { Readable } from 'node:stream';
import type { DataType } from '../catalog.js';
import { csvBatches } from './csv.js';
import { NdjsonPacker, ndjsonBatches, ndjsonPackedBatches } from './ndjson.js';
import { MAX_RECORD_BYTES } from './record-size.js';
import { jsonColumns, packBatch, type RecordShape } from './shape.js';
import type { JobTables } from './tables.js';
import type { FileFormat, PackedBatch, RecordBatch } from './types.js';

export { MAX_RECORD_BYTES } from './record-size.js';
export type { RecordShape } from './shape.js';
export { packBatch } from './shape.js';
export type * from './types.js';
export { BLOCK_BYTES, type ParseJob, ParserPool, SpareWorkers } from './workers/parallel.js';

export interface RecordBatchOptions {
  /** Rows per batch (the last batch may be smaller). */
  batchSize?: number;
  /** How a decoded record becomes a row; nested values as JSON text by default. */
  shape?: RecordShape;
  /** Records longer than this are rejected, and never gathered whole (see record-size.ts). */
  maxRecordBytes?: number;
}

/** Reads a result file as batches of decoded rows and rejected lines, in file order. */
export function recordBatches(
  source: Readable,
  format: FileFormat,
  type: DataType,
  options: RecordBatchOptions = {},
): AsyncGenerator<RecordBatch> {
  const batchSize = options.batchSize ?? 5000;
  const shape = options.shape ?? jsonColumns;
  const limit = options.maxRecordBytes ?? MAX_RECORD_BYTES;
  return format === 'csv'
    ? csvBatches(source, type, shape, batchSize, limit)
    : ndjsonBatches(source, type, shape, batchSize, limit);
}

/**
 * A result file as batches for the thread that writes them: the job's rows packed (NDJSON of
 * `nested: json` straight from its lines, else shaped first, then packed), in file order.
 */
export async function* packedBatches(
  source: Readable,
  format: FileFormat,
  tables: JobTables,
  batchSize: number,
  maxRecordBytes = MAX_RECORD_BYTES,
): AsyncGenerator<PackedBatch> {
  const hints = tables.hintsOf(tables.main);
  if (format === 'json' && tables.plainJson) {
    const packer = new NdjsonPacker(tables.plan.type, hints, maxRecordBytes);
    yield* ndjsonPackedBatches(source, packer, batchSize);
    return;
  }
  for await (const batch of recordBatches(source, format, tables.plan.type, {
    batchSize,
    shape: tables.shape,
    maxRecordBytes,
  })) {
    yield packBatch(batch, tables);
  }
}
