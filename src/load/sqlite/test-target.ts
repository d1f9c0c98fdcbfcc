import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { lockFileOf } from '../core/lock-file.js';
import type { TestTarget, TestTargets } from '../entry.js';

/**
 * SQLite for tests (see `DestinationEntry.testTargets`): a new file in the test's folder, read
 * back over a better-sqlite3 handle of the test's own. Also the parts of a test destination that
 * borrows SQLite's (`test/contract/fake/`): `sqliteTarget` under another scheme.
 */
export const sqliteTargets: TestTargets = {
  oneProcess: false,
  refusesValues: false,
  caseTwins: false,
  declared: {
    integer: 'integer',
    real: 'real',
    boolean: 'boolean',
    timestamp: 'timestamp',
    json: 'json',
    text: 'text',
  },
  skipReason: async () => undefined,
  fresh: async (dir, name) => sqliteTarget(join(dir, `${name}.sqlite`), 'sqlite'),
};

/** The SQLite file `file` as a test target, opened by `scheme:` URLs. */
export function sqliteTarget(file: string, scheme: string): TestTarget {
  const q = (text: string) => text.replaceAll("'", "''");
  const all = async <T>(sql: string): Promise<T[]> => {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return db.prepare(sql).all() as T[];
    } finally {
      db.close();
    }
  };
  return {
    url: `${scheme}:${file}`,
    settings: {},
    destinationYaml: `${scheme}:${file}`,
    file,
    all,
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
    // Those a statement made (not a key's own, which SQLite makes and names itself).
    indexes: async (table) =>
      (
        await all<{ name: string }>(
          `select name from sqlite_master where type = 'index' and tbl_name = '${q(table)}' and sql is not null order by name`,
        )
      ).map((i) => i.name),
    tables: async (prefix) =>
      (
        await all<{ name: string }>(
          `select name from sqlite_master where type = 'table' and name like '${q(prefix)}%' order by name`,
        )
      ).map((t) => t.name),
    breakLock: async (name) => rmSync(lockFileOf(file, name)),
    dispose: async () => {},
  };
}
