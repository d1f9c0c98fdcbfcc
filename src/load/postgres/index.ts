import type { DestinationCapabilities } from '../destination.js';
import type { DestinationEntry } from '../entry.js';

const CAPABILITIES: DestinationCapabilities = {
  maxIdentifierBytes: 63,
  maxColumns: 1600,
  alterColumnType: 'in-place',
  concurrentWriters: 4,
  rowEncoding: 'copy-text',
  // Each write is round trips to the server, which larger batches spread over more rows, at the
  // cost of more held in the parse workers at once. A merge writes each batch through a staging
  // table: an NDJSON merge pays for smaller blocks, a CSV one (bound by csv-parse) does not
  // (docs/speed.md has the figures).
  batchBytes: { appends: 512 << 10, merges: { csv: 512 << 10, json: 768 << 10 } },
};

/** Its own options (kysely's dialect config): read from the pipeline file's settings. */
export interface PostgresOptions {
  /** The schema of the tables (default `public`). */
  schema?: string;
}

/**
 * PostgreSQL through `pg`: `postgres://...` or `postgresql://...`, with an optional schema.
 * Rows go in through COPY FROM STDIN; every table lives in the destination's schema, with
 * `search_path` set to it and `TimeZone` to UTC on each connection.
 */
export const postgres: DestinationEntry<PostgresOptions> = {
  name: 'postgres',
  displayName: 'PostgreSQL',
  example: 'postgres://USER@HOST:PORT/DB',
  capabilities: CAPABILITIES,
  matches: (url) => /^postgres(?:ql)?:\/\//.test(url),
  // Its catalogue (pg_class, ...), found before a table of the same name.
  reservedPrefixes: [['pg_', 'keeps names beginning pg_ for its catalogue']],
  identity(url, { settings }) {
    const schema = typeof settings.schema === 'string' ? settings.schema : 'public';
    try {
      const { hostname, port, pathname } = new URL(url);
      return `postgres://${hostname}:${port || '5432'}${pathname} (schema ${schema})`;
    } catch {
      return `${url} (schema ${schema})`;
    }
  },
  async typeNames() {
    return (await import('./types.js')).PG_TYPE;
  },
  settings: {
    schema: {
      describe: 'the schema of the tables (default public)',
      problem: (value) =>
        typeof value === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(value) && value.length <= 63
          ? undefined
          : 'expected a name of letters, digits and underscores, not starting with a digit (at most 63)',
    },
  },
  options: (settings) => (typeof settings.schema === 'string' ? { schema: settings.schema } : {}),
  async connect(url, options, own) {
    const [
      { openPostgres, PostgresConnection },
      { PostgresSchema },
      { PostgresWriter },
      { translatePostgresError },
      { scrub },
    ] = await Promise.all([
      import('./connection.js'),
      import('./schema.js'),
      import('./writer.js'),
      import('./errors.js'),
      import('../errors.js'),
    ]);
    const session = await openPostgres(url, {
      ...own,
      ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      connections: CAPABILITIES.concurrentWriters + 2,
    });
    return {
      description: session.description,
      readOnly: session.readOnly,
      db: session.db,
      connection: new PostgresConnection(session),
      schema: new PostgresSchema(session),
      writer: new PostgresWriter(session),
      translate: (error) =>
        translatePostgresError(scrub(error, session.secrets), session.description),
    };
  },
  testTargets: () => import('./test-target.js').then((m) => m.postgresTargets),
};
