import {
  CreditGuardError,
  PipelineSpecError,
  QueryError,
  SluiceError,
  UsageError,
} from '../errors.js';

/** Exit codes of the CLI, as documented in the README and ARCHITECTURE.md. */
export const EXIT = {
  ok: 0,
  failed: 1,
  invalidInput: 2,
  creditGuard: 3,
  interrupted: 130,
} as const;

/** The one place that decides what an error means to a shell or an orchestrator. */
export function exitCodeFor(error: unknown): number {
  if (error instanceof CreditGuardError) return EXIT.creditGuard;
  if (
    error instanceof PipelineSpecError ||
    error instanceof UsageError ||
    error instanceof QueryError
  ) {
    return EXIT.invalidInput;
  }
  // Asking an API version for an operation it does not have (views on v3) is the caller's choice.
  if (error instanceof SluiceError && error.code === 'SLUICE_UNSUPPORTED') return EXIT.invalidInput;
  return EXIT.failed;
}

/**
 * What to print for an error. A SluiceError is the user's or the service's doing and gets its
 * message only; anything else is a bug in sluice and keeps its stack so it can be reported.
 */
export function describeError(error: unknown): string {
  if (error instanceof QueryError) return `${error.message}\n${indent(error.excerpt)}`;
  if (error instanceof SluiceError) return error.message;
  if (error instanceof Error) return `internal error: ${error.stack ?? error.message}`;
  return `internal error: ${String(error)}`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

/** The exit code of a pipeline run, from its overall status. */
export function exitCodeOfRun(status: 'succeeded' | 'failed' | 'refused' | 'interrupted'): number {
  switch (status) {
    case 'succeeded':
      return EXIT.ok;
    case 'refused':
      return EXIT.creditGuard;
    case 'interrupted':
      return EXIT.interrupted;
    default:
      return EXIT.failed;
  }
}
