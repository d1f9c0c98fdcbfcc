import { dirname } from 'node:path';
import { type ErrorCode, SluiceError } from '../../errors.js';
import { cantOpenReason } from '../core/file-database.js';
import { DestinationError } from '../errors.js';

/** A better-sqlite3 or file-system error as a DestinationError saying what to do. */
export function translateSqliteError(
  error: unknown,
  path: string,
  busyTimeoutMs = 10_000,
): unknown {
  if (error instanceof SluiceError || !(error instanceof Error)) return error;
  const code = (error as { code?: string }).code ?? '';
  const fail = (message: string, sluiceCode: ErrorCode) =>
    new DestinationError(message, sluiceCode, error);
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return fail(
      `the SQLite database ${path} is locked by another program (it kept it busy past the ${busyTimeoutMs / 1000} s timeout); try again when that program is done`,
      'SLUICE_DESTINATION_BUSY',
    );
  }
  if (code.startsWith('SQLITE_READONLY')) {
    return fail(
      `the SQLite database ${path} is read-only: check the permissions of the file and of its folder`,
      'SLUICE_DESTINATION_UNUSABLE',
    );
  }
  if (code === 'SQLITE_NOTADB') {
    return fail(`${path} is not an SQLite database`, 'SLUICE_DESTINATION_UNUSABLE');
  }
  if (code.startsWith('SQLITE_CORRUPT')) {
    return fail(
      `the SQLite database ${path} is damaged (${error.message})`,
      'SLUICE_DESTINATION_UNUSABLE',
    );
  }
  if (code.startsWith('SQLITE_CANTOPEN')) {
    return fail(
      `cannot open the SQLite database ${path}: ${cantOpenReason(path)}`,
      'SLUICE_DESTINATION_UNUSABLE',
    );
  }
  if (code === 'SQLITE_FULL') {
    return fail(
      `the disk holding the SQLite database ${path} is full: free some space and run again`,
      'SLUICE_DISK_FULL',
    );
  }
  if (code.startsWith('SQLITE_CONSTRAINT')) {
    return fail(`${path}: ${error.message}`, 'SLUICE_DESTINATION_DATA');
  }
  if (code === 'SQLITE_TOOBIG' || /too many columns/i.test(error.message)) {
    return fail(`${path}: ${error.message}`, 'SLUICE_DESTINATION_LIMIT');
  }
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return fail(
      `cannot write to ${dirname(path)}: permission denied (the SQLite database ${path} needs a folder sluice can write to)`,
      'SLUICE_DESTINATION_UNUSABLE',
    );
  }
  if (code === 'ENOTDIR' || code === 'EEXIST') {
    return fail(
      `cannot create the folder of ${path}: a file is in its way`,
      'SLUICE_DESTINATION_UNUSABLE',
    );
  }
  if (code.startsWith('SQLITE_')) {
    return fail(`the SQLite database ${path}: ${error.message}`, 'SLUICE_DESTINATION');
  }
  return error;
}
