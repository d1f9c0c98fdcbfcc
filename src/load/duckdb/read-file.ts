import { rmSync } from 'node:fs';
import type { DuckDBConnection } from '@duckdb/node-api';
import { type FileRead, FileReadFailed, type FileToRead } from '../destination.js';
import { quoteIdent, type ReadInto } from '../dialect.js';
import {
  checkRange,
  type FileChecked,
  firstLine,
  middleLine,
  type RangeChecked,
  type RangeToCheck,
} from './check-lines.js';
import type { DuckDbSession } from './connection.js';
import { csvCellValue, csvHeader } from './csv-scan.js';
import type { CheckedField } from './line-checks.js';
import { cellValue, columnOf } from './read-checks.js';
import type { Spooled } from './spools.js';
import { DUCKDB_TYPE } from './types.js';

const sqlText = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * A result file read by DuckDB itself (issue 41; docs/speed.md, "DuckDB reading the files
 * itself"): the file is spooled to the handle's scratch folder and every line checked
 * (line-scan.ts, line-checks.ts: by this thread and a worker, half each, or by the worker alone
 * for a file fetched ahead: `checkSpooled`) for anything sluice's own decoding would not write
 * exactly as DuckDB reads it; with none, one INSERT ... SELECT in the file's transaction reads it
 * into the table. Any doubt sends the file to sluice's decoding whole, so that rejects, widening
 * and their reasons stay what they are. While DuckDB reads a file, the job's next one is fetched
 * and checked (spools.ts).
 *
 * What is taken (anything else is a doubt): each line a JSON object of the table's fields as
 * JSON.stringify writes it (each key once, numbers spelt as a parse keeps them), within the
 * record size limit, without a `\u` escape; text fields JSON strings; integers and reals of at
 * most 15 digits before the point, with no exponent; booleans; times in the service's form
 * `YYYY-MM-DDTHH:MM:SSZ` that are real times; lists and objects holding no exponent or run of
 * 16 digits, and no text that the catalogue would decode into something else (empty, number-
 * or boolean-like, a date-shaped text that is no date, a list field's text), no empty list.
 *
 * A CSV file is read by `read_csv` (every cell text, typed by csv-scan.ts's `csvCellValue`) when
 * its header names the table's fields, each once, and each line is one record the same rules
 * take (csv-scan.ts).
 */

/**
 * The records of a spooled file, in order, each field a column named by its key: VARCHAR (a
 * number or a boolean as its JSON text), or JSON for lists and objects. A line longer than
 * `maxBytes` is sluice's reject: DuckDB need not read it (it fails, and the file goes back), and
 * its buffers stay small (DuckDB's budget is 256 MB: settings.ts).
 */
export function recordsOf(path: string, fields: readonly CheckedField[], maxBytes: number): string {
  const columns = fields.map(
    (f) => `${sqlText(f.key)}: '${f.type === 'json' ? 'JSON' : 'VARCHAR'}'`,
  );
  return (
    `read_json(${sqlText(path)}, format = 'newline_delimited', columns = {${columns.join(', ')}}, ` +
    `maximum_object_size = ${Math.max(maxBytes + 1, 1 << 20)})`
  );
}

/**
 * The records of a spooled CSV file of `cells` columns after its header, each cell a VARCHAR
 * named `c0`, `c1`... in order (NULL when empty), read as csv-scan.ts checked them.
 */
export function csvRecordsOf(path: string, cells: number, maxBytes: number): string {
  const columns = Array.from({ length: cells }, (_, i) => `'c${i}': 'VARCHAR'`);
  return (
    `read_csv(${sqlText(path)}, header = true, auto_detect = false, delim = ',', quote = '"', ` +
    `escape = '"', new_line = '\\n', compression = 'none', columns = {${columns.join(', ')}}, ` +
    `max_line_size = ${Math.max(maxBytes + 1, 1 << 21)})`
  );
}

/** Sends the file back to be loaded the usual way, saying why. */
function back(file: FileToRead, why: string): undefined {
  file.sentBack?.(why);
  return undefined;
}

/** How a file is read into its table: its fields, a merge's key fields, and the statement. */
interface ReadPlan {
  fields: CheckedField[];
  keyed: string[];
  maxBytes: number;
  /** The file's format (and the next's: a job's files have one). */
  format: FileToRead['format'];
  /** The fields, key and size limit, as text: a check made by another plan's is not this one's. */
  signature: string;
  /**
   * The INSERT of the rows of the file spooled at `path` (`keyAgain`: see FileChecked; `header`:
   * a CSV file's fields, in its order).
   */
  insert(path: string, keyAgain: boolean, header?: CheckedField[]): string;
}

/** How `file` is read into `into`, or why it is left to sluice's decoding. */
function planOf(into: ReadInto, file: FileToRead): ReadPlan | string {
  const { columns, names } = into;
  const own = Object.keys(file.constants);
  const fields: CheckedField[] = [];
  const byColumn = new Map<string, string>();
  for (const [column, type] of columns) {
    if (own.includes(column)) continue;
    const key = names.logical(column);
    const def = Object.hasOwn(file.fields, key) ? file.fields[key] : undefined;
    // A column widened (or pinned) away from its field's own type: left to sluice's decoding.
    if (columnOf(def) !== type || key === '' || key.startsWith('_')) {
      return `column ${column} (${type}) is not what its field reads as`;
    }
    fields.push({ key, type, ...(def ? { def } : {}) });
    byColumn.set(column, key);
  }
  if (own.some((c) => !columns.has(c)) || fields.length === 0) return 'the table lacks columns';
  // Merging, a line without the whole key would be a reject.
  const keyed = into.key.map((k) => byColumn.get(k));
  if (keyed.some((k) => k === undefined)) return "the key is not the fields'";
  const columnOfKey = new Map([...byColumn].map(([column, key]) => [key, column]));
  const constants = own.map(
    (c) => `CAST(${sqlText(file.constants[c]!)} AS ${DUCKDB_TYPE[columns.get(c)!]})`,
  );
  // Told apart by their text only where each key column is text: one integer, say, is
  // written `1` and `"1"`, two texts, one value.
  const textKeys = keyed.every((k) => fields.find((f) => f.key === k)?.type === 'text');
  /** The statement writing `read`'s fields, each given by `value`, from `source`. */
  const statement = (
    read: CheckedField[],
    value: (f: CheckedField, at: number) => string,
    source: string,
    keyAgain: boolean,
  ) => {
    const written = [...read.map((f) => columnOfKey.get(f.key)!), ...own];
    const typed = [...read.map(value), ...constants].map(
      (v, i) => `${v} AS ${quoteIdent(written[i]!)}`,
    );
    return insertStatement(into, written, typed, source, keyAgain || !textKeys);
  };
  return {
    fields,
    keyed: keyed as string[],
    maxBytes: file.maxRecordBytes,
    format: file.format,
    signature: JSON.stringify([fields, keyed, file.maxRecordBytes, file.format]),
    // Read in order (a merge's last line of a key wins; appends keep the file's order).
    insert: (path, keyAgain, header) =>
      header === undefined
        ? statement(
            fields,
            (f) => cellValue(quoteIdent(f.key), f.type),
            recordsOf(path, fields, file.maxRecordBytes),
            keyAgain,
          )
        : statement(
            header,
            (f, at) => csvCellValue(`c${at}`, f),
            csvRecordsOf(path, header.length, file.maxRecordBytes),
            keyAgain,
          ),
  };
}

/** See the top of this file. */
export async function readFileNatively(
  session: DuckDbSession,
  conn: DuckDBConnection,
  into: ReadInto,
  file: FileToRead,
): Promise<FileRead | undefined> {
  const plan = planOf(into, file);
  if (typeof plan === 'string') return back(file, plan);
  const { spooled, begun } = await session.spools.take(file);
  try {
    if (spooled.bom) return back(file, 'it opens with a byte order mark');
    const checking =
      begun?.then((ahead) =>
        ahead?.signature === plan.signature ? ahead : checkSpooled(session, spooled, plan),
      ) ?? checkSpooled(session, spooled, plan);
    // The job's next file is fetched while this one is checked and read, and checked (by this
    // file's fields, by the worker) once this one's check is done: the first file's check
    // is not slowed by the next's.
    if (file.next !== undefined) {
      const checked = checking.then(
        () => undefined,
        () => undefined,
      );
      // Not for a file dropped meanwhile (another file asked for, the handle closing), nor for
      // one that will be sent back for its byte order mark.
      session.spools.fetchAhead(file.next, (next, signal) =>
        checked.then(() =>
          signal.aborted || next.bom ? undefined : checkSpooled(session, next, plan, true),
        ),
      );
    }
    return await readSpooled(conn, file, spooled, plan, checking);
  } finally {
    rmSync(spooled.path, { force: true });
  }
}

/**
 * A file fetched ahead, read once the file before it is, is checked by the worker alone, up to
 * this size: this thread is left to keep DuckDB's statements going (its half of a check held up
 * each statement of the file being read: a DELETE of 4 ms took 25-35), and the worker alone
 * checks a file in less time than DuckDB takes to read the one before (docs/speed.md). A larger
 * file is split between both threads, as a job's first file is.
 */
const AHEAD_IN_WORKER_BYTES = 64 << 20;

/** What an empty range holds. */
const NOTHING: RangeChecked = { count: 0, records: 0, keys: [], again: false };

/**
 * Checks a spooled file's lines (of a CSV file, the lines after its header, whose names must be
 * the table's fields, each once): this thread and the worker each half of them, or the worker
 * all of a file checked `ahead` of its read (AHEAD_IN_WORKER_BYTES).
 */
async function checkSpooled(
  session: DuckDbSession,
  { path, bytes }: Spooled,
  plan: ReadPlan,
  ahead = false,
): Promise<FileChecked> {
  const { format } = plan;
  let fields = plan.fields;
  let start = 0;
  if (format === 'csv') {
    const header = await csvFields(path, plan);
    if (typeof header === 'string') {
      return {
        signature: plan.signature,
        records: 0,
        keyAgain: false,
        doubt: { line: 1, why: header },
      };
    }
    ({ fields, start } = header);
  }
  const alone = ahead && bytes - start <= AHEAD_IN_WORKER_BYTES;
  const middle = alone ? bytes : Math.max(start, await middleLine(path, bytes));
  const range = (from: number, end: number): RangeToCheck => ({
    path,
    start: from,
    end,
    format,
    fields,
    maxBytes: plan.maxBytes,
    keyed: plan.keyed,
    ...(alone ? { whole: true } : {}),
  });
  const [a, b] = await Promise.all([
    session.checks.check(range(start, middle)),
    alone ? NOTHING : checkRange(range(middle, bytes)),
  ]);
  // Lines are counted from the file's first: a CSV header is one line (csvFields).
  const before = start === 0 ? 0 : 1;
  const doubt =
    (a.doubt && { ...a.doubt, line: before + a.doubt.line }) ??
    (b.doubt && { ...b.doubt, line: before + a.count + b.doubt.line });
  const first = new Set(a.keys);
  const keyAgain = a.again || b.again || b.keys.some((key) => first.has(key));
  return {
    signature: plan.signature,
    ...(format === 'csv' ? { header: fields } : {}),
    records: a.records + b.records,
    keyAgain,
    ...(doubt ? { doubt } : {}),
  };
}

/**
 * A CSV file's header, as the plan's fields in its order, and where its records begin; or why
 * the file is left to sluice's decoding (a name the table has no column for, or a column of
 * the table the file lacks: sluice's own path decides what each means).
 */
async function csvFields(
  path: string,
  plan: ReadPlan,
): Promise<{ fields: CheckedField[]; start: number } | string> {
  const first = await firstLine(path, plan.maxBytes);
  if (first === undefined) return 'no header line ending in its first MiB';
  const names = csvHeader(first.line);
  if (typeof names === 'string') return names;
  const byKey = new Map(plan.fields.map((f) => [f.key, f]));
  const fields: CheckedField[] = [];
  for (const name of names) {
    const field = byKey.get(name);
    if (field === undefined) return `the header names ${name}, which the table has no column for`;
    fields.push(field);
  }
  if (fields.length !== plan.fields.length) return 'the file lacks a column of the table';
  return { fields, start: first.end };
}

/**
 * The file's lines checked (most often while the file before it was read), DuckDB reads it into
 * the table, unless a line is in doubt.
 */
async function readSpooled(
  conn: DuckDBConnection,
  file: FileToRead,
  { path, bytes }: Spooled,
  plan: ReadPlan,
  checking: Promise<FileChecked>,
): Promise<FileRead | undefined> {
  let checked: FileChecked;
  try {
    checked = await checking;
  } catch (error) {
    // The check worker stopped (out of memory, say): nothing is written yet.
    return back(file, `its lines could not be checked: ${(error as Error).message}`);
  }
  const { doubt, records, keyAgain, header } = checked;
  if (doubt !== undefined) return back(file, `line ${doubt.line}: ${doubt.why}`);
  try {
    await conn.run(plan.insert(path, keyAgain, header));
  } catch (error) {
    // DuckDB could not read it after all (out of memory, say).
    throw new FileReadFailed(error);
  }
  return { rows: records, bytes };
}

/**
 * The statement that writes the file's rows: appended, or merged as writer.ts merges a batch
 * (the last line of each key wins, upserted on the table's key index, every column set). Where
 * no key comes twice in the file, no line need be numbered and ranked: the rows are upserted as
 * they are (about a tenth of a merge's time). That is only for a file known to hold each key
 * once (`keyAgain` false): of two rows of one key in one statement, DuckDB keeps the first,
 * silently.
 */
function insertStatement(
  into: ReadInto,
  names: readonly string[],
  typed: readonly string[],
  source: string,
  keyAgain: boolean,
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
  if (!keyAgain) {
    return `INSERT INTO ${table} (${list}) SELECT ${typed.join(', ')} FROM ${source} ON CONFLICT (${keyList}) ${action}`;
  }
  return (
    `INSERT INTO ${table} (${list}) SELECT ${list} FROM (SELECT ${typed.join(', ')}, ` +
    `row_number() OVER () AS "__sluice_pos" FROM ${source}) ` +
    `QUALIFY row_number() OVER (PARTITION BY ${keyList} ORDER BY "__sluice_pos" DESC) = 1 ` +
    `ON CONFLICT (${keyList}) ${action}`
  );
}
