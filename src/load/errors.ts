import { type ErrorCode, SluiceError } from '../errors.js';

/**
 * What went wrong in a destination, in terms a user can act on. The codes:
 *
 * - `SLUICE_DESTINATION_UNREACHABLE`: the server does not answer (retry later)
 * - `SLUICE_DESTINATION_AUTH`: wrong password or role, or not allowed (fix the settings)
 * - `SLUICE_DESTINATION_MISSING`: no such database, file or directory (fix the settings)
 * - `SLUICE_DESTINATION_UNUSABLE`: not a database, read-only, a directory (fix the path)
 * - `SLUICE_DESTINATION_BUSY`: locked by another program, a lock or statement timeout (retry)
 * - `SLUICE_DESTINATION_CONFLICT`: a deadlock or serialization failure (retried by the load)
 * - `SLUICE_DESTINATION_LIMIT`: beyond what the database can hold (too many columns, ...)
 * - `SLUICE_DESTINATION_DATA`: the data cannot be written as it is (duplicate merge keys, ...)
 * - `SLUICE_DESTINATION_CONNECTION`: the connection broke mid-work (retry)
 * - `SLUICE_NO_STATE`: a read-only look found no state tables
 * - `SLUICE_STATE_VERSION`: state tables of a newer sluice
 * - `SLUICE_DESTINATION`: anything else the database refused
 */
export class DestinationError extends SluiceError {
  constructor(message: string, code: ErrorCode, cause?: unknown) {
    super(message, { code, cause });
    this.name = 'DestinationError';
  }
}

/** The error, with every occurrence of a secret replaced by `***` (message, stack, fields). */
export function scrub(error: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0 || !(error instanceof Error)) return error;
  const clean = (text: string) => secrets.reduce((t, s) => t.split(s).join('***'), text);
  error.message = clean(error.message);
  if (error.stack) error.stack = clean(error.stack);
  const record = error as unknown as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const value = record[key];
    if (typeof value === 'string' && secrets.some((s) => value.includes(s)))
      record[key] = clean(value);
  }
  if (error.cause !== undefined) scrub(error.cause, secrets);
  return error;
}

/**
 * Runs `work` with its driver errors thrown as a dialect's `translate` makes them, so that what
 * leaves a destination is a DestinationError a user can act on (or sluice's own error).
 */
export async function translating<T>(
  dialect: { translate(error: unknown): unknown },
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw dialect.translate(error);
  }
}
