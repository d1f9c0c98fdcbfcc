/**
 * The destinations the end-to-end tests run on, chosen by `SLUICE_TEST_DESTINATIONS` (default
 * `sqlite,postgres,duckdb`). Each test gets a fresh target: a new SQLite or DuckDB file, or a
 * new PostgreSQL schema dropped afterwards. Rows are read back with a separate connection, as an
 * analyst would. Tests ask a target what they need (its columns, its indexes, how many files it
 * writes at once) rather than which destination it is.
 */
import { join } from 'node:path';
import { after } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { execDuckDb, queryDuckDb } from './duckdb.js';
import { dropSchema, postgresSkipReason, postgresUrl, randomSchemaName } from './postgres.js';

export type Kind = 'sqlite' | 'postgres' | 'duckdb';

const KINDS: readonly Kind[] = ['sqlite', 'postgres', 'duckdb'];

export interface TestTarget {
  kind: Kind;
  /** The `destination:` value for a pipeline file. */
  destinationYaml: string;
  /** What `openDestination(url, { schema })` takes to open the same destination in a test. */
  url: string;
  schema?: string;
  /** The database file, for a file destination. */
  file?: string;
  /** Files of one job it loads at once (SQLite and DuckDB: one writer). */
  writersAtOnce: number;
  /**
   * One process at a time has the database open (DuckDB): a second run waits at the open
   * (`--wait`) or fails with SLUICE_LOCKED, and so can never take a lost lock over.
   */
  oneProcess: boolean;
  /** Longest name it keeps whole, in UTF-8 bytes (PostgreSQL: 63). */
  maxIdentifierBytes: number;
  /** The type it declares for sluice's integer columns, as `columns` reports it. */
  integerType: string;
  all<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  one<T = Record<string, unknown>>(sql: string): Promise<T>;
  /** Runs statements over a writable connection of the test's own. */
  exec(...statements: string[]): Promise<void>;
  /** A table's columns and their declared types (lower case), in order. */
  columns(table: string): Promise<{ name: string; type: string }[]>;
  /** The names of a table's indexes, sorted. */
  indexes(table: string): Promise<string[]>;
  tables(prefix: string): Promise<string[]>;
  dispose(): Promise<void>;
}

export function destinationKinds(): Kind[] {
  const list = (process.env.SLUICE_TEST_DESTINATIONS ?? KINDS.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const kind of list) {
    if (!KINDS.includes(kind as Kind)) throw new Error(`unknown destination kind '${kind}'`);
  }
  return list as Kind[];
}

/** Why a kind cannot run here (PostgreSQL unreachable outside CI), or undefined. */
export async function skipReason(kind: Kind): Promise<string | undefined> {
  return kind === 'postgres' ? postgresSkipReason() : undefined;
}

const INT8 = 20;
const NUMERIC = 1700;
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 || oid === NUMERIC
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
};

/**
 * Opens fresh targets of `kind` under `dir()` for one suite, and disposes of them after it
 * (PostgreSQL schemas are dropped). Call it where the suite is declared.
 */
export function targetFactory(
  kind: Kind,
  dir: () => string,
): (name: string) => Promise<TestTarget> {
  const targets: TestTarget[] = [];
  after(async () => {
    for (const t of targets) await t.dispose();
  });
  return async (name) => {
    const t = await openTarget(kind, dir(), name);
    targets.push(t);
    return t;
  };
}

