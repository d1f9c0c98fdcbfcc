import type { Readable } from 'node:stream';
import type { DataType } from '../catalog.js';
import { csvBatches } from './csv.js';
import { NdjsonPacker, ndjsonBatches, ndjsonPackedBatches } from './ndjson.js';
import { jsonColumns, packBatch, type RecordShape } from './shape.js';
import type { JobTables } from './tables.js';
import type { FileFormat, PackedBatch, RecordBatch } from './types.js';

export { BLOCK_BYTES, type ParseJob, ParserPool } from './parallel.js';
export type { RecordShape } from './shape.js';
export { packBatch } from './shape.js';
export type * from './types.js';

export interface RecordBatchOptions {
  /** Rows per batch (the last batch may be smaller). */
  batchSize?: number;
  /** How a decoded record becomes a row; nested values as JSON text by default. */
  shape?: RecordShape;
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
  return format === 'csv'
    ? csvBatches(source, type, shape, batchSize)
    : ndjsonBatches(source, type, shape, batchSize);
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
): AsyncGenerator<PackedBatch> {
  const hints = tables.hintsOf(tables.main);
  if (format === 'json' && tables.plainJson) {
    yield* ndjsonPackedBatches(source, new NdjsonPacker(tables.plan.type, hints), batchSize);
    return;
  }
  for await (const batch of recordBatches(source, format, tables.plan.type, {
    batchSize,
    shape: tables.shape,
  })) {
    yield packBatch(batch, tables);
  }
}
