import type { FileTransaction, WriteTarget } from '../../load/destination.js';
import type { RejectedLine } from '../../records/types.js';
import { plainRows } from '../../schema/copy-text.js';
import { META_COLUMNS } from '../../schema/plan.js';
import {
  type ColumnType,
  type PackedRows,
  type RowValue,
  selectPacked,
  unpackRow,
} from '../../schema/types.js';
import { rejectOf } from './file-rejects.js';

/** Packed rows written in a file's transaction, and what reading their values back takes. */

const META = META_COLUMNS.map((c) => [c.name, c.type] as const);

/**
 * Rows `indexes` of `packed` written to `target`, with the load's own columns (`constants`);
 * the rows the database refused, by their place in `indexes`, as rejects. `columns`: the
 * parser's types for every row of `packed`, which hold when every row is written.
 */
export async function writeRows(
  tx: FileTransaction,
  target: WriteTarget,
  packed: PackedRows,
  columns: ReadonlyMap<string, ColumnType>,
  indexes: readonly number[],
  constants: Readonly<Record<string, RowValue>>,
  lineOf: (row: number) => number,
): Promise<{ at: number; reject: RejectedLine }[]> {
  const whole = indexes.length === packed.count;
  const some: PackedRows = {
    ...(whole ? packed : selectPacked(plainRows(packed), indexes)),
    constants,
  };
  const failed = await tx.write(target, some, whole ? new Map([...columns, ...META]) : undefined);
  return failed.map((f) => ({
    at: f.index,
    reject: rejectOf(lineOf(indexes[f.index]!), unpackRow(plainRows(some), f.index), f.reason),
  }));
}

/**
 * The text of a row's values in columns `at` of `packed` (-1: a column it lacks), which tells
 * rows apart: equal texts, equal values.
 */
export function keyReader(packed: PackedRows, at: readonly number[]): (row: number) => string {
  const { values } = packed;
  const width = packed.names.length;
  const text = (row: number, c: number) =>
    String(c < 0 ? undefined : (values[row * width + c] ?? null));
  if (at.length === 1) return (row) => text(row, at[0]!);
  return (row) => at.map((c) => text(row, c)).join('\u0000');
}

/**
 * `packed` with the values of `columns` to read: rows written as COPY text keep only those the
 * parse worker was told the writing thread reads (`JobTables.keysRead`), else all are read back.
 */
export function reading(packed: PackedRows, columns: readonly string[]): PackedRows {
  const { text } = packed;
  if (text === undefined) return packed;
  const missing = columns.some((c) => !packed.names.includes(c) && text.names.includes(c));
  return missing ? plainRows(packed) : packed;
}
