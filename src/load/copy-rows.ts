import { copyCell, withSuffix } from '../schema/copy-text.js';
import type { PackedRows } from '../schema/types.js';
import type { BoundColumn, TableRows } from './dialect.js';

/**
 * Rows in the COPY text format (tab-separated, `\N` for NULL) as a table takes them, for the
 * destinations whose bulk loader reads it (a server's COPY, an embedded database's CSV reader).
 */

const CHUNK_CHARS = 256 * 1024;

/** COPY text lines for rows as values (no parse worker wrote them), in chunks of about 256 kB. */
export function* copyChunks(rows: TableRows, columns: readonly BoundColumn[]): Generator<string> {
  const width = columns.length;
  const types = columns.map((c) => c.type);
  const input = rows.values;
  let chunk = '';
  for (let r = 0, o = 0; r < rows.count; r++) {
    let line = '';
    for (let i = 0; i < width; i++) {
      if (i > 0) line += '\t';
      line += copyCell(input[o++], types[i]!);
    }
    chunk += `${line}\n`;
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk.length > 0) yield chunk;
}

/**
 * Rows a parse worker wrote as COPY text, each line followed by the load's own columns, as the
 * table takes them; undefined where it does not take them as written: a boolean's cell depends
 * on its column's type (other cells read the same in a column made wider), and a constant wins
 * over a field of the same name.
 */
export function asCopyText(
  packed: PackedRows,
  columns: readonly BoundColumn[],
): TableRows | undefined {
  const { text, constants = {} } = packed;
  if (text === undefined) return undefined;
  const bySource = new Map(columns.map((c) => [c.source, c]));
  const names: string[] = [];
  for (let i = 0; i < text.names.length; i++) {
    const name = text.names[i]!;
    const column = bySource.get(name);
    if (column === undefined || Object.hasOwn(constants, name)) return undefined;
    if (text.types[i] === 'boolean' && column.type !== 'boolean') return undefined;
    names.push(column.name);
  }
  let suffix = '';
  for (const [source, value] of Object.entries(constants)) {
    const column = bySource.get(source);
    if (column === undefined) return undefined;
    names.push(column.name);
    suffix += `\t${copyCell(value, column.type)}`;
  }
  // Every column of the table, as values are written: one the batch lacks is NULL, never its
  // default (a column a user added with one).
  const named = new Set(names);
  for (const column of columns) {
    if (!named.has(column.name)) {
      names.push(column.name);
      suffix += '\t\\N';
    }
  }
  const bytes = withSuffix(text, packed.count, suffix);
  return { count: packed.count, values: [], text: { columns: names, bytes } };
}
