import type { FieldDef } from '../catalog.js';
import type { ColumnType } from '../load/destination.js';
import type { RowValue } from './types.js';

const ISO_DATE =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** True for ISO-8601 dates and date-times, the only text stored as a timestamp. */
export function isIsoDate(text: string): boolean {
  return ISO_DATE.test(text) && !Number.isNaN(Date.parse(text));
}

/**
 * The column type a value asks for. The catalogue's hint decides between text and timestamp or
 * json; the value decides the rest, so an unexpected value widens the column instead of failing.
 */
export function inferColumnType(value: RowValue, hint?: FieldDef): ColumnType {
  switch (typeof value) {
    case 'boolean':
      return 'boolean';
    case 'number':
      // A catalogue `number` (a price, an area) is real even when this value is whole, so that
      // the next fractional value does not widen the column.
      return Number.isSafeInteger(value) && hint?.kind !== 'number' ? 'integer' : 'real';
    case 'string':
      if (hint === undefined) return 'text';
      if (hint.kind === 'objects' || hint.kind === 'list') return 'json';
      if (hint.kind === 'date' && isIsoDate(value)) return 'timestamp';
      return 'text';
    default:
      return 'text';
  }
}

const NUMERIC: readonly ColumnType[] = ['boolean', 'integer', 'real'];

/** The narrowest type both `a` and `b` fit: boolean < integer < real < text; timestamp, json < text. */
export function widen(a: ColumnType, b: ColumnType): ColumnType {
  if (a === b) return a;
  const ia = NUMERIC.indexOf(a);
  const ib = NUMERIC.indexOf(b);
  if (ia >= 0 && ib >= 0) return NUMERIC[Math.max(ia, ib)]!;
  return 'text';
}
