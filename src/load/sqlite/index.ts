import { fileDatabasePath } from '../core/file-database.js';
import type { DestinationCapabilities } from '../destination.js';
import type { DestinationEntry } from '../entry.js';

const CAPABILITIES: DestinationCapabilities = {
  maxIdentifierBytes: Number.POSITIVE_INFINITY,
  maxColumns: 2000,
  alterColumnType: 'rebuild',
  concurrentWriters: 1,
  rowEncoding: 'values',
  // A write costs little, and small batches keep the parsers' garbage young.
  batchBytes: { appends: 64 << 10, merges: { csv: 64 << 10, json: 64 << 10 } },
};

/** Its own options (kysely's dialect config): read from the environment. */
export interface SqliteOptions {
  /** How long a statement waits for another program's lock on the file (default 10 s). */
  busyTimeoutMs?: number;
}

const BUSY_TIMEOUT = 'SLUICE_SQLITE_BUSY_TIMEOUT_MS';

/**
 * The embedded default: one SQLite file through better-sqlite3, in WAL mode so that analysts can
 * read while a run loads. `sqlite:PATH`, or a path ending in .sqlite, .sqlite3 or .db; a relative
 * path starts at the pipeline file's folder.
 */
export const sqlite: DestinationEntry<SqliteOptions> = {
  name: 'sqlite',
  displayName: 'SQLite',
  example: 'sqlite:PATH (e.g. sqlite:data/out.sqlite)',
  capabilities: CAPABILITIES,
  matches: (url) => sqlitePath(url) !== undefined,
  // Its own tables: sqlite_master, sqlite_stat1, ...
  reservedPrefixes: [['sqlite_', 'keeps names beginning sqlite_ for itself']],
  identity: (url, options) => sqlitePath(url, options.baseDir) ?? url,
  async typeNames() {
    return (await import('./types.js')).DECLARED;
  },
  environment: {
    [BUSY_TIMEOUT]: "milliseconds a statement waits for another program's lock (default 10000)",
  },
  options(_settings, env) {
    const busy = Number(env[BUSY_TIMEOUT] || Number.NaN);
    return Number.isInteger(busy) && busy >= 0 ? { busyTimeoutMs: busy } : {};
  },
  async connect(url, options, own) {
    const [
      { openSqlite, SqliteConnection },
      { SqliteSchema },
      { SqliteWriter },
      { translateSqliteError },
    ] = await Promise.all([
      import('./connection.js'),
      import('./schema.js'),
      import('./writer.js'),
      import('./errors.js'),
    ]);
    const path = sqlitePath(url, options.baseDir)!;
    const session = openSqlite(path, { readOnly: options.readOnly === true, ...own });
    return {
      description: session.description,
      readOnly: session.readOnly,
      db: session.db,
      connection: new SqliteConnection(session),
      schema: new SqliteSchema(session),
      writer: new SqliteWriter(session),
      translate: (error) => translateSqliteError(error, path, session.busyTimeoutMs),
    };
  },
  testTargets: () => import('./test-target.js').then((m) => m.sqliteTargets),
};

/** The absolute path of a `sqlite:` URL, relative paths taken from `baseDir`. */
function sqlitePath(url: string, baseDir?: string): string | undefined {
  return fileDatabasePath(url, 'sqlite', /\.(sqlite3?|db)$/, baseDir);
}
