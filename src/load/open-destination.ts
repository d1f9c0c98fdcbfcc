import { isAbsolute, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Destination } from './destination.js';
import { openSqliteDestination } from './sqlite/sqlite-dialect.js';

export interface OpenDestinationOptions {
  /** PostgreSQL schema for the tables (default `public`). */
  schema?: string;
  /** Open for reading only: create nothing, write nothing (`sluice status`). */
  readOnly?: boolean;
  /** Where a relative `sqlite:` path starts from (default: the working directory). */
  baseDir?: string;
  /** SQLite: how long to wait for another program's lock (default 10 s). */
  busyTimeoutMs?: number;
  /** Stops a statement that waits (PostgreSQL: on another session's lock). */
  signal?: AbortSignal;
  /** Where waits on other sessions' locks are reported. */
  logger?: Logger;
}

/**
 * Opens a destination from its URL: `sqlite:PATH` (or a path ending in .sqlite/.db) or
 * `postgres://...` / `postgresql://...`.
 */
export async function openDestination(
  url: string,
  options: OpenDestinationOptions = {},
): Promise<Destination> {
  if (/^postgres(?:ql)?:\/\//.test(url)) {
    const { openPostgresDestination } = await import('./postgres/postgres-dialect.js');
    return openPostgresDestination(url, {
      ...(options.schema === undefined ? {} : { schema: options.schema }),
      ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    });
  }
  const path = sqlitePath(url, options.baseDir);
  if (path === undefined) {
    throw new UsageError(
      `destination '${url}' is not understood: use sqlite:PATH (e.g. sqlite:data/out.sqlite) or postgres://USER@HOST:PORT/DB`,
    );
  }
  return openSqliteDestination(path, {
    readOnly: options.readOnly === true,
    ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
  });
}

/** The absolute path of a `sqlite:` URL, relative paths taken from `baseDir`. */
export function sqlitePath(url: string, baseDir = process.cwd()): string | undefined {
  let path: string | undefined;
  if (url.startsWith('sqlite://')) path = url.slice('sqlite://'.length);
  else if (url.startsWith('sqlite:')) path = url.slice('sqlite:'.length);
  else if (/\.(sqlite3?|db)$/.test(url) && !url.includes('://')) path = url;
  if (!path) return undefined;
  if (path === ':memory:' || isAbsolute(path)) return path;
  return resolve(baseDir, path);
}
