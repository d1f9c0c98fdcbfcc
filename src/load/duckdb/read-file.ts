import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { FieldDef } from '../../catalog.js';
import type { ColumnType } from '../../schema/types.js';
import { type FileRead, FileReadFailed, type FileToRead } from '../destination.js';
import { quoteIdent, type ReadInto } from '../dialect.js';
import type { DuckDbSession } from './connection.js';
import { cellOf, columnOf, lineKept } from './read-checks.js';
import { DUCKDB_TYPE } from './types.js';

/**
 * A result file read by DuckDB itself (issue 41; docs/speed.md, "DuckDB reading the files
 * itself"): the file is spooled to the handle's scratch folder, one query on the read connection
 * looks for any line that sluice's own decoding would not write exactly as DuckDB reads it, and
 * only when there is none, one INSERT ... SELECT in the file's transaction reads it into the
 * table. Any doubt sends the file back to sluice's decoding whole (undefined), so that rejects,
 * widening and their reasons stay what they are.
 *
 * What is taken (anything else is a doubt): each line a JSON object of the table's fields,
 * each once, within the record size limit, without NUL; text fields JSON strings; integers
 * and reals of at most 15 digits before the point, with no exponent; booleans; times in the
 * service's form `YYYY-MM-DDTHH:MM:SSZ` that are real times; lists and objects whose JSON text
 * DuckDB writes as JSON.stringify would (no `\u` escape, no whole or exponent double, no run of
 * 16 digits), holding no text that the catalogue would decode into something else (empty,
 * number- or boolean-like, a date-shaped text that is no date, a list field's text), no empty
 * list and no key twice.
 */

/**
 * The lines of a spooled file, one VARCHAR column `l` (NULL for an empty line), in order unless
 * `parallel` (DuckDB's threads share the file: its check needs no order). A line
 * longer than `maxBytes` is sluice's reject: DuckDB need not read it (it fails, and the file goes
 * back), and its buffers stay small (DuckDB's budget is 256 MB: settings.ts).
 */
function linesOf(path: string, maxBytes: number, parallel: boolean): string {
  const max = Math.max(maxBytes + 1, 1 << 20);
  return (
    `read_csv('${path.replaceAll("'", "''")}', columns = {'l': 'VARCHAR'}, header = false, ` +
    `delim = '\x1f', quote = '', escape = '', auto_detect = false, parallel = ${parallel}, ` +
    `max_line_size = ${max}, buffer_size = ${2 * max})`
  );
}

const sqlText = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** Sends the file back to be loaded the usual way, saying why. */
function back(file: FileToRead, why: string): undefined {
  file.sentBack?.(why);
  return undefined;
}

/** Writes the file's text to the scratch folder; its path and bytes. */
async function spool(
  session: DuckDbSession,
  file: FileToRead,
): Promise<{ path: string; bytes: number; bom: boolean }> {
  const path = join(session.scratch(), 'file.ndjson');
  const stream = await file.open();
  let bytes = 0;
  let first: number[] | undefined;
  const counted = async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      if (first === undefined || first.length < 3)
        first = [...(first ?? []), ...chunk.subarray(0, 3)];
      bytes += chunk.length;
      yield chunk;
    }
  };
  await pipeline(stream as AsyncIterable<Buffer>, counted, createWriteStream(path));
  const bom = first !== undefined && first[0] === 0xef && first[1] === 0xbb && first[2] === 0xbf;
  return { path, bytes, bom };
}

