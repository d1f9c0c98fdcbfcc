/**
 * The destinations the end-to-end tests run on, chosen by `SLUICE_TEST_DESTINATIONS` (default
 * `sqlite,postgres`). Each test gets a fresh target: a new SQLite file, or a new PostgreSQL
 * schema dropped afterwards. Rows are read back with a separate connection, as an analyst would.
 */
import { join } from 'node:path';
import { after } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { dropSchema, postgresSkipReason, postgresUrl, randomSchemaName } from './postgres.js';

export type Kind = 'sqlite' | 'postgres';

export interface TestTarget {
  kind: Kind;
  /** The `destination:` value for a pipeline file. */
  destinationYaml: string;
  /** What `openDestination(url, { schema })` takes to open the same destination in a test. */
  url: string;
  schema?: string;
  all<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  one<T = Record<string, unknown>>(sql: string): Promise<T>;
  tables(prefix: string): Promise<string[]>;
  dispose(): Promise<void>;
}

export function destinationKinds(): Kind[] {
  const list = (process.env.SLUICE_TEST_DESTINATIONS ?? 'sqlite,postgres')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const kind of list) {
    if (kind !== 'sqlite' && kind !== 'postgres')
      throw new Error(`unknown destination kind '${kind}'`);
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
      all,
      one: async <T>(sql: string) => first(await all<T>(sql), sql),
      tables: async (prefix) =>
        (
          await all<{ name: string }>(
            `select name from sqlite_master where type = 'table' and name like '${prefix}%' order by name`,
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
    all,
    one: async <T>(sql: string) => first(await all<T>(sql), sql),
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