export async function openTarget(kind: Kind, dir: string, name: string): Promise<TestTarget> {
  const q = (text: string) => text.replaceAll("'", "''");
  if (kind === 'sqlite') {
    const file = join(dir, `${name}.sqlite`);
    const all = async <T>(sql: string): Promise<T[]> => {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        return db.prepare(sql).all() as T[];
      } finally {
        db.close();
      }
    };
    return {
      kind,
      destinationYaml: `sqlite:${file}`,
      url: `sqlite:${file}`,
      file,
      writersAtOnce: 1,
      oneProcess: false,
      maxIdentifierBytes: Number.POSITIVE_INFINITY,
      integerType: 'integer',
      all,
      one: async <T>(sql: string) => first(await all<T>(sql), sql),
      exec: async (...statements) => {
        const db = new Database(file);
        try {
          for (const statement of statements) db.exec(statement);
        } finally {
          db.close();
        }
      },
      columns: async (table) =>
        (
          await all<{ name: string; type: string }>(
            `select name, type from pragma_table_info('${q(table)}')`,
          )
        ).map((c) => ({ name: c.name, type: c.type.toLowerCase() })),
      indexes: async (table) =>
        (
          await all<{ name: string }>(
            `select name from sqlite_master where type = 'index' and tbl_name = '${q(table)}' order by name`,
          )
        ).map((i) => i.name),
      tables: async (prefix) =>
        (
          await all<{ name: string }>(
            `select name from sqlite_master where type = 'table' and name like '${prefix}%' order by name`,
          )
        ).map((t) => t.name),
      dispose: async () => {},
    };
  }
  if (kind === 'duckdb') {
    const file = join(dir, `${name}.duckdb`);
    const all = <T>(sql: string) => queryDuckDb<T>(file, sql);
    return {
      kind,
      destinationYaml: `duckdb:${file}`,
      url: `duckdb:${file}`,
      file,
      writersAtOnce: 1,
      oneProcess: true,
      maxIdentifierBytes: Number.POSITIVE_INFINITY,
      integerType: 'bigint',
      all,
      one: async <T>(sql: string) => first(await all<T>(sql), sql),
      exec: (...statements) => execDuckDb(file, statements),
      columns: async (table) =>
        (
          await all<{ name: string; type: string }>(
            `select column_name as name, data_type as type from information_schema.columns where table_name = '${q(table)}' order by ordinal_position`,
          )
        ).map((c) => ({ name: c.name, type: c.type.toLowerCase() })),
      indexes: async (table) =>
        (
          await all<{ name: string }>(
            `select index_name as name from duckdb_indexes() where table_name = '${q(table)}' order by 1`,
          )
        ).map((i) => i.name),
      tables: async (prefix) =>
        (
          await all<{ name: string }>(
            `select table_name as name from information_schema.tables where table_name like '${prefix}%' order by 1`,
          )
        ).map((t) => t.name),
      dispose: async () => {},
    };
  }
  const schema = randomSchemaName(`e2e_${name.replace(/\W/g, '_')}`.slice(0, 30));
  const all = async <T>(sql: string): Promise<T[]> => {
    const client = new pg.Client({ connectionString: postgresUrl(), types: pgTypes });
    client.on('error', () => {});
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(`SET search_path TO "${schema}"`);
      return (await client.query(sql)).rows as T[];
    } finally {
      await client.end();
    }
  };
  return {
    kind,
    destinationYaml: `{ url: '${postgresUrl()}', schema: ${schema} }`,
    url: postgresUrl(),
    schema,
    writersAtOnce: 4,
    oneProcess: false,
    maxIdentifierBytes: 63,
    integerType: 'bigint',
    all,
    one: async <T>(sql: string) => first(await all<T>(sql), sql),
    exec: async (...statements) => {
      for (const statement of statements) await all(statement);
    },
    columns: async (table) =>
      all<{ name: string; type: string }>(
        `select column_name as name, data_type as type from information_schema.columns where table_schema = '${schema}' and table_name = '${q(table)}' order by ordinal_position`,
      ),
    indexes: async (table) =>
      (
        await all<{ name: string }>(
          `select indexname as name from pg_indexes where schemaname = '${schema}' and tablename = '${q(table)}' order by indexname`,
        )
      ).map((i) => i.name),
    tables: async (prefix) =>
      (
        await all<{ name: string }>(
          `select table_name as name from information_schema.tables where table_schema = '${schema}' and table_name like '${prefix}%' order by table_name`,
        )
      ).map((t) => t.name),
    dispose: () => dropSchema(schema),
  };
}

function first<T>(rows: T[], sql: string): T {
  const [row] = rows;
  if (row === undefined) throw new Error(`no row from: ${sql}`);
  return row;
}
