import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { SluiceError } from '../../errors.js';
import { quoteIdent } from '../dialect.js';
import { LOCK_TIMEOUT } from './errors.js';

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
  const ssl = tlsOf(parsed);
  return {
    connectionString: parsed.toString(),
    options: inUrl ? `${ours} ${inUrl}` : ours,
    application_name: parsed.searchParams.get('application_name') ?? 'sluice',
    ...(ssl === undefined ? {} : { ssl }),
  };
}

/** What `sslmode` asks of a connection, as libpq reads it. */
export type TlsMode = 'disable' | 'allow' | 'prefer' | 'require' | 'verify-ca' | 'verify-full';

const TLS_MODES: readonly TlsMode[] = [
  'disable',
  'allow',
  'prefer',
  'require',
  'verify-ca',
  'verify-full',
];

/** The URL's `sslmode`, when it names one libpq knows. */
export function tlsModeOf(url: string): TlsMode | undefined {
  try {
    const mode = new URL(url).searchParams.get('sslmode');
    return TLS_MODES.find((m) => m === mode);
  } catch {
    return undefined;
  }
}

/**
 * The TLS settings of `sslmode` and its files, with libpq's meaning (`require` encrypts without
 * checking the certificate, `verify-ca` checks it against `sslrootcert`, `verify-full` the name
 * too), taken off the URL: `pg` reads `sslmode` its own way, which is not libpq's, and prints a
 * warning of several lines on stderr for it whatever the mode (a JSON log would break). `allow`
 * connects without TLS; `prefer` with it, or without when the server has none.
 */
function tlsOf(parsed: URL): pg.PoolConfig['ssl'] {
  const params = parsed.searchParams;
  const mode = params.get('sslmode');
  const file = (name: string) => {
    const path = params.get(name);
    params.delete(name);
    return path ? readFileSync(path, 'utf8') : undefined;
  };
  const ca = file('sslrootcert');
  const cert = file('sslcert');
  const key = file('sslkey');
  params.delete('sslmode');
  params.delete('uselibpqcompat');
  const files = { ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
  switch (mode) {
    case null:
      return Object.keys(files).length > 0 ? files : undefined;
    case 'disable':
    case 'allow':
      return false;
    case 'prefer':
      // TLS when the server has it (unchecked, as libpq); openPostgresDestination falls back to
      // a plain connection when it has not.
      return { ...files, rejectUnauthorized: false };
    case 'require':
      // libpq: with a root certificate, require checks it as verify-ca does.
      return ca
        ? { ...files, checkServerIdentity: () => undefined }
        : { ...files, rejectUnauthorized: false };
    case 'verify-ca':
      return { ...files, checkServerIdentity: () => undefined };
    case 'verify-full':
      return { ...files, rejectUnauthorized: true };
    default:
      throw new SluiceError(
        `sslmode=${mode} is not one of ${TLS_MODES.join(', ')} (as libpq reads them)`,
        { code: 'SLUICE_USAGE' },
      );
  }
}
