import type { FieldDef } from '../../catalog.js';
import { type ColumnType, declaredColumnType } from '../../schema/types.js';

/**
 * The SQL that gives, cell by cell, the value DuckDB writes of an NDJSON line's field
 * (read-file.ts), or of a CSV cell of a scalar field (csv-scan.ts). It is what sluice's decoding
 * writes only for the lines line-checks.ts (csv-scan.ts) finds in no doubt; any other line sends
 * its file down sluice's own path.
 */

/** The column type a field must already have for its values to go in as they are. */
export function columnOf(def: FieldDef | undefined): ColumnType {
  return def === undefined ? 'text' : declaredColumnType(def);
}

/**
 * The value written of a field's cell `c` (read-file.ts's `recordsOf`: JSON for a column of
 * lists or objects, else VARCHAR; NULL when the line has no such key or its value is null).
 */
export function cellValue(c: string, type: ColumnType): string {
  let empty = `(${c} IS NULL OR ${c} = '')`;
  let value: string;
  switch (type) {
    case 'text':
      value = c;
      break;
    case 'integer':
      value = `TRY_CAST(${c} AS BIGINT)`;
      break;
    case 'real':
      value = `TRY_CAST(${c} AS DOUBLE)`;
      break;
    case 'boolean':
      value = `${c} IN ('true', 'True', 'TRUE')`;
      break;
    case 'timestamp':
      value = `TRY_CAST(${c} AS TIMESTAMPTZ)`;
      break;
    default:
      // An empty list is null, as sluice decodes it.
      empty = `(${c} IS NULL OR CAST(${c} AS VARCHAR) IN ('null', '""', '[]'))`;
      value = c;
  }
  return `CASE WHEN ${empty} THEN NULL ELSE ${value} END`;
}
