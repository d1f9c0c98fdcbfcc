import { type ErrorCode, SluiceError } from '../../errors.js';
import { cantOpenReason } from '../core/file-database.js';
import { DestinationError } from '../errors.js';

/**
 * A DuckDB or file-system error as a DestinationError saying what to do. DuckDB names its
 * errors in the message (`Conversion Error: ...`, `IO Error: ...`), not in a code.
 */
export function translateDuckDbError(error: unknown, path: string): unknown {
  if (error instanceof SluiceError || !(error instanceof Error)) return error;
  const message = error.message;
  const code = (error as { code?: string }).code ?? '';
  const fail = (text: string, sluiceCode: ErrorCode) =>
    new DestinationError(text, sluiceCode, error);
  const first = message.split('\n')[0]!;
  if (/Could not set lock on file|Conflicting lock is held/i.test(message)) {
    const holder = /Conflicting lock is held in (.*?) \(PID (\d+)\)/.exec(message);
    return fail(
      `the DuckDB database ${path} is open in another process${holder ? ` (${holder[1]}, PID ${holder[2]})` : ''}: DuckDB lets one process at a time write to a file; wait for it to end (run with --wait), or close it`,
      'SLUICE_LOCKED',
    );
  }
  if (/Conflict on (update|tuple)/i.test(first)) {
    return fail(
      `the DuckDB database ${path}: another transaction of this process is changing the same rows (${first})`,
      'SLUICE_DESTINATION_BUSY',
    );
  }
  if (/CSV Error/i.test(message)) {
    return fail(`the DuckDB database ${path}: ${first}`, 'SLUICE_DESTINATION');
  }
  if (/^(Conversion|Invalid Input) Error/.test(first) && !/transaction/i.test(first)) {
    return fail(first.replace(/^[A-Za-z ]+ Error: /, ''), 'SLUICE_DESTINATION_VALUE');
  }
  if (/No space left on device|disk is full/i.test(message) || code === 'ENOSPC') {
    return fail(
      `the disk holding the DuckDB database ${path} (or its temporary files) is full: free some space and run again`,
      'SLUICE_DISK_FULL',
    );
  }
  if (/Constraint Error/.test(first)) {
    return fail(`${path}: ${first}`, 'SLUICE_DESTINATION_DATA');
  }
  if (/Dependency Error/.test(first)) {
    return fail(
      `${path}: ${first} (a view or index of your own depends on a table or column sluice must change: drop it, run, and make it again)`,
      'SLUICE_DESTINATION_DEPENDENT',
    );
  }
  if (/Out of Memory Error/.test(first)) {
    return fail(`the DuckDB database ${path}: ${first}`, 'SLUICE_DESTINATION_LIMIT');
  }
  if (
    /not a valid DuckDB database file|is not a DuckDB database|Serialization Error/i.test(message)
  ) {
    return fail(
      `${path} is not a DuckDB database (or one of a newer DuckDB)`,
      'SLUICE_DESTINATION_UNUSABLE',
    );
  }
  if (
    /read-only|Permission denied|Cannot open file/i.test(message) ||
    code === 'EACCES' ||
    code === 'EPERM' ||
    code === 'EROFS'
  ) {
    return fail(
      `cannot open the DuckDB database ${path}: ${cantOpenReason(path)}`,
      'SLUICE_DESTINATION_UNUSABLE',
    );
  }
  if (code === 'ENOTDIR' || code === 'EEXIST') {
    return fail(
      `cannot create the folder of ${path}: a file is in its way`,
      'SLUICE_DESTINATION_UNUSABLE',
    );
  }
  if (/ Error: /.test(first)) {
    return fail(`the DuckDB database ${path}: ${first}`, 'SLUICE_DESTINATION');
  }
  return error;
}
