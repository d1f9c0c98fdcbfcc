import type { FieldMap } from '../catalog.js';
import { packRows } from '../schema/plan.js';
import { newRow, type Row } from '../schema/types.js';
import { toColumnValue } from './normalize.js';
import type { PackedBatch, ParsedRow, RecordBatch } from './types.js';

/**
 * A record decoded by the catalogue: plain values, arrays and objects. A null-prototype object:
 * field names come from the service, and `__proto__` or `constructor` are just names.
 */
export type DecodedRecord = Record<string, unknown>;

/** Turns a decoded record into the row the load stage writes, and rows of related tables. */
export type RecordShape = (record: DecodedRecord) => Omit<ParsedRow, 'line'>;

/** `nested: json`: every nested value is stored as JSON text in its column. */
export function jsonRow(record: DecodedRecord): Row {
  const row = newRow();
  for (const key in record) row[key] = toColumnValue(record[key]);
  return row;
}

export const jsonColumns: RecordShape = (record) => ({ row: jsonRow(record) });

const RAW_LIMIT = 10_000;

export function cutRaw(raw: string): string {
  const text = raw.endsWith('\n') ? raw.slice(0, raw.endsWith('\r\n') ? -2 : -1) : raw;
  return text.length > RAW_LIMIT ? text.slice(0, RAW_LIMIT) : text;
}

/** A batch packed for the thread that writes it (`hints`: the job table's catalogue fields). */
export function packBatch(batch: RecordBatch, hints: FieldMap): PackedBatch {
  const { packed, columns } = packRows(
    batch.rows.map((p) => p.row),
    hints,
  );
  const packedBatch: PackedBatch = {
    rows: packed,
    columns,
    lines: batch.rows.map((p) => p.line),
    rejects: batch.rejects,
    bytesRead: batch.bytesRead,
  };
  if (batch.rows.some((p) => p.related !== undefined)) {
    packedBatch.related = batch.rows.map((p) => p.related);
  }
  return packedBatch;
}
