import { type ErrorCode, SluiceError } from '../../errors.js';
import { DestinationError } from '../errors.js';

/** How long a statement may wait for a lock another session holds before it fails clearly. */
export const LOCK_TIMEOUT = '60s';

export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && (/^(08|57P0)/.test(code) || /^E[A-Z]+$/.test(code))) return true;
  return (
    error instanceof Error &&
    /Connection terminated|connection.*(closed|ended)|connection error|not queryable/i.test(
      error.message,
    )
  );
}

const NETWORK = /^(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH|EAI_AGAIN|ECONNRESET|EPIPE)$/;

/**
 * A `pg` error as a DestinationError by its SQLSTATE, saying what to do. Over 80 lines: one branch
 * per SQLSTATE class with its own advice, read as a table.
 */
export function translatePostgresError(error: unknown, where: string): unknown {
  if (error instanceof SluiceError || !(error instanceof Error)) return error;
  const code = String((error as { code?: unknown }).code ?? '');
  const said = error.message;
  const fail = (message: string, sluiceCode: ErrorCode) =>
    new DestinationError(message, sluiceCode, error);
  if (/does not support SSL/i.test(said)) {
    return fail(
      `PostgreSQL at ${where} does not accept TLS connections, and the URL asks for one (sslmode=require or verify-*): remove sslmode, or use sslmode=prefer, or turn TLS on in the server`,
      'SLUICE_DESTINATION_TLS',
    );
  }
  if (
    /self[- ]signed certificate|unable to verify|certificate|Hostname\/IP does not match/i.test(
      said,
    ) &&
    /^(DEPTH_ZERO|SELF_SIGNED|UNABLE_TO|ERR_TLS|CERT_)/.test(code)
  ) {
    return fail(
      `PostgreSQL at ${where}: its TLS certificate was refused (${said}): give sslrootcert, or use sslmode=require to encrypt without checking it`,
      'SLUICE_DESTINATION_TLS',
    );
  }
  if (NETWORK.test(code)) {
    return fail(`cannot reach PostgreSQL at ${where}: ${said}`, 'SLUICE_DESTINATION_UNREACHABLE');
  }
  if (code === '28P01' || code === '28000') {
    return fail(`PostgreSQL refused the login at ${where}: ${said}`, 'SLUICE_DESTINATION_AUTH');
  }
  if (code === '42501') {
    return fail(
      `PostgreSQL at ${where}: ${said} (grant sluice's role the rights it needs)`,
      'SLUICE_DESTINATION_AUTH',
    );
  }
  if (code === '3D000' || code === '3F000') {
    return fail(`PostgreSQL at ${where}: ${said}`, 'SLUICE_DESTINATION_MISSING');
  }
  if (code === '40P01' || code === '40001' || code === '42P07' || code === '42701') {
    return fail(`PostgreSQL at ${where}: ${said}`, 'SLUICE_DESTINATION_CONFLICT');
  }
  if (
    code === '23505' &&
    /pg_type|pg_class|pg_namespace/.test(
      said + String((error as { constraint?: unknown }).constraint),
    )
  ) {
    return fail(`PostgreSQL at ${where}: ${said}`, 'SLUICE_DESTINATION_CONFLICT');
  }
  if (code === '55P03') {
    return fail(
      `PostgreSQL at ${where}: waited ${LOCK_TIMEOUT} for a lock another session holds (${said}); try again when it is released`,
      'SLUICE_DESTINATION_BUSY',
    );
  }
  if (code === '57014') {
    return fail(
      `PostgreSQL at ${where} cancelled a statement (${said}): a statement_timeout set for sluice's role or database is too short for this load; raise it`,
      'SLUICE_DESTINATION_BUSY',
    );
  }
  if (
    code === '25P03' ||
    code.startsWith('08') ||
    code.startsWith('57P') ||
    isConnectionError(error)
  ) {
    return fail(
      `the connection to PostgreSQL at ${where} broke: ${said}`,
      'SLUICE_DESTINATION_CONNECTION',
    );
  }
  if (code === '53100') {
    return fail(
      `PostgreSQL at ${where}: its disk is full (${said}); free some space and run again`,
      'SLUICE_DISK_FULL',
    );
  }
  if (code === '53200' || code === '53300' || code === '53400') {
    return fail(`PostgreSQL at ${where} is short of resources: ${said}`, 'SLUICE_DESTINATION_BUSY');
  }
  if (code === '54011' || code === '54000') {
    return fail(`PostgreSQL at ${where}: ${said}`, 'SLUICE_DESTINATION_LIMIT');
  }
  if (code.startsWith('22')) {
    return fail(`PostgreSQL refused a value: ${said}`, 'SLUICE_DESTINATION_VALUE');
  }
  if (code === '0A000' && /used by a view or rule/.test(said)) {
    return fail(
      `PostgreSQL at ${where}: ${said}: a column must widen (the data no longer fits its type), and a view depends on it; drop the view, run again, then create the view again`,
      'SLUICE_DESTINATION_DEPENDENT',
    );
  }
  if (code === '2BP01') {
    return fail(
      `PostgreSQL at ${where}: ${said}: a replace swaps the table for a new one, and views depend on it; drop them before the run and create them after, or use write: merge`,
      'SLUICE_DESTINATION_DEPENDENT',
    );
  }
  if (code === '23505' || code.startsWith('23')) {
    return fail(`PostgreSQL at ${where}: ${said}`, 'SLUICE_DESTINATION_DATA');
  }
  if (code === '25006') {
    return fail(`PostgreSQL at ${where} is read-only here: ${said}`, 'SLUICE_READ_ONLY');
  }
  if (/^[0-9A-Z]{5}$/.test(code)) {
    return fail(`PostgreSQL at ${where}: ${said}`, 'SLUICE_DESTINATION');
  }
  return error;
}
