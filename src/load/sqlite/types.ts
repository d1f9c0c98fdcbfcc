import { type ColumnType, type RowValue, textOf } from '../../schema/types.js';

/** Declared SQLite types: each maps back to one ColumnType (see `typeOfDeclared`). */
export const DECLARED: Record<ColumnType, string> = {
  boolean: 'BOOLEAN',
  integer: 'INTEGER',
  real: 'REAL',
  timestamp: 'TIMESTAMP',
  json: 'JSON',
  text: 'TEXT',
};

export function typeOfDeclared(declared: string): ColumnType {
  switch (declared.toUpperCase()) {
    case 'BOOLEAN':
      return 'boolean';
    case 'INTEGER':
    case 'BIGINT':
      return 'integer';
    case 'REAL':
    case 'DOUBLE':
      return 'real';
    case 'TIMESTAMP':
      return 'timestamp';
    case 'JSON':
      return 'json';
    default:
      return 'text';
  }
}

/**
 * A value as better-sqlite3 binds it for a column of `type`: booleans as 1 and 0; a bigint as
 * itself, which it binds as a 64-bit INTEGER, exactly.
 */
export function bindable(
  value: RowValue | undefined,
  type: ColumnType,
): string | number | bigint | null {
  if (value === undefined || value === null) return null;
  if (type === 'text') return textOf(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

/** The expression that converts column `col` from `from` to `to`, as PostgreSQL would. */
export function castExpression(col: string, from: ColumnType, to: ColumnType): string {
  if (to !== 'text') return col;
  if (from === 'boolean') {
    return `CASE ${col} WHEN 1 THEN 'true' WHEN 0 THEN 'false' ELSE CAST(${col} AS TEXT) END`;
  }
  // A whole number stored as REAL reads back as `1999.0` from CAST; PostgreSQL writes `1999`.
  return `CASE WHEN typeof(${col}) = 'real' AND ${col} = CAST(${col} AS INTEGER) THEN CAST(CAST(${col} AS INTEGER) AS TEXT) ELSE CAST(${col} AS TEXT) END`;
}
