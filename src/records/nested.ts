import { CORE_FIELDS, type DataType, FIELDS, type FieldMap } from '../catalog.js';
import { childTableName, parentColumn } from '../schema/naming.js';
import { META_COLUMNS } from '../schema/plan.js';
import { newRow, type Row } from '../schema/types.js';
import { toColumnValue } from './decode.js';
import { type DecodedRecord, LOAD_NAMES, OwnNames } from './shape.js';

/**
 * `nested: tables`: a record becomes one row of its table plus rows of child tables.
 *
 * - An array of objects `f` becomes the child table `<table>__f` (snake_case), one row per item,
 *   linked to its parent by `_parent_<key>` (the top-level record's key) and `_position` (the
 *   item's index); items of a deeper array also carry `_parent_position`, their parent item's
 *   index (`<table>__people__phone_numbers`).
 * - A plain object `o` flattens into `o__sub` columns.
 * - An array of plain values stays one JSON column.
 *
 * A field named as a column sluice writes in its table gets one more `_` (see OwnNames): in a
 * child table `_position` and `_parent_id` hold sluice's links, a field so named `_position_`.
 */

/** The names sluice writes in a record's own row, and in its child rows (see OwnNames). */
export interface RecordNames {
  readonly row: OwnNames;
  readonly child: OwnNames;
}

/** What sluice writes in the tables of records keyed by `key`: made once per job. */
export function recordNames(key: readonly string[]): RecordNames {
  const child = ['_position', '_parent_position', ...key.map(parentColumn)];
  return {
    row: LOAD_NAMES,
    child: new OwnNames([...child, ...META_COLUMNS.map((c) => c.name)]),
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isObjectArray(value: unknown): value is Record<string, unknown>[] {
  return Array.isArray(value) && value.length > 0 && value.every(isPlainObject);
}

export interface NestedTables {
  /** The record's own row. */
  row: Row;
  /** Child table name -> its rows from this record. */
  children: Map<string, Row[]>;
}

/**
 * Splits a decoded record into its row and its child rows, which are linked to it by `key`
 * (`_parent_<key>`); `names`: `recordNames(key)`, what sluice writes itself in those rows.
 */
export function splitRecord(
  record: DecodedRecord,
  table: string,
  key: readonly string[],
  names: RecordNames,
): NestedTables {
  const row = newRow();
  const children = new Map<string, Row[]>();
  flattenInto(row, record, '', table, children, undefined, names);
  const links = key.map((k) => [parentColumn(k), row[k] ?? null] as const);
  for (const rows of children.values()) {
    for (const child of rows) for (const [column, value] of links) child[column] = value;
  }
  return { row, children };
}

function flattenInto(
  row: Row,
  value: Record<string, unknown>,
  prefix: string,
  table: string,
  children: Map<string, Row[]>,
  position: number | undefined,
  names: RecordNames,
): void {
  // Items of arrays (and objects in them) are child rows; the record and its objects its row.
  const own = position === undefined ? names.row : names.child;
  for (const name in value) {
    const v = value[name];
    const column = prefix + name;
    if (isObjectArray(v)) {
      const child = childTableName(table, column);
      let rows = children.get(child);
      if (rows === undefined) {
        rows = [];
        children.set(child, rows);
      }
      for (let i = 0; i < v.length; i++) {
        const item = newRow();
        if (position !== undefined) item._parent_position = position;
        item._position = i;
        rows.push(item);
        flattenInto(item, v[i]!, '', child, children, i, names);
      }
    } else if (isPlainObject(v)) {
      flattenInto(row, v, `${column}__`, table, children, position, names);
    } else {
      row[own.column(column)] = toColumnValue(v);
    }
  }
}

/**
 * The catalogue's field definitions for each table a record of `type` may produce, so that child
 * columns get the same type hints (dates, JSON lists) as top-level ones.
 */
export function tableHints(
  type: DataType,
  table: string,
  catalogue: FieldMap = FIELDS[type],
): Map<string, FieldMap> {
  const out = new Map<string, FieldMap>();
  const walk = (fields: FieldMap, name: string) => {
    const flat: FieldMap = {};
    const add = (defs: FieldMap, prefix: string) => {
      for (const [field, def] of Object.entries(defs)) {
        flat[prefix + field] = def;
        if (def.kind === 'objects') {
          walk(def.fields, childTableName(name, prefix + field));
          add(def.fields, `${prefix}${field}__`); // the same field may arrive as one object
        }
      }
    };
    add(fields, '');
    out.set(name, flat);
  };
  walk(catalogue, table);
  return out;
}

/** Child tables the core fields of `type` make (tables.ts), deepest last. */
export function catalogueChildTables(type: DataType, table: string): string[] {
  return [...tableHints(type, table, CORE_FIELDS[type]).keys()].filter((t) => t !== table);
}
