import { fileDatabasePath } from '../core/file-database.js';
import type { DestinationCapabilities } from '../destination.js';
import type { DestinationEntry } from '../entry.js';

const CAPABILITIES: DestinationCapabilities = {
  maxIdentifierBytes: Number.POSITIVE_INFINITY,
  maxColumns: 2000,
  alterColumnType: 'in-place',
  concurrentWriters: 1,
  rowEncoding: 'copy-text',
  // Each batch is a file DuckDB's reader opens and a statement it plans (about 10 ms for a wide
  // table's casts): 8 MiB batches (some 4,000 property records) spread that over many rows. At
  // 1 MiB a run spent a fifth more CPU; at 16 MiB no less than at 8, with 60 MB more memory.
  batchBytes: { appends: 8 << 20, merges: { csv: 8 << 20, json: 8 << 20 } },
  // DuckDB reads an NDJSON or CSV file itself where it gives sluice's rows exactly (read-file.ts), unless
  // SLUICE_DUCKDB_NATIVE=0 (`capabilitiesWith`): faster than decoding it (docs/speed.md).
  readsFiles: true,
};

/**
 * DuckDB, the analysts' columnar database, in one file through `@duckdb/node-api` (installed
 * on demand: see connection.ts). `duckdb:PATH`, or a path ending in .duckdb or .ddb; a relative
 * path starts at the pipeline file's folder. DuckDB lets one process at a time open a file for
 * writing: while a run loads, other programs read the file only after it ends.
 */
export const duckdb: DestinationEntry = {
  name: 'duckdb',
  displayName: 'DuckDB',
  example: 'duckdb:PATH (e.g. duckdb:data/out.duckdb)',
  capabilities: CAPABILITIES,
  environment: {
    SLUICE_DUCKDB_NATIVE:
      '0 to have sluice decode every result file, rather than DuckDB read it itself where that gives the same rows (the default)',
  },
  options: (_settings, env) => ({ native: env.SLUICE_DUCKDB_NATIVE !== '0' }),
  capabilitiesWith: (own: { native?: boolean }) => ({
    ...CAPABILITIES,
    readsFiles: own.native === true,
  }),
  matches: (url) => duckdbPath(url) !== undefined,
  // Its catalogue's own names (duckdb_tables(), ...), and its pg_catalog views' (pg_class, ...).
  reservedPrefixes: [
    ['duckdb_', 'keeps names beginning duckdb_ for its catalogue'],
    ['pg_', 'keeps names beginning pg_ for its PostgreSQL catalogue views'],
  ],
  identity: (url, options) => duckdbPath(url, options.baseDir) ?? url,
  async typeNames() {
    return (await import('./types.js')).DUCKDB_TYPE;
  },
  async connect(url, options, own: { native?: boolean }) {
    const [
      { openDuckDb, DuckDbConnection },
      { DuckDbSchema },
      { DuckDbWriter },
      { translateDuckDbError },
    ] = await Promise.all([
      import('./connection.js'),
      import('./schema.js'),
      import('./writer.js'),
      import('./errors.js'),
    ]);
    const path = duckdbPath(url, options.baseDir)!;
    const session = await openDuckDb(path, {
      readOnly: options.readOnly === true,
      ...(options.wait === undefined ? {} : { wait: options.wait }),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onWait ? { onWait: options.onWait } : {}),
    });
    if (own.native === true) session.growHeapWhileOpen();
    return {
      description: session.description,
      readOnly: session.readOnly,
      db: session.db,
      connection: new DuckDbConnection(session),
      schema: new DuckDbSchema(session),
      writer: new DuckDbWriter(session, own.native === true),
      translate: (error) => translateDuckDbError(error, path),
    };
  },
  testTargets: () => import('./test-target.js').then((m) => m.duckdbTargets),
};

/** The absolute path of a `duckdb:` URL, relative paths taken from `baseDir`. */
function duckdbPath(url: string, baseDir?: string): string | undefined {
  return fileDatabasePath(url, 'duckdb', /\.(duckdb|ddb)$/, baseDir);
}