/** See the top of this file. */
export async function readFileNatively(
  session: DuckDbSession,
  conn: DuckDBConnection,
  into: ReadInto,
  file: FileToRead,
): Promise<FileRead | undefined> {
  const { columns, names } = into;
  const own = Object.keys(file.constants);
  const fields: { column: string; key: string; type: ColumnType; def?: FieldDef }[] = [];
  for (const [column, type] of columns) {
    if (own.includes(column)) continue;
    const key = names.logical(column);
    const def = Object.hasOwn(file.fields, key) ? file.fields[key] : undefined;
    // A column widened (or pinned) away from its field's own type: left to sluice's decoding.
    if (columnOf(def) !== type || key === '' || key.startsWith('_')) {
      return back(file, `column ${column} (${type}) is not what its field reads as`);
    }
    fields.push({ column, key, type, ...(def ? { def } : {}) });
  }
  if (own.some((c) => !columns.has(c)) || fields.length === 0) {
    return back(file, 'the table lacks columns');
  }
  const { path, bytes, bom } = await spool(session, file);
  if (bom) return back(file, 'it opens with a byte order mark');
  const lines = linesOf(path, file.maxRecordBytes, true);
  const paths = `[${fields.map((f) => sqlText(`$.${JSON.stringify(f.key)}`)).join(', ')}]`;
  const cells = fields.map((f, i) => cellOf(`j[${i + 1}]`, f.type, f.def));
  // Merging, a line without the whole key would be a reject.
  const keyed = into.key.map((k) => {
    const at = fields.findIndex((f) => f.column === k);
    return at < 0 ? 'false' : `(${cells[at]!.value}) IS NOT NULL`;
  });
  const lineOk = lineKept(
    'l',
    'k',
    file.maxRecordBytes,
    fields.map((f) => sqlText(f.key)),
  );
  const source =
    `(SELECT CASE WHEN ${lineOk} THEN json_extract(l, ${paths}) END AS j ` +
    `FROM (SELECT l, json_keys(l) AS k FROM ${lines} WHERE l IS NOT NULL))`;
  let records: number;
  try {
    const result = await session.reading((reader) =>
      reader.runAndReadAll(
        `SELECT count(*), count(*) FILTER (WHERE j IS NULL OR (${[...cells.map((c) => c.ok), ...(into.mode === 'merge' ? keyed : [])].join(' AND ')}) IS NOT TRUE) FROM ${source}`,
      ),
    );
    const [count, doubts] = result.getRows()[0] as [bigint, bigint];
    if (doubts > 0n) return back(file, `${doubts} of its lines are in doubt`);
    records = Number(count);
  } catch (error) {
    // DuckDB could not read it (not UTF-8, a line ended by \r\n among others, ...).
    return back(file, (error as Error).message.split('\n')[0]!);
  }
  const written = [...fields.map((f) => f.column), ...own];
  const constants = own.map(
    (c) => `CAST(${sqlText(file.constants[c]!)} AS ${DUCKDB_TYPE[columns.get(c)!]})`,
  );
  const typed = [...cells.map((c) => c.value), ...constants].map(
    (v, i) => `${v} AS ${quoteIdent(written[i]!)}`,
  );
  // The lines are known to be kept: the statement reads them without looking again.
  // Read in order (a merge's last line of a key wins; appends keep the file's order).
  const ordered = linesOf(path, file.maxRecordBytes, false);
  const rows = `(SELECT json_extract(l, ${paths}) AS j FROM ${ordered} WHERE l IS NOT NULL)`;
  try {
    await conn.run(insertStatement(into, written, typed, rows));
  } catch (error) {
    throw new FileReadFailed(error);
  }
  return { rows: records, bytes };
}

/**
 * The statement that writes the file's rows: appended, or merged as writer.ts merges a batch
 * (the last line of each key wins, upserted on the table's key index, every column set).
 */
function insertStatement(
  into: ReadInto,
  names: readonly string[],
  typed: readonly string[],
  source: string,
): string {
  const list = names.map(quoteIdent).join(', ');
  const table = quoteIdent(into.table);
  if (into.mode === 'append')
    return `INSERT INTO ${table} (${list}) SELECT ${typed.join(', ')} FROM ${source}`;
  const keys = new Set(into.key);
  const keyList = into.key.map(quoteIdent).join(', ');
  const updates = names
    .filter((n) => !keys.has(n))
    .map((n) => `${quoteIdent(n)} = EXCLUDED.${quoteIdent(n)}`);
  const action = updates.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${updates.join(', ')}`;
  return (
    `INSERT INTO ${table} (${list}) SELECT ${list} FROM (SELECT ${typed.join(', ')}, ` +
    `row_number() OVER () AS "__sluice_pos" FROM ${source}) ` +
    `QUALIFY row_number() OVER (PARTITION BY ${keyList} ORDER BY "__sluice_pos" DESC) = 1 ` +
    `ON CONFLICT (${keyList}) ${action}`
  );
}
