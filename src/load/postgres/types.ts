/**
 * PostgreSQL's side of the portable column types: the types it declares, reading them back, and
 * converting one into another.
 */
import pg from 'pg';
import type { ColumnType } from '../../schema/types.js';

const INT8_OID = 20;
const JSON_OID = 114;
const JSONB_OID = 3802;

/** bigint columns come back as JS numbers when they fit (state counters, counts), else as text. */
function parseInt8(value: string): number | string {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}

const asText = (value: string) => value;

/**
 * Type parsers for this destination's pool only; the global `pg.types` is left alone. json and
 * jsonb come back as JSON text, as they went in (and as SQLite gives them back).
 */
export const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (format !== 'binary') {
      if (oid === INT8_OID) return parseInt8;
      if (oid === JSON_OID || oid === JSONB_OID) return asText;
    }
    // biome-ignore lint/suspicious/noExplicitAny: pg's overloads do not accept a union format
    return pg.types.getTypeParser(oid, format as any);
  },
} as pg.CustomTypesConfig;

export const PG_TYPE: Record<ColumnType, string> = {
  boolean: 'boolean',
  integer: 'bigint',
  real: 'double precision',
  timestamp: 'timestamptz',
  json: 'jsonb',
  text: 'text',
};

/** Maps a PostgreSQL type (as `format_type` spells it) to a ColumnType. */
export function columnTypeOf(dataType: string): ColumnType {
  const type = dataType.replace(/\(.*\)$/, '');
  switch (type) {
    case 'boolean':
      return 'boolean';
    case 'bigint':
    case 'integer':
    case 'smallint':
      return 'integer';
    case 'double precision':
    case 'real':
    case 'numeric':
      return 'real';
    case 'timestamp with time zone':
    case 'timestamp without time zone':
    case 'date':
      return 'timestamp';
    case 'json':
    case 'jsonb':
      return 'json';
    default:
      return 'text';
  }
}

/**
 * The USING expression that converts column `col` from `from` to `to`. A time becomes text as
 * the service writes it (`2020-04-12T03:46:45Z`: UTC, a fraction only when there is one, its
 * zeros cut), which is what SQLite, storing the text as sent, holds.
 */
export function castExpression(col: string, from: ColumnType, to: ColumnType): string {
  if (to === 'text') {
    if (from === 'timestamp') {
      const utc = `${col} AT TIME ZONE 'UTC'`;
      const fraction = `rtrim(rtrim(to_char(${utc}, '.US'), '0'), '.')`;
      return `to_char(${utc}, 'YYYY-MM-DD"T"HH24:MI:SS') || ${fraction} || 'Z'`;
    }
    if (from === 'boolean') return `CASE WHEN ${col} THEN 'true' WHEN NOT ${col} THEN 'false' END`;
    return `${col}::text`;
  }
  if (from === 'boolean') return `${col}::integer::${PG_TYPE[to]}`;
  return `${col}::${PG_TYPE[to]}`;
}
