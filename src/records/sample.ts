import type { Readable } from 'node:stream';
import type { DataType } from '../catalog.js';
import { newRow } from '../schema/types.js';
import { recordBatches } from './index.js';
import type { DecodedRecord } from './shape.js';
import type { FileFormat } from './types.js';

/**
 * The first `count` records of a result file, decoded by the catalogue but not shaped into rows
 * (nested values stay objects), to look at what a download holds. The rest is not read.
 */
export async function sampleRecords(
  source: Readable,
  format: FileFormat,
  type: DataType,
  count: number,
): Promise<DecodedRecord[]> {
  const records: DecodedRecord[] = [];
  const keep = (record: DecodedRecord) => {
    records.push(record);
    return { row: newRow() };
  };
  try {
    for await (const _batch of recordBatches(source, format, type, {
      batchSize: count,
      shape: keep,
    })) {
      if (records.length >= count) break;
    }
  } finally {
    source.destroy();
  }
  return records.slice(0, count);
}
