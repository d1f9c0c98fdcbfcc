import { UsageError } from '../errors.js';
import type { Destination } from './destination.js';
import { openSqliteDestination } from './sqlite/sqlite-destination.js';

export interface OpenDestinationOptions {
  /** PostgreSQL schema for the tables (default `public`). */
  schema?: string;
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
    const { openPostgresDestination } = await import('./postgres/postgres-destination.js');
    return openPostgresDestination(url, options);
  }
  const path = sqlitePath(url);
  if (path === undefined) {
    throw new UsageError(
      `destination '${url}' is not understood: use sqlite:PATH (e.g. sqlite:data/out.sqlite) or postgres://USER@HOST:PORT/DB`,
    );
  }
  return openSqliteDestination(path);
}

export function sqlitePath(url: string): string | undefined {
  if (url.startsWith('sqlite://')) return url.slice('sqlite://'.length) || undefined;
  if (url.startsWith('sqlite:')) return url.slice('sqlite:'.length) || undefined;
  if (/\.(sqlite3?|db)$/.test(url) && !url.includes('://')) return url;
  return undefined;
}
