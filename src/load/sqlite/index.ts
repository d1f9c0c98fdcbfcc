import type { Destination, DestinationCapabilities, DestinationEntry } from '../destination.js';
import { fileDatabasePath } from '../file-database.js';

const CAPABILITIES: DestinationCapabilities = {
  maxIdentifierBytes: Number.POSITIVE_INFINITY,
  maxColumns: 2000,
  alterColumnType: 'rebuild',
  concurrentWriters: 1,
  rowEncoding: 'values',
  // A write costs little, and small batches keep the parsers' garbage young.
  batchBytes: { appends: 64 << 10, merges: { csv: 64 << 10, json: 64 << 10 } },
};

/**
 * The embedded default: one SQLite file through better-sqlite3, in WAL mode so that analysts can
 * read while a run loads. `sqlite:PATH`, or a path ending in .sqlite, .sqlite3 or .db; a relative
 * path starts at the pipeline file's folder.
 */
export const sqlite: DestinationEntry = {
  name: 'sqlite',
  displayName: 'SQLite',
  example: 'sqlite:PATH (e.g. sqlite:data/out.sqlite)',
  matches: (url) => sqlitePath(url) !== undefined,
  // Its own tables: sqlite_master, sqlite_stat1, ...
  reservedPrefixes: [['sqlite_', 'keeps names beginning sqlite_ for itself']],
  identity: (url, options) => sqlitePath(url, options.baseDir) ?? url,
  async typeNames() {
    return (await import('./types.js')).DECLARED;
  },
  async open(url, options): Promise<Destination> {
    const [
      { openSqlite, SqliteConnection },
      { SqliteSchema },
      { SqliteWriter },
      { translateSqliteError },
      { Loader },
    ] = await Promise.all([
      import('./connection.js'),
      import('./schema.js'),
      import('./writer.js'),
      import('./errors.js'),
      import('../loader.js'),
    ]);
    const path = sqlitePath(url, options.baseDir)!;
    const session = openSqlite(path, {
      readOnly: options.readOnly === true,
      ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
    });
    return new Loader(
      {
        name: 'sqlite',
        displayName: 'SQLite',
        description: session.description,
        capabilities: CAPABILITIES,
        readOnly: session.readOnly,
        db: session.db,
        connection: new SqliteConnection(session),
        schema: new SqliteSchema(session),
        writer: new SqliteWriter(session),
        translate: (error) => translateSqliteError(error, path, session.busyTimeoutMs),
      },
      options.naming,
    );
  },
};

/** The absolute path of a `sqlite:` URL, relative paths taken from `baseDir`. */
function sqlitePath(url: string, baseDir?: string): string | undefined {
  return fileDatabasePath(url, 'sqlite', /\.(sqlite3?|db)$/, baseDir);
}
