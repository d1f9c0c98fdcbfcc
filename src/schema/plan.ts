import type { FieldMap } from '../catalog.js';
import {
  type Column,
  type ColumnType,
  inferColumnType,
  type PackedRows,
  type Row,
  type RowValue,
  widen,
} from './types.js';

/**
 * The schema as a first-class object: what a table should hold, what a batch of rows asks of
 * it, and the changes that bring one to the other. Shared by every destination, which only maps
 * the types and runs the changes.
 */

/** A table sluice writes, in logical names (the destination maps them to physical ones). */
export interface TableDef {
  name: string;
  /** Columns known before any row is seen (the catalogue's, for the view's fields). */
  columns: Column[];
  /** Merge key: a unique index is kept on it. Empty: rows are appended. */
  key: string[];
  /** The column linking rows to a parent record; indexed, as merges delete by it. */
  parentColumn?: string;
  /**
   * Nothing is deleted by the parent link while the job loads: its index is made when the job
   * ends (`JobFinish.parentIndexes`), in one sort, not when the table is created.
   */
  parentIndexAtEnd?: boolean;
  /** Type hints for columns that appear later (catalogue fields, flattened). */
  hints: FieldMap;
}

/** Columns every data row carries. */
export const META_COLUMNS: readonly Column[] = [
  { name: '_sluice_download_id', type: 'text' },
  { name: '_sluice_loaded_at', type: 'timestamp' },
];

const META_TYPES = new Map(META_COLUMNS.map((c) => [c.name, c.type]));

/** A column whose type changes: in place where the destination can, else by a rebuild. */
export interface Widening {
  name: string;
  from: ColumnType;
  to: ColumnType;
}

export interface TableChanges {
  /** The table does not exist: create it with `add` as its columns. */
  create: boolean;
  add: Column[];
  widen: Widening[];
}

export function hasChanges(changes: TableChanges): boolean {
  return changes.create || changes.add.length > 0 || changes.widen.length > 0;
}

/**
 * The changes that make a table with `existing` columns (undefined: no table) hold `wanted`.
 * Columns are never narrowed or dropped: a column absent from the data stays, holding NULL.
 */
export function planChanges(
  existing: readonly Column[] | undefined,
  wanted: Iterable<Column>,
): TableChanges {
  if (existing === undefined) return { create: true, add: [...wanted], widen: [] };
  const have = new Map(existing.map((c) => [c.name, c.type]));
  const changes: TableChanges = { create: false, add: [], widen: [] };
  for (const column of wanted) {
    const type = have.get(column.name);
    if (type === undefined) {
      changes.add.push(column);
      have.set(column.name, column.type);
    } else {
      const to = widen(type, column.type);
      if (to !== type) changes.widen.push({ name: column.name, from: type, to });
    }
  }
  return changes;
}

/**
 * The column types a batch of rows asks for, from their values and the catalogue's hints.
 * Null values ask for nothing: a column seen only as NULL is not created by this batch.
 */
export function batchColumns(rows: readonly Row[], hints: FieldMap): Map<string, ColumnType> {
  const seen = new Map<string, ColumnType>();
  for (const row of rows) {
    for (const name in row) {
      const value = row[name];
      if (value === null || value === undefined) continue;
      const before = seen.get(name);
      if (before === 'text') continue; // nothing is wider
      const type = META_TYPES.get(name) ?? inferColumnType(value, hints[name]);
      if (before !== type) seen.set(name, before === undefined ? type : widen(before, type));
    }
  }
  return seen;
}

/** The column types packed rows ask for, as `batchColumns` works them out for objects. */
export function packedColumns(packed: PackedRows, hints: FieldMap): Map<string, ColumnType> {
  const seen = new Map<string, ColumnType>();
  const width = packed.names.length;
  for (let c = 0; c < width; c++) {
    const name = packed.names[c]!;
    const meta = META_TYPES.get(name);
    let type: ColumnType | undefined;
    for (let i = c; i < packed.values.length; i += width) {
      const value = packed.values[i];
      if (value === null || value === undefined) continue;
      const next = meta ?? inferColumnType(value, hints[name]);
      type = type === undefined ? next : widen(type, next);
      if (type === 'text') break; // nothing is wider
    }
    if (type !== undefined) seen.set(name, type);
  }
  for (const [name, value] of Object.entries(packed.constants ?? {})) {
    if (value !== null) seen.set(name, META_TYPES.get(name) ?? inferColumnType(value, hints[name]));
  }
  return seen;
}

/**
 * Rows as packed rows (see `PackedRows`) with their column types: the columns are those some
 * row has a value in, so a column seen only as NULL is neither made nor sent.
 */
export function packRows(
  rows: readonly Row[],
  hints: FieldMap,
): { packed: PackedRows; columns: Map<string, ColumnType> } {
  const columns = batchColumns(rows, hints);
  const names = [...columns.keys()];
  const width = names.length;
  const values: RowValue[] = new Array(rows.length * width);
  let o = 0;
  for (const row of rows) {
    for (let c = 0; c < width; c++) values[o++] = row[names[c]!] ?? null;
  }
  return { packed: { names, values, count: rows.length }, columns };
}
