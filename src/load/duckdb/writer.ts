import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { SluiceError } from '../../errors.js';
import type { PackedRows } from '../../schema/types.js';
import { asCopyText, copyChunks } from '../copy-rows.js';
import type { FileRead, FileToRead, PairFilter } from '../destination.js';
import {
  type BoundColumn,
  type DialectWriter,
  pairsStatement,
  quoteIdent,
  type ReadInto,
  rowsInTableOrder,
  type TableRows,
} from '../dialect.js';
import { DestinationError } from '../errors.js';
import type { DuckDbSession } from './connection.js';
import { readFileNatively } from './read-file.js';
import { fromCopyCell, refusedCell } from './types.js';

/** The longest line DuckDB's reader takes: a record is at most 4 MiB as it comes, more escaped. */
const MAX_LINE_BYTES = 64 << 20;

/**
 * Rows into DuckDB through its own CSV reader: a batch's rows, as the COPY text the parse
 * workers wrote (the capability `rowEncoding`), go to a file of the handle's scratch folder,
 * which one INSERT ... SELECT reads, converting each cell to its column's type. A merge keeps
 * the last row of each key and upserts on the table's unique key index.
 *
 * DuckDB has no savepoints, and a statement that fails ends the transaction: so the cells are
 * first checked against their columns' types (a query of the same file, of the cells that can
 * be refused only), and a batch with a value DuckDB would refuse is refused whole, before
 * anything is written, for the loader to write it row by row and keep the refused rows aside.
 *
 * The file is read twice rather than once into a temporary table: DuckDB's reader splits a line
 * in a few microseconds, while a temporary table of every cell cost as much as the INSERT, and
 * its count and DROP two statements more (a third of a batch's time).
 */
export class DuckDbWriter implements DialectWriter<DuckDBConnection> {
  #file: string | undefined;

  constructor(
    readonly session: DuckDbSession,
    /** Whether result files may be read by DuckDB itself (`SLUICE_DUCKDB_NATIVE`, read-file.ts). */
    readonly native = false,
  ) {}

  prepareReads(): void {
    if (this.native && !this.session.readOnly) this.session.checks.start();
  }

  readFile(
    conn: DuckDBConnection,
    into: ReadInto,
    file: FileToRead,
  ): Promise<FileRead | undefined> {
    if (!this.native) return Promise.resolve(undefined);
    if (into.mode === 'merge') this.session.changed.add(into.table);
    return readFileNatively(this.session, conn, into, file);
  }

  encode(packed: PackedRows, columns: readonly BoundColumn[]): TableRows {
    return asCopyText(packed, columns) ?? rowsInTableOrder(packed, columns);
  }

  isEncodingFault(error: unknown): boolean {
    return /CSV Error/i.test(String((error as Error | undefined)?.message ?? ''));
  }

