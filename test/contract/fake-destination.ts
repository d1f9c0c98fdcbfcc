/**
 * A destination that lives in the tests only, registered the way a plugin would be: one entry
 * (`registerDestination`) and one folder of parts, here borrowed from SQLite's (a file under a
 * scheme of its own, `fake:PATH`). It shows what adding a destination takes: nothing is edited in
 * `src/`; the contract suite, the pipeline file's checks and `runPipeline` take it like the
 * others.
 */
import { isAbsolute, resolve } from 'node:path';
import type { Destination, DestinationEntry } from '../../src/load/destination.js';
import { Loader } from '../../src/load/loader.js';
import { openSqlite, SqliteConnection } from '../../src/load/sqlite/connection.js';
import { translateSqliteError } from '../../src/load/sqlite/errors.js';
import { SqliteSchema } from '../../src/load/sqlite/schema.js';
import { SqliteWriter } from '../../src/load/sqlite/writer.js';

export const fake: DestinationEntry = {
  name: 'fake',
  displayName: 'FakeSQL',
  example: 'fake:PATH',
  matches: (url) => url.startsWith('fake:'),
  async open(url, options): Promise<Destination> {
    const given = url.slice('fake:'.length);
    const path = isAbsolute(given) ? given : resolve(options.baseDir ?? process.cwd(), given);
    const session = openSqlite(path, { readOnly: options.readOnly === true });
    return new Loader({
      name: 'fake',
      displayName: 'FakeSQL',
      description: `fake:${path}`,
      capabilities: {
        maxIdentifierBytes: 40,
        maxColumns: 2000,
        alterColumnType: 'rebuild',
        concurrentWriters: 1,
        rowEncoding: 'values',
        batchBytes: { appends: 32 << 10, merges: { csv: 32 << 10, json: 32 << 10 } },
      },
      readOnly: session.readOnly,
      db: session.db,
      connection: new SqliteConnection(session),
      schema: new SqliteSchema(session),
      writer: new SqliteWriter(session),
      translate: (error) => translateSqliteError(error, path, session.busyTimeoutMs),
    });
  },
};
