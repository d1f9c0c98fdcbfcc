/**
 * DuckDB's side of the portable column types: the types it declares, reading them back, and
 * converting one into another, as PostgreSQL does (a widened column reads the same in both).
 */
import type { ColumnType } from '../../schema/types.js';

export const DUCKDB_TYPE: Record<ColumnType, string> = {
  boolean: 'BOOLEAN',
  integer: 'BIGINT',
  real: 'DOUBLE',
  timestamp: 'TIMESTAMPTZ',
  json: 'JSON',
  text: 'VARCHAR',
};

/** Maps a DuckDB type (as information_schema spells it) to a ColumnType. */
export function columnTypeOf(dataType: string): ColumnType {
  const type = dataType.toUpperCase().replace(/\(.*\)$/, '');
  switch (type) {
    case 'BOOLEAN':
      return 'boolean';
    case 'BIGINT':
    case 'INTEGER':
    case 'SMALLINT':
    case 'TINYINT':
    case 'HUGEINT':
      return 'integer';
    case 'DOUBLE':
    case 'FLOAT':
    case 'DECIMAL':
      return 'real';
    case 'TIMESTAMP WITH TIME ZONE':
    case 'TIMESTAMP':
    case 'DATE':
      return 'timestamp';
    case 'JSON':
      return 'json';
    default:
      return 'text';
  }
}

/**
 * The expression that converts column `col` from `from` to `to`, as PostgreSQL would: a time as
 * the service writes it (`2020-04-12T03:46:45Z`, see postgres/types.ts), in UTC (the session's
 * time zone).
 */
export function castExpression(col: string, from: ColumnType, to: ColumnType): string {
  if (to === 'text') {
    if (from === 'timestamp') {
      const utc = `CAST(${col} AS TIMESTAMP)`;
      const fraction = `rtrim(rtrim(strftime(${utc}, '.%f'), '0'), '.')`;
      return `strftime(${utc}, '%Y-%m-%dT%H:%M:%S') || ${fraction} || 'Z'`;
    }
    // DuckDB writes a whole double as `1999.0`; PostgreSQL (and so sluice) as `1999`.
    if (from === 'real') {
      return `CASE WHEN ${col} = trunc(${col}) AND abs(${col}) < 1e15 THEN CAST(CAST(${col} AS BIGINT) AS VARCHAR) ELSE CAST(${col} AS VARCHAR) END`;
    }
    return `CAST(${col} AS VARCHAR)`;
  }
  if (from === 'boolean') return `CAST(CAST(${col} AS INTEGER) AS ${DUCKDB_TYPE[to]})`;
  return `CAST(${col} AS ${DUCKDB_TYPE[to]})`;
}

/**
 * The expression that reads a COPY text cell (`schema/copy-text.ts`, read by DuckDB's CSV
 * reader as text) as a column of `type`: text is unescaped (`\\`, `\n`, `\r`, `\t`), other
 * types hold no backslash. A cell of another type that does not read as it is NULL (see
 * `refusedCell`); JSON is sluice's own (JSON.stringify's), read strictly.
 */
export function fromCopyCell(cell: string, type: ColumnType): string {
  if (type === 'text' || type === 'json') {
    // Split at each escaped backslash; what backslashes are left each begin an escape.
    const parts = `string_split(${cell}, '\\\\')`;
    const decode = `replace(replace(replace(p, '\\n', chr(10)), '\\r', chr(13)), '\\t', chr(9))`;
    const text = `CASE WHEN contains(${cell}, '\\') THEN array_to_string(list_transform(${parts}, p -> ${decode}), '\\') ELSE ${cell} END`;
    return type === 'json' ? `CAST(${text} AS JSON)` : text;
  }
  return `TRY_CAST(${cell} AS ${DUCKDB_TYPE[type]})`;
}

/**
 * The condition that a cell did not read as `type`: a value the column refuses, given the
 * cell's text and what `fromCopyCell` made of it. Undefined where every cell reads.
 */
export function refusedCell(cell: string, value: string, type: ColumnType): string | undefined {
  if (type === 'text' || type === 'json') return undefined;
  return `(${cell} IS NOT NULL AND ${value} IS NULL)`;
}