  async insert(
    conn: DuckDBConnection,
    table: string,
    columns: readonly BoundColumn[],
    rows: TableRows,
    mode: 'append' | 'merge',
    key: readonly string[],
  ): Promise<void> {
    if (rows.count === 0) return;
    if (mode === 'merge' && key.length === 0) {
      throw new SluiceError(`cannot merge into ${table}: the table has no key`, {
        code: 'SLUICE_DESTINATION',
      });
    }
    const names = rows.text?.columns ?? columns.map((c) => c.name);
    const byName = new Map(columns.map((c) => [c.name, c]));
    const cells = names.map((name, i) => ({ cell: `c${i}`, column: byName.get(name)! }));
    const source = this.#write(rows, columns, names.length);
    await this.#refusal(conn, source, cells);
    const list = names.map(quoteIdent).join(', ');
    const typed = cells.map(
      ({ cell, column }) => `${fromCopyCell(cell, column.type)} AS ${quoteIdent(column.name)}`,
    );
    if (mode === 'append') {
      await conn.run(
        `INSERT INTO ${quoteIdent(table)} (${list}) SELECT ${typed.join(', ')} FROM ${source}`,
      );
      return;
    }
    this.session.changed.add(table);
    const keys = new Set(key);
    const keyList = key.map(quoteIdent).join(', ');
    const updates = names
      .filter((n) => !keys.has(n))
      .map((n) => `${quoteIdent(n)} = EXCLUDED.${quoteIdent(n)}`);
    const action = updates.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${updates.join(', ')}`;
    // The last row of the batch wins when a key repeats (an upsert may change a row once): the
    // reader reads the file in order (parallel = false), so a row's number is its place.
    await conn.run(
      `INSERT INTO ${quoteIdent(table)} (${list}) SELECT ${list} FROM (SELECT ${typed.join(', ')}, ` +
        `row_number() OVER () AS "__sluice_pos" FROM ${source}) ` +
        `QUALIFY row_number() OVER (PARTITION BY ${keyList} ORDER BY "__sluice_pos" DESC) = 1 ` +
        `ON CONFLICT (${keyList}) ${action}`,
    );
  }

  /** Writes the rows' COPY text to the scratch file; returns the reader of it, for FROM. */
  #write(rows: TableRows, columns: readonly BoundColumn[], width: number): string {
    this.#file ??= join(this.session.scratch(), 'rows.txt');
    writeFileSync(
      this.#file,
      rows.text ? rows.text.bytes : [...copyChunks(rows, columns)].join(''),
    );
    const spec = Array.from({ length: width }, (_, i) => `'c${i}': 'VARCHAR'`).join(', ');
    return (
      `read_csv('${this.#file.replaceAll("'", "''")}', columns = {${spec}}, header = false, ` +
      `delim = '\t', quote = '', escape = '', nullstr = '\\N', auto_detect = false, ` +
      `parallel = false, max_line_size = ${MAX_LINE_BYTES}, buffer_size = ${2 * MAX_LINE_BYTES})`
    );
  }

  /**
   * Fails, unwritten, with the first cell its column refuses (a value of a type other than text
   * that does not read as it), looking at the cells that can be refused only.
   */
  async #refusal(
    conn: DuckDBConnection,
    source: string,
    cells: readonly { cell: string; column: BoundColumn }[],
  ): Promise<void> {
    const tests = cells.flatMap(({ cell, column }) => {
      const refused = refusedCell(cell, fromCopyCell(cell, column.type), column.type);
      return refused ? [{ refused, cell, column }] : [];
    });
    if (tests.length === 0) return;
    const result = await conn.runAndReadAll(
      `SELECT ${tests.map((t) => `CASE WHEN ${t.refused} THEN ${t.cell} END`).join(', ')} FROM ${source} ` +
        `WHERE ${tests.map((t) => t.refused).join(' OR ')} LIMIT 1`,
    );
    const row = (result.getRows() as (string | null)[][])[0];
    if (row === undefined) return;
    const at = Math.max(
      0,
      row.findIndex((v) => v !== null),
    );
    const { column } = tests[at]!;
    throw new DestinationError(
      `column ${column.name}: ${JSON.stringify(row[at])} is not a valid ${column.type}`,
      'SLUICE_DESTINATION_VALUE',
    );
  }

  async savepoint(): Promise<void> {
    // None in DuckDB: `insert` checks its rows first and writes them all or fails unwritten.
  }

  async deleteWhereIn(
    conn: DuckDBConnection,
    table: string,
    column: string,
    values: readonly (string | number | bigint)[],
  ): Promise<void> {
    this.session.changed.add(table);
    for (let i = 0; i < values.length; i += 500) {
      const chunk = values.slice(i, i + 500);
      await conn.run(
        `DELETE FROM ${quoteIdent(table)} WHERE ${quoteIdent(column)} IN (${chunk.map((_, j) => `$${j + 1}`).join(', ')})`,
        chunk as DuckDBValue[],
      );
    }
  }

  readPairs(
    table: string,
    columns: [string, string],
    filter?: PairFilter,
  ): Promise<[unknown, unknown][]> {
    const { text, values } = pairsStatement(quoteIdent(table), columns, filter, (i) => `$${i}`);
    return this.session.reading(async (conn) => {
      const result = await conn.runAndReadAll(text, values);
      return (result.getRowsJS() as [unknown, unknown][]).map(
        (pair) =>
          pair.map((v) =>
            typeof v === 'bigint' && Number.isSafeInteger(Number(v)) ? Number(v) : v,
          ) as [unknown, unknown],
      );
    });
  }
}
