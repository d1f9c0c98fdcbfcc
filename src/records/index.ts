import type { Readable } from 'node:stream';
import type { DataType } from '../catalog.js';
import { csvBatches } from './csv.js';
import { ndjsonBatches } from './ndjson.js';
import { jsonColumns, type RecordShape } from './shape.js';
import type { FileFormat, RecordBatch } from './types.js';

export { type ParseJob, ParserPool } from './parallel.js';
export type { RecordShape } from './shape.js';
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
