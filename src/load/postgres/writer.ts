import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import copyStreams from 'pg-copy-streams';
import { SluiceError } from '../../errors.js';
import type { PackedRows } from '../../schema/types.js';
import { asCopyText, copyChunks } from '../copy-rows.js';
import type { PairFilter } from '../destination.js';
import {
  type BoundColumn,
  type DialectWriter,
  pairsStatement,
  quoteIdent,
  rowsInTableOrder,
  type TableRows,
} from '../dialect.js';
import type { PgConn, PostgresSession } from './connection.js';

/** PostgreSQL's SQLSTATE for COPY data it cannot split into the columns named. */
const BAD_COPY_FORMAT = '22P04';

/**
 * Rows into PostgreSQL through COPY FROM STDIN (text format) on the transaction's client: an
 * append copies into the table, a merge into a temporary table it then upserts from. The parse
 * workers write the job's rows as COPY text already (the capability `rowEncoding`), which is
 * passed on as it is wherever the table takes it as written.
 */
export class PostgresWriter implements DialectWriter<PgConn> {
  constructor(readonly session: PostgresSession) {}

  encode(packed: PackedRows, columns: readonly BoundColumn[]): TableRows {
    return asCopyText(packed, columns) ?? rowsInTableOrder(packed, columns);
  }

  isEncodingFault(error: unknown): boolean {
    return (error as { code?: unknown }).code === BAD_COPY_FORMAT;
  }

  async insert(
    conn: PgConn,
    table: string,
    columns: readonly BoundColumn[],
    rows: TableRows,
    mode: 'append' | 'merge',
    key: readonly string[],
  ): Promise<void> {
    const target = this.session.qualified(table);
    if (mode === 'append') {
      await copy(conn, target, columns, rows);
      return;
    }
    if (key.length === 0) {
      throw new SluiceError(`cannot merge into ${table}: the table has no key`, {
        code: 'SLUICE_DESTINATION',
      });
    }
    let staging = conn.stagings.get(table);
    if (staging === undefined) {
      staging = quoteIdent(`_sluice_stage_${++conn.count}`);
      await conn.client.query(
        `CREATE TEMP TABLE ${staging} (LIKE ${target} INCLUDING DEFAULTS) ON COMMIT DROP`,
      );
      await conn.client.query(`ALTER TABLE ${staging} ADD COLUMN "__sluice_pos" bigserial`);
      conn.stagings.set(table, staging);
    }
    await copy(conn, staging, columns, rows);
    const list = columns.map((c) => quoteIdent(c.name)).join(', ');
    const keyList = key.map(quoteIdent).join(', ');
    const keys = new Set(key);
    const updates = columns
      .filter((c) => !keys.has(c.name))
      .map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`);
    const action = updates.length === 0 ? 'DO NOTHING' : `DO UPDATE SET ${updates.join(', ')}`;
    // The last row of the batch wins when a key repeats: DISTINCT ON keeps the first row of
    // each key in the order given, and the order is by key then position, newest first.
    await conn.client.query(
      `INSERT INTO ${target} (${list}) SELECT DISTINCT ON (${keyList}) ${list} FROM ${staging} ` +
        `ORDER BY ${keyList}, "__sluice_pos" DESC ON CONFLICT (${keyList}) ${action}`,
    );
    await conn.client.query(`TRUNCATE ${staging}`);
  }

  async savepoint(conn: PgConn, step: 'begin' | 'release' | 'rollback'): Promise<void> {
    if (step === 'begin') {
      await conn.client.query('SAVEPOINT sluice_batch');
      conn.stagingsAtSavepoint = new Map(conn.stagings);
    } else if (step === 'release') await conn.client.query('RELEASE SAVEPOINT sluice_batch');
    else {
      await conn.client.query('ROLLBACK TO SAVEPOINT sluice_batch');
      await conn.client.query('RELEASE SAVEPOINT sluice_batch');
      // A merge's temporary table made inside the savepoint is gone with it.
      if (conn.stagingsAtSavepoint) conn.stagings = conn.stagingsAtSavepoint;
    }
  }

  async deleteWhereIn(
    conn: PgConn,
    table: string,
    column: string,
    values: readonly (string | number | bigint)[],
  ): Promise<void> {
    // `= ANY($1)` lets PostgreSQL type the array as the column's, so the index on it is used.
    await conn.client.query(
      `DELETE FROM ${this.session.qualified(table)} WHERE ${quoteIdent(column)} = ANY($1)`,
      [values.map((v) => (typeof v === 'bigint' ? v.toString() : v))],
    );
  }

  async readPairs(
    table: string,
    columns: [string, string],
    filter?: PairFilter,
  ): Promise<[unknown, unknown][]> {
    const { session } = this;
    const { text, values } = pairsStatement(
      session.qualified(table),
      columns,
      filter,
      (i) => `$${i}`,
    );
    const client = await session.connect();
    try {
      const result = await client.query({ text, values, rowMode: 'array' });
      return result.rows as [unknown, unknown][];
    } finally {
      session.release(client);
    }
  }
}

async function copy(
  conn: PgConn,
  target: string,
  columns: readonly BoundColumn[],
  rows: TableRows,
): Promise<void> {
  if (rows.count === 0) return;
  const { text } = rows;
  const list = (text?.columns ?? columns.map((c) => c.name)).map(quoteIdent).join(', ');
  const stream = conn.client.query(copyStreams.from(`COPY ${target} (${list}) FROM STDIN`));
  await pipeline(
    text ? Readable.from([text.bytes]) : Readable.from(copyChunks(rows, columns)),
    stream,
  );
}
