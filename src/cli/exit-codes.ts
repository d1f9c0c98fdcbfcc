import { CreditGuardError, QueryError, SluiceError } from '../errors.js';
import type { ErrorInfo, RunSummary } from '../pipeline/outcome.js';

/** Exit codes of the CLI, as the README documents them. */
export const EXIT = {
  ok: 0,
  /** Failed, and worth a retry (the service or the database failed, a timeout, a lock). */
  failed: 1,
  /** A mistake to fix: running again unchanged fails the same way. */
  invalidInput: 2,
  creditGuard: 3,
  interrupted: 130,
} as const;

/**
 * The one table that says what an error code means to a shell or an orchestrator. Codes not
 * listed are failures worth a retry (exit 1).
 */
const EXIT_OF_CODE: Record<string, number> = {
  SLUICE_SPEC: EXIT.invalidInput,
  SLUICE_USAGE: EXIT.invalidInput,
  SLUICE_USAGE_ARGUMENTS: EXIT.invalidInput,
  SLUICE_UNKNOWN_JOB: EXIT.invalidInput,
  SLUICE_QUERY: EXIT.invalidInput,
  SLUICE_QUERY_FIELD: EXIT.invalidInput,
  SLUICE_QUERY_SYNTAX: EXIT.invalidInput,
  SLUICE_QUERY_TOO_LONG: EXIT.invalidInput,
  SLUICE_CREDENTIALS: EXIT.invalidInput,
  SLUICE_UNSUPPORTED: EXIT.invalidInput,
  SLUICE_VIEW_FIELD: EXIT.invalidInput,
  SLUICE_TOO_MANY_REJECTS: EXIT.invalidInput,
  SLUICE_ALL_REJECTED: EXIT.invalidInput,
  SLUICE_JOB_CHANGED: EXIT.invalidInput,
  SLUICE_READ_ONLY: EXIT.invalidInput,
  SLUICE_STATE_VERSION: EXIT.invalidInput,
  SLUICE_DESTINATION_AUTH: EXIT.invalidInput,
  SLUICE_DESTINATION_MISSING: EXIT.invalidInput,
  SLUICE_DESTINATION_UNUSABLE: EXIT.invalidInput,
  SLUICE_DESTINATION_LIMIT: EXIT.invalidInput,
  SLUICE_DESTINATION_DATA: EXIT.invalidInput,
  SLUICE_DESTINATION_DEPENDENT: EXIT.invalidInput,
  // The service refused the request as it stands: wrong credentials, no such thing, not allowed.
  SLUICE_API_400: EXIT.invalidInput,
  SLUICE_API_401: EXIT.invalidInput,
  SLUICE_API_403: EXIT.invalidInput,
  SLUICE_API_404: EXIT.invalidInput,
  SLUICE_API_409: EXIT.invalidInput,
  SLUICE_API_422: EXIT.invalidInput,
  SLUICE_CREDIT_GUARD: EXIT.creditGuard,
  SLUICE_INTERNAL: EXIT.failed,
};

export function exitCodeOfCode(code: string): number {
  return EXIT_OF_CODE[code] ?? EXIT.failed;
}

/** The exit code for an error that stopped a command. */
export function exitCodeFor(error: unknown): number {
  if (error instanceof CreditGuardError) return EXIT.creditGuard;
  if (error instanceof SluiceError) return exitCodeOfCode(error.code);
  return EXIT.failed;
}

/**
 * What to print for an error. A SluiceError is the user's or the service's doing and gets its
 * message only; anything else is a bug in sluice and keeps its stack so it can be reported.
 */
export function describeError(error: unknown): string {
  if (error instanceof QueryError) return `${error.message}\n${indent(error.excerpt)}`;
  if (error instanceof SluiceError) return error.message;
  const hint = '(this is a bug in sluice; please report it with this message)';
  if (error instanceof Error) return `internal error: ${error.stack ?? error.message}\n${hint}`;
  return `internal error: ${String(error)}\n${hint}`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

/**
 * The exit code of a pipeline run: 0 when it succeeded, 130 when interrupted; a failure is 2
 * when any error in it is a mistake to fix (a retry alone cannot make the run succeed), else 1;
 * 3 when the credit guard refused a job and nothing else failed.
 */
export function exitCodeOfRun(summary: Pick<RunSummary, 'status' | 'error' | 'jobs'>): number {
  switch (summary.status) {
    case 'succeeded':
      return EXIT.ok;
    case 'refused':
      return EXIT.creditGuard;
    case 'interrupted':
      return EXIT.interrupted;
    default: {
      const errors: ErrorInfo[] = [
        ...(summary.error ? [summary.error] : []),
        ...summary.jobs.flatMap((j) => (j.error && j.status !== 'refused' ? [j.error] : [])),
      ];
      return errors.some((e) => exitCodeOfCode(e.code) === EXIT.invalidInput)
        ? EXIT.invalidInput
        : EXIT.failed;
    }
  }
}
