import type pg from 'pg';
import { SluiceError } from '../../errors.js';
import { quoteIdent } from '../dialect.js';
import { LOCK_TIMEOUT } from './postgres-errors.js';

/** The URL without its password (user info and `password=` query parameter). */
export function redact(url: string): { description: string; secrets: string[] } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SluiceError(
      'invalid PostgreSQL URL (expected postgresql://user@host:port/database)',
      { code: 'SLUICE_USAGE' },
    );
  }
  const secrets: string[] = [];
  if (parsed.password) {
    secrets.push(parsed.password);
    try {
      secrets.push(decodeURIComponent(parsed.password));
    } catch {
      // keep the encoded form only
    }
    parsed.password = '';
  }
  const queryPassword = parsed.searchParams.get('password');
  if (queryPassword) {
    secrets.push(queryPassword);
    parsed.searchParams.delete('password');
  }
  return { description: parsed.toString(), secrets: secrets.filter((s) => s.length > 0) };
}

/**
 * The pool's connection settings. Session settings go in each connection's startup packet, so
 * every pooled connection has them before its first query: `search_path` to the schema (then
 * public), `TimeZone` to UTC, a lock timeout, and for a read-only look, read-only transactions.
 * `options` already in the URL are kept, after these, so that they win (e.g. a shorter
 * `lock_timeout`). Connections name themselves `sluice`, for pg_stat_activity.
 */
export function connectionConfig(url: string, schema: string, readOnly: boolean): pg.PoolConfig {
  // In the startup options, a backslash escapes a space or a backslash inside one value.
  const path = `${quoteIdent(schema)},public`.replace(/[\\ ]/g, '\\$&');
  let ours = `-c search_path=${path} -c TimeZone=UTC -c lock_timeout=${LOCK_TIMEOUT}`;
  if (readOnly) ours += ' -c default_transaction_read_only=on';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL; pg reports it when connecting.
    return { connectionString: url, options: ours, application_name: 'sluice' };
  }
  const inUrl = parsed.searchParams.get('options');
  parsed.searchParams.delete('options');
  return {
    connectionString: parsed.toString(),
    options: inUrl ? `${ours} ${inUrl}` : ours,
    application_name: parsed.searchParams.get('application_name') ?? 'sluice',
  };
}
