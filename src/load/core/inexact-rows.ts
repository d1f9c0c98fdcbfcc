import { plainRows } from '../../schema/copy-text.js';
import {
  type ColumnType,
  finerThanMicroseconds,
  type PackedRows,
  type RowValue,
} from '../../schema/types.js';
import type { BoundColumn } from '../dialect.js';

/** A row a batch write refused, by its place in the batch. */
export interface RefusedRow {
  index: number;
  reason: string;
}

/**
 * The rows of `packed` holding a value their column would change rather than store: a bigint (an
 * integer past 2^53, records/numbers.ts) in a floating-point column (`real`), which rounds it; a
 * time finer than a microsecond in a timestamp column, which a destination rounds or cuts (one
 * that keeps the text refuses it alike, so that every destination holds the same). Each is
 * refused with its reason, by its place in `packed`, rather than stored changed. Only such
 * columns are looked at; rows as COPY text only when its writer saw such a value in one.
 */
export function inexactRows(
  packed: PackedRows,
  columns: readonly BoundColumn[],
  table: string,
): RefusedRow[] {
  const types = new Map<string, ColumnType>();
  for (const c of columns)
    if (c.type === 'real' || c.type === 'timestamp') types.set(c.source, c.type);
  if (types.size === 0) return [];
  const { text } = packed;
  if (text && ![...(text.bigints ?? []), ...(text.fineTimes ?? [])].some((n) => types.has(n))) {
    return [];
  }
  const plain = plainRows(packed);
  const width = plain.names.length;
  /** The reason of each row refused, by its place (its first such value says it). */
  const refused = new Map<number, string>();
  for (let c = 0; c < width; c++) {
    const name = plain.names[c]!;
    const type = types.get(name);
    if (type === undefined) continue;
    for (let r = 0; r < plain.count; r++) {
      if (refused.has(r)) continue;
      const why = changedBy(plain.values[r * width + c], type);
      if (why !== undefined) refused.set(r, `${table}: ${name}: ${why}`);
    }
  }
  return [...refused].sort(([a], [b]) => a - b).map(([index, reason]) => ({ index, reason }));
}

/** Why a column of `type` would change `value` (see `inexactRows`), or undefined. */
function changedBy(value: RowValue | undefined, type: ColumnType): string | undefined {
  if (type === 'real' && typeof value === 'bigint') {
    return `the number ${value} cannot be stored exactly: the column is floating point, which rounds an integer past 2^53`;
  }
  if (type === 'timestamp' && typeof value === 'string' && finerThanMicroseconds(value)) {
    return `the time ${value} cannot be stored exactly: a timestamp column holds microseconds, not finer`;
  }
  return undefined;
}
