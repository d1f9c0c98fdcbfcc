import type { DuckDBConnection } from '@duckdb/node-api';
import type { Widening } from '../../schema/plan.js';
import type { Column } from '../../schema/types.js';
import {
  type BoundColumn,
  type DialectSchema,
  type IndexDef,
  type IndexRename,
  quoteIdent,
} from '../dialect.js';
import type { DuckDbSession } from './connection.js';
import { castExpression, columnTypeOf, DUCKDB_TYPE } from './types.js';

/**
 * DuckDB's DDL and introspection. Two of DuckDB's limits shape it: a table with an index cannot
 * be renamed, nor a column's type changed, even with the index dropped earlier in the same
 * transaction; and a transaction that updated or deleted rows of a table cannot commit once it
 * has also altered it. Where either stands in the way the table is rebuilt instead, inside the
 * transaction: made anew from a SELECT of the old one, which is dropped, and its indexes made
 * again. Staging tables are swapped in with their indexes dropped and made again.
 */
export class DuckDbSchema implements DialectSchema<DuckDBConnection> {
  constructor(readonly session: DuckDbSession) {}

  describe(table: string, conn?: DuckDBConnection): Promise<Column[] | undefined> {
    const read = async (c: DuckDBConnection) => {
      // The catalogue's views read every table's columns; DESCRIBE reads the one table, but
      // fails (ending a transaction) where there is none: so first whether there is.
      const found = await c.runAndReadAll(
        'SELECT table_name FROM duckdb_tables() WHERE schema_name = current_schema() AND lower(table_name) = lower($1)',
        [table],
      );
      const [row] = found.getRows() as [string][];
      if (row === undefined) return undefined;
      const result = await c.runAndReadAll(
        `SELECT column_name, column_type FROM (DESCRIBE ${quoteIdent(row[0])})`,
      );
      return (result.getRows() as [string, string][]).map(([name, type]) => ({
        name,
        type: columnTypeOf(type),
      }));
    };
    return conn ? read(conn) : this.session.reading(read);
  }

  tableNames(): Promise<string[]> {
    return this.session.reading(async (c) => {
      const result = await c.runAndReadAll(
        'SELECT table_name FROM duckdb_tables() WHERE schema_name = current_schema() ORDER BY table_name',
      );
      return (result.getRows() as [string][]).map(([name]) => name);
    });
  }

  async stateColumns(table: string, conn: DuckDBConnection): Promise<string[] | undefined> {
    return (await this.describe(table, conn))?.map((c) => c.name);
  }

  async createTable(
    conn: DuckDBConnection,
    table: string,
    columns: readonly BoundColumn[],
  ): Promise<void> {
    const defs = columns.map((c) => `${quoteIdent(c.name)} ${DUCKDB_TYPE[c.type]}`);
    await conn.run(`CREATE TABLE ${quoteIdent(table)} (${defs.join(', ')})`);
  }

  async addColumns(
    conn: DuckDBConnection,
    table: string,
    columns: readonly BoundColumn[],
  ): Promise<void> {
    if (this.session.changed.has(table)) {
      await this.#rebuild(conn, table, (name) => quoteIdent(name), columns);
      return;
    }
    for (const c of columns) {
      await conn.run(
        `ALTER TABLE ${quoteIdent(table)} ADD COLUMN ${quoteIdent(c.name)} ${DUCKDB_TYPE[c.type]}`,
      );
    }
  }

  async widenColumn(conn: DuckDBConnection, table: string, change: Widening): Promise<void> {
    await this.#rebuild(conn, table, (name) =>
      name === change.name
        ? `${castExpression(quoteIdent(name), change.from, change.to)}::${DUCKDB_TYPE[change.to]}`
        : quoteIdent(name),
    );
  }

  /**
   * Makes `table` anew inside the transaction: each column as `select` reads it from the old
   * table (in its place), then `add` (NULL), the old table dropped, and its indexes made again.
   */
  async #rebuild(
    conn: DuckDBConnection,
    table: string,
    select: (column: string) => string,
    add: readonly BoundColumn[] = [],
  ): Promise<void> {
    const columns = (await this.describe(table, conn)) ?? [];
    const indexes = await this.indexes(table, conn);
    const aside = quoteIdent(`${table}__sluice_rebuild`);
    const list = [
      ...columns.map((c) => `${select(c.name)} AS ${quoteIdent(c.name)}`),
      ...add.map((c) => `NULL::${DUCKDB_TYPE[c.type]} AS ${quoteIdent(c.name)}`),
    ];
    await conn.run(`DROP TABLE IF EXISTS ${aside}`);
    await conn.run(`CREATE TABLE ${aside} AS SELECT ${list.join(', ')} FROM ${quoteIdent(table)}`);
    await conn.run(`DROP TABLE ${quoteIdent(table)}`);
    await conn.run(`ALTER TABLE ${aside} RENAME TO ${quoteIdent(table)}`);
    for (const index of indexes) await this.createIndex(conn, table, index);
  }

  async createIndex(conn: DuckDBConnection, table: string, index: IndexDef): Promise<void> {
    await conn.run(
      `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${quoteIdent(index.name)} ON ${quoteIdent(table)} (${index.columns.map(quoteIdent).join(', ')})`,
    );
  }

  indexes(table: string, conn?: DuckDBConnection): Promise<IndexDef[]> {
    const read = async (c: DuckDBConnection) => {
      const result = await c.runAndReadAll(
        `SELECT index_name, is_unique, sql FROM duckdb_indexes()
         WHERE schema_name = current_schema() AND lower(table_name) = lower($1)
         ORDER BY index_name`,
        [table],
      );
      return (result.getRows() as [string, boolean, string | null][]).map(
        ([name, unique, text]) => ({ name, unique, columns: indexColumns(text ?? '') }),
      );
    };
    return conn ? read(conn) : this.session.reading(read);
  }

  async lockTable(): Promise<void> {
    // One writing connection: nothing can have changed the table since this transaction began.
  }

  async swap(
    conn: DuckDBConnection,
    staging: string,
    target: string,
    indexes: readonly IndexRename[],
  ): Promise<void> {
    // Inside the caller's transaction: readers see the old table until it commits.
    for (const index of await this.indexes(staging, conn)) {
      await conn.run(`DROP INDEX ${quoteIdent(index.name)}`);
    }
    await conn.run(`DROP TABLE IF EXISTS ${quoteIdent(target)}`);
    await conn.run(`ALTER TABLE ${quoteIdent(staging)} RENAME TO ${quoteIdent(target)}`);
    for (const index of indexes) await this.createIndex(conn, target, index);
  }

  async clear(conn: DuckDBConnection, table: string): Promise<void> {
    this.session.changed.add(table);
    await conn.run(`DELETE FROM ${quoteIdent(table)}`);
  }

  async drop(conn: DuckDBConnection, table: string): Promise<void> {
    for (const index of await this.indexes(table, conn)) {
      await conn.run(`DROP INDEX IF EXISTS ${quoteIdent(index.name)}`);
    }
    await conn.run(`DROP TABLE IF EXISTS ${quoteIdent(table)}`);
  }
}

/** The columns of an index, from the statement that made it (sluice's own, quoted names). */
function indexColumns(statement: string): string[] {
  const list = /\(((?:[^()"]|"(?:[^"]|"")*")*)\)\s*;?\s*$/.exec(statement)?.[1] ?? '';
  const columns: string[] = [];
  for (const match of list.matchAll(/"((?:[^"]|"")*)"|([^,\s]+)/g)) {
    columns.push(match[1] !== undefined ? match[1].replaceAll('""', '"') : match[2]!);
  }
  return columns;
}
