import type { Widening } from '../../schema/plan.js';
import type { Column } from '../../schema/types.js';
import {
  type BoundColumn,
  type DialectSchema,
  type IndexDef,
  type IndexRename,
  quoteIdent,
} from '../dialect.js';
import { lockKey, type PgConn, type PostgresSession } from './connection.js';
import { castExpression, columnTypeOf, PG_TYPE } from './types.js';

/** PostgreSQL's DDL and introspection, in the destination's schema. */
export class PostgresSchema implements DialectSchema<PgConn> {
  constructor(readonly session: PostgresSession) {}

  async describe(table: string, conn?: PgConn): Promise<Column[] | undefined> {
    const on = conn?.client ?? this.session.pool;
    // The catalogue itself rather than information_schema: a few times faster, and it runs for
    // every table a job prepares.
    const result = await on.query<{ name: string | null; type: string | null }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_catalog.pg_class c
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_catalog.pg_attribute a
         ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
       ORDER BY a.attnum`,
      [this.session.schema, table],
    );
    if (result.rows.length === 0) return undefined;
    return result.rows
      .filter((r) => r.name !== null)
      .map((r) => ({ name: r.name!, type: columnTypeOf(r.type!) }));
  }

  async tableNames(): Promise<string[]> {
    const result = await this.session.pool.query<{ name: string }>(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [this.session.schema],
    );
    return result.rows.map((r) => r.name);
  }

  async stateColumns(table: string, conn: PgConn): Promise<string[] | undefined> {
    return (await this.describe(table, conn))?.map((c) => c.name);
  }

  async createTable(conn: PgConn, table: string, columns: readonly BoundColumn[]): Promise<void> {
    const defs = columns.map((c) => `${quoteIdent(c.name)} ${PG_TYPE[c.type]}`).join(', ');
    await conn.client.query(`CREATE TABLE ${this.session.qualified(table)} (${defs})`);
  }

  async addColumns(conn: PgConn, table: string, columns: readonly BoundColumn[]): Promise<void> {
    const alters = columns.map(
      (c) => `ADD COLUMN IF NOT EXISTS ${quoteIdent(c.name)} ${PG_TYPE[c.type]}`,
    );
    await conn.client.query(`ALTER TABLE ${this.session.qualified(table)} ${alters.join(', ')}`);
    await dropStaging(conn, table);
  }

  async widenColumn(conn: PgConn, table: string, change: Widening): Promise<void> {
    const col = quoteIdent(change.name);
    await conn.client.query(
      `ALTER TABLE ${this.session.qualified(table)} ALTER COLUMN ${col} TYPE ${PG_TYPE[change.to]} USING ${castExpression(col, change.from, change.to)}`,
    );
    await dropStaging(conn, table);
  }

  async createIndex(conn: PgConn, table: string, index: IndexDef): Promise<void> {
    await conn.client.query(
      `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${quoteIdent(index.name)} ON ${this.session.qualified(table)} (${index.columns.map(quoteIdent).join(', ')})`,
    );
  }

  async indexes(table: string, conn?: PgConn): Promise<IndexDef[]> {
    const on = conn?.client ?? this.session.pool;
    const result = await on.query<{ name: string; unique: boolean; columns: string[] }>(
      `SELECT i.relname AS name, ix.indisunique AS unique,
              array_agg(a.attname::text ORDER BY k.ord) AS columns
       FROM pg_catalog.pg_class t
       JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
       JOIN pg_catalog.pg_index ix ON ix.indrelid = t.oid
       JOIN pg_catalog.pg_class i ON i.oid = ix.indexrelid
       CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord)
       JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
       WHERE n.nspname = $1 AND t.relname = $2 AND NOT ix.indisprimary
       GROUP BY i.relname, ix.indisunique`,
      [this.session.schema, table],
    );
    return result.rows;
  }

  async lockTable(conn: PgConn, table: string): Promise<void> {
    // Conflicts with writers (who hold ROW EXCLUSIVE until they commit) and with itself, not with
    // readers: an analyst's query goes on until a change is really made.
    await conn.client.query(
      `LOCK TABLE ${this.session.qualified(table)} IN SHARE ROW EXCLUSIVE MODE`,
    );
  }

  async swap(
    conn: PgConn,
    staging: string,
    target: string,
    indexes: readonly IndexRename[],
  ): Promise<void> {
    const { session } = this;
    // Two pipelines replacing one table: one swap after the other, never interleaved (two
    // renames to one name race in the catalogue).
    await conn.client.query('SELECT pg_advisory_xact_lock($1::bigint)', [
      lockKey(`sluice:swap:${session.schema}:${target}`),
    ]);
    await conn.client.query(`DROP TABLE IF EXISTS ${session.qualified(target)}`);
    await conn.client.query(
      `ALTER TABLE ${session.qualified(staging)} RENAME TO ${quoteIdent(target)}`,
    );
    for (const index of indexes) {
      await conn.client.query(
        `ALTER INDEX IF EXISTS ${session.qualified(index.from)} RENAME TO ${quoteIdent(index.name)}`,
      );
    }
  }

  async clear(conn: PgConn, table: string): Promise<void> {
    await conn.client.query(`DELETE FROM ${this.session.qualified(table)}`);
  }

  async drop(conn: PgConn, table: string): Promise<void> {
    await conn.client.query(`DROP TABLE IF EXISTS ${this.session.qualified(table)}`);
  }
}

/**
 * A merge's staging table was made LIKE the old shape of `table` (see the writer): dropped when
 * the table changes, so the next merge makes a new one.
 */
async function dropStaging(conn: PgConn, table: string): Promise<void> {
  const staging = conn.stagings.get(table);
  if (staging === undefined) return;
  await conn.client.query(`DROP TABLE IF EXISTS ${staging}`);
  conn.stagings.delete(table);
}
