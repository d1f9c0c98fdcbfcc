import { EXIT, exitCodeOf } from '../error-codes.js';
import { PipelineSpecError, QueryError, SluiceError, UsageError } from '../errors.js';
import {
  type ErrorInfo,
  errorInfo,
  type JobOutcome,
  type RunSummary,
} from '../pipeline/outcome.js';

export { EXIT } from '../error-codes.js';

/** The exit code for an error that stopped a command. */
export function exitCodeFor(error: unknown): number {
  if (error instanceof SluiceError) return exitCodeOf(error.code);
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
 * 3 when the credit guard, a budget or the service refused a job before the run spent or loaded
 * anything; 4 when every job ended but with less than was asked for: a download cancelled on the
 * service (what it held is loaded), or a job refused after others of the run spent or loaded
 * (their work is kept; the run status stays `refused`, so a rerun runs the refused job).
 */
export function exitCodeOfRun(summary: Pick<RunSummary, 'status' | 'error' | 'jobs'>): number {
  switch (summary.status) {
    case 'succeeded':
      return EXIT.ok;
    case 'refused':
      return summary.jobs.some(didWork) ? EXIT.incomplete : EXIT.creditGuard;
    case 'incomplete':
      return EXIT.incomplete;
    case 'interrupted':
      return EXIT.interrupted;
    default: {
      const errors: ErrorInfo[] = [
        ...(summary.error ? [summary.error] : []),
        ...summary.jobs.flatMap((j) => (j.error && j.status !== 'refused' ? [j.error] : [])),
      ];
      return errors.some((e) => exitCodeOf(e.code) === EXIT.invalidInput)
        ? EXIT.invalidInput
        : EXIT.failed;
    }
  }
}

/** A job of the run that spent credits or loaded rows: a refusal after it is not "nothing spent". */
function didWork(job: JobOutcome): boolean {
  if (job.status === 'refused') return false;
  return job.loaded > 0 || Object.values(job.credits).some((n) => (n ?? 0) > 0);
}

/** The code of the UsageError for what yargs itself rejects (unknown command, missing argument). */
export const ARGUMENTS_CODE = 'SLUICE_USAGE_ARGUMENTS';

/** An error as the machine contract's error document carries it. */
export function errorDocument(error: unknown): {
  status: 'error';
  error: {
    code: string;
    message: string;
    retryable: boolean;
    step?: string;
    file?: string;
    line?: number;
    /** Every mistake of a pipeline file, each with its line and field. */
    problems?: { line?: number; field: string; message: string }[];
  };
} {
  const info = errorInfo(error);
  const doc: ReturnType<typeof errorDocument>['error'] = {
    code: info.code,
    message: info.code === 'SLUICE_INTERNAL' ? info.message : describeError(error),
    retryable: info.retryable,
  };
  if (error instanceof PipelineSpecError) {
    doc.step = 'pipeline-file';
    doc.file = error.file;
    if (error.line !== undefined) doc.line = error.line;
    doc.problems = error.problems.map((p) => ({
      ...(p.line === undefined ? {} : { line: p.line }),
      field: p.path,
      message: p.message,
    }));
  } else if (error instanceof UsageError && error.code === ARGUMENTS_CODE) {
    doc.step = 'arguments';
  } else if (info.stage !== undefined) {
    doc.step = info.stage;
  }
  return { status: 'error', error: doc };
}

/** Exit codes from the worst: a run interrupted, a mistake to fix, a failure, refused, incomplete. */
const SEVERITY: readonly number[] = [
  EXIT.interrupted,
  EXIT.invalidInput,
  EXIT.failed,
  EXIT.creditGuard,
  EXIT.incomplete,
  EXIT.ok,
];

/** The exit code of several runs: the worst of theirs (see SEVERITY). */
export function worstExitCode(codes: readonly number[]): number {
  const rank = (code: number) => {
    const at = SEVERITY.indexOf(code);
    return at < 0 ? SEVERITY.indexOf(EXIT.failed) : at;
  };
  let worst: number = EXIT.ok;
  for (const code of codes) if (rank(code) < rank(worst)) worst = code;
  return worst;
}
