import type Database from 'better-sqlite3';
import type { PackedRows } from '../../schema/types.js';
import type { PairFilter } from '../destination.js';
import {
  type BoundColumn,
  type DialectWriter,
  pairsStatement,
  quoteIdent,
  rowsInTableOrder,
  type TableRows,
} from '../dialect.js';
import type { SqliteSession } from './connection.js';
import { bindable } from './types.js';

/** Statements kept prepared at most: bounded whatever the data (a table per child array). */
const MAX_STATEMENTS = 256;

/**
 * Rows into SQLite: cached prepared statements, one `run()` per row inside the file's
 * transaction. Nothing is compiled per batch, which on rows of 30 columns made them two to three
 * times as fast as multi-row inserts (test/bench/sqlite-insert.ts).
 */
export class SqliteWriter implements DialectWriter<Database.Database> {
  constructor(readonly session: SqliteSession) {}

  encode(packed: PackedRows, columns: readonly BoundColumn[]): TableRows {
    return rowsInTableOrder(packed, columns);
  }

  isEncodingFault(): boolean {
    return false; // values are bound one by one: nothing is encoded
  }

  async insert(
    _handle: Database.Database,
    table: string,
    columns: readonly BoundColumn[],
    rows: TableRows,
    mode: 'append' | 'merge',
    key: readonly string[],
  ): Promise<void> {
    const statement = this.#insertStatement(table, columns, mode, key);
    const width = columns.length;
    const types = columns.map((c) => c.type);
    const values: (string | number | bigint | null)[] = new Array(width);
    const input = rows.values;
    for (let r = 0, o = 0; r < rows.count; r++) {
      for (let i = 0; i < width; i++) values[i] = bindable(input[o++], types[i]!);
      statement.run(values);
    }
  }

  #insertStatement(
    table: string,
    columns: readonly BoundColumn[],
    mode: 'append' | 'merge',
    key: readonly string[],
  ): Database.Statement {
    const { statements } = this.session;
    const names = columns.map((c) => c.name);
    const cacheKey = JSON.stringify([table, mode, key, names]);
    let statement = statements.get(cacheKey);
    if (statement === undefined) {
      if (statements.size >= MAX_STATEMENTS) statements.clear();
      const list = names.map(quoteIdent).join(', ');
      const params = names.map(() => '?').join(', ');
      let text = `INSERT INTO ${quoteIdent(table)} (${list}) VALUES (${params})`;
      if (mode === 'merge' && key.length > 0) {
        const updates = names
          .filter((n) => !key.includes(n))
          .map((n) => `${quoteIdent(n)} = excluded.${quoteIdent(n)}`);
        const target = key.map(quoteIdent).join(', ');
        text +=
          updates.length > 0
            ? ` ON CONFLICT (${target}) DO UPDATE SET ${updates.join(', ')}`
            : ` ON CONFLICT (${target}) DO NOTHING`;
      }
      statement = this.session.handle.prepare(text);
      statements.set(cacheKey, statement);
    }
    return statement;
  }

  async savepoint(
    handle: Database.Database,
    step: 'begin' | 'release' | 'rollback',
  ): Promise<void> {
    if (step === 'begin') handle.exec('SAVEPOINT sluice_batch');
    else if (step === 'release') handle.exec('RELEASE sluice_batch');
    else handle.exec('ROLLBACK TO sluice_batch; RELEASE sluice_batch');
  }

  async deleteWhereIn(
    handle: Database.Database,
    table: string,
    column: string,
    values: readonly (string | number | bigint)[],
  ): Promise<void> {
    for (let i = 0; i < values.length; i += 500) {
      const chunk = values.slice(i, i + 500);
      handle
        .prepare(
          `DELETE FROM ${quoteIdent(table)} WHERE ${quoteIdent(column)} IN (${chunk.map(() => '?').join(', ')})`,
        )
        .run(...chunk);
    }
  }

  async readPairs(
    table: string,
    columns: [string, string],
    filter?: PairFilter,
  ): Promise<[unknown, unknown][]> {
    const { text, values } = pairsStatement(quoteIdent(table), columns, filter, () => '?');
    return this.session.handle
      .prepare(text)
      .raw()
      .all(...values) as [unknown, unknown][];
  }
}
