import type Database from 'better-sqlite3';
import type { Widening } from '../../schema/plan.js';
import type { Column } from '../../schema/types.js';
import {
  type BoundColumn,
  type DialectSchema,
  type IndexDef,
  type IndexRename,
  quoteIdent,
} from '../dialect.js';
import type { SqliteSession } from './connection.js';
import { castExpression, DECLARED, typeOfDeclared } from './types.js';

/** SQLite's DDL and introspection. A change of a table's shape drops the prepared inserts. */
export class SqliteSchema implements DialectSchema<Database.Database> {
  constructor(readonly session: SqliteSession) {}

  async describe(table: string): Promise<Column[] | undefined> {
    const info = this.session.handle.pragma(`table_info(${quoteIdent(table)})`) as {
      name: string;
      type: string;
    }[];
    if (info.length === 0) return undefined;
    return info.map((c) => ({ name: c.name, type: typeOfDeclared(c.type) }));
  }

  async tableNames(): Promise<string[]> {
    const rows = this.session.handle
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
      .all() as { name: string }[];
    return rows.map((r) => r.name);
  }

  async stateColumns(table: string): Promise<string[] | undefined> {
    return (await this.describe(table))?.map((c) => c.name);
  }

  async createTable(
    handle: Database.Database,
    table: string,
    columns: readonly BoundColumn[],
  ): Promise<void> {
    const defs = columns.map((c) => `${quoteIdent(c.name)} ${DECLARED[c.type]}`);
    handle.exec(`CREATE TABLE ${quoteIdent(table)} (${defs.join(', ')})`);
    this.session.statements.clear();
  }

  async addColumns(
    handle: Database.Database,
    table: string,
    columns: readonly BoundColumn[],
  ): Promise<void> {
    for (const c of columns) {
      handle.exec(
        `ALTER TABLE ${quoteIdent(table)} ADD COLUMN ${quoteIdent(c.name)} ${DECLARED[c.type]}`,
      );
    }
    this.session.statements.clear();
  }

  /**
   * SQLite cannot change a column's declared type, and its type affinity would turn text such
   * as `01234` into a number in an INTEGER column. So a widened column is rebuilt: renamed
   * aside, added again with the new type, copied, and the old one dropped; the indexes on it
   * are dropped first and made again after.
   */
  async widenColumn(handle: Database.Database, table: string, change: Widening): Promise<void> {
    const t = quoteIdent(table);
    const name = quoteIdent(change.name);
    const aside = quoteIdent(`${change.name}__sluice_old`);
    const indexes = (await this.indexes(table)).filter((i) => i.columns.includes(change.name));
    for (const index of indexes) handle.exec(`DROP INDEX ${quoteIdent(index.name)}`);
    handle.exec(`ALTER TABLE ${t} RENAME COLUMN ${name} TO ${aside}`);
    handle.exec(`ALTER TABLE ${t} ADD COLUMN ${name} ${DECLARED[change.to]}`);
    handle.exec(`UPDATE ${t} SET ${name} = ${castExpression(aside, change.from, change.to)}`);
    handle.exec(`ALTER TABLE ${t} DROP COLUMN ${aside}`);
    for (const index of indexes) await this.createIndex(handle, table, index);
    this.session.statements.clear();
  }

  async createIndex(handle: Database.Database, table: string, index: IndexDef): Promise<void> {
    handle.exec(
      `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${quoteIdent(index.name)} ON ${quoteIdent(table)} (${index.columns.map(quoteIdent).join(', ')})`,
    );
  }

  async indexes(table: string): Promise<IndexDef[]> {
    const { handle } = this.session;
    const list = handle.pragma(`index_list(${quoteIdent(table)})`) as {
      name: string;
      unique: number;
      origin: string;
    }[];
    return list
      .filter((i) => i.origin === 'c')
      .map((i) => ({
        name: i.name,
        unique: i.unique === 1,
        columns: (handle.pragma(`index_info(${quoteIdent(i.name)})`) as { name: string }[]).map(
          (c) => c.name,
        ),
      }));
  }

  async lockTable(): Promise<void> {
    // One writer at a time: nothing can have changed the table since this transaction began.
  }

  async swap(
    handle: Database.Database,
    staging: string,
    target: string,
    indexes: readonly IndexRename[],
  ): Promise<void> {
    // Inside the caller's transaction: readers see the old table until it commits. Index names
    // are global in SQLite and cannot be renamed: the staging ones are made again.
    for (const index of indexes) handle.exec(`DROP INDEX IF EXISTS ${quoteIdent(index.from)}`);
    handle.exec(`DROP TABLE IF EXISTS ${quoteIdent(target)}`);
    handle.exec(`ALTER TABLE ${quoteIdent(staging)} RENAME TO ${quoteIdent(target)}`);
    for (const index of indexes) await this.createIndex(handle, target, index);
    this.session.statements.clear();
  }

  async clear(handle: Database.Database, table: string): Promise<void> {
    handle.exec(`DELETE FROM ${quoteIdent(table)}`);
  }

  async drop(handle: Database.Database, table: string): Promise<void> {
    handle.exec(`DROP TABLE IF EXISTS ${quoteIdent(table)}`);
    this.session.statements.clear();
  }
}
