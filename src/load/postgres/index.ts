import type { Destination, DestinationCapabilities, DestinationEntry } from '../destination.js';

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

/**
 * PostgreSQL through `pg`: `postgres://...` or `postgresql://...`, with an optional schema.
 * Rows go in through COPY FROM STDIN; every table lives in the destination's schema, with
 * `search_path` set to it and `TimeZone` to UTC on each connection.
 */
export const postgres: DestinationEntry = {
  name: 'postgres',
  displayName: 'PostgreSQL',
  example: 'postgres://USER@HOST:PORT/DB',
  matches: (url) => /^postgres(?:ql)?:\/\//.test(url),
  // Its catalogue (pg_class, ...), found before a table of the same name.
  reservedPrefixes: [['pg_', 'keeps names beginning pg_ for its catalogue']],
  identity(url) {
    try {
      const { hostname, port, pathname } = new URL(url);
      return `postgres://${hostname}:${port || '5432'}${pathname}`;
    } catch {
      return url;
    }
  },
  async typeNames() {
    return (await import('./types.js')).PG_TYPE;
  },
  async open(url, options): Promise<Destination> {
    const [
      { openPostgres, PostgresConnection },
      { PostgresSchema },
      { PostgresWriter },
      { translatePostgresError },
      { scrub },
      { Loader },
    ] = await Promise.all([
      import('./connection.js'),
      import('./schema.js'),
      import('./writer.js'),
      import('./errors.js'),
      import('../errors.js'),
      import('../loader.js'),
    ]);
    const session = await openPostgres(url, {
      ...(options.schema === undefined ? {} : { schema: options.schema }),
      ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      connections: CAPABILITIES.concurrentWriters + 2,
    });
    return new Loader(
      {
        name: 'postgres',
        displayName: 'PostgreSQL',
        description: session.description,
        capabilities: CAPABILITIES,
        readOnly: session.readOnly,
        db: session.db,
        connection: new PostgresConnection(session),
        schema: new PostgresSchema(session),
        writer: new PostgresWriter(session),
        translate: (error) =>
          translatePostgresError(scrub(error, session.secrets), session.description),
      },
      options.naming,
    );
  },
};
