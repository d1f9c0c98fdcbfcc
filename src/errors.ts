import { type ErrorCode, isRetryable } from './error-codes.js';

export type { ErrorCode } from './error-codes.js';

/**
 * Every error sluice raises on purpose is a SluiceError: a stable `code` for programs and a
 * message for people. What the code means (the exit code, and `retryable`: whether trying the
 * same thing again can help) comes from the one table in error-codes.ts. The CLI prints these
 * without a stack trace.
 */
export class SluiceError extends Error {
  readonly code: ErrorCode;

  constructor(message: string, options: { code: ErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SluiceError';
    this.code = options.code;
  }

  /** Whether running again, unchanged, can help (error-codes.ts: exactly when exit 1). */
  get retryable(): boolean {
    return isRetryable(this.code);
  }
}

/** A user mistake in arguments or settings (missing credentials, bad flag values). */
export class UsageError extends SluiceError {
  constructor(message: string, code: ErrorCode = 'SLUICE_USAGE') {
    super(message, { code });
    this.name = 'UsageError';
  }
}

/** A query that cannot be parsed, or names a field the data type does not have. */
export class QueryError extends SluiceError {
  readonly query: string;
  /** Zero-based character offsets of the offending part of the query. */
  readonly start: number;
  readonly end: number;

  constructor(
    message: string,
    query: string,
    start: number,
    end: number,
    code: ErrorCode = 'SLUICE_QUERY',
  ) {
    super(message, { code });
    this.name = 'QueryError';
    this.query = query;
    this.start = start;
    this.end = end;
  }

  /** The query with a caret line under the offending part, for terminals. */
  get excerpt(): string {
    const width = Math.max(1, this.end - this.start);
    return `${this.query}\n${' '.repeat(this.start)}${'^'.repeat(width)}`;
  }
}

/** The service answered with an error status. `body` is what it said, parsed when it was JSON. */
export class ApiError extends SluiceError {
  readonly status: number;
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
  /** The messages the service gave, from either error body shape. */
  readonly details: string[];

  constructor(init: {
    status: number;
    method: string;
    path: string;
    body: unknown;
    details: string[];
  }) {
    const said = init.details.length > 0 ? init.details.join('; ') : `HTTP ${init.status}`;
    super(`${init.method} ${init.path} failed with ${init.status}: ${said}`, {
      code: `SLUICE_API_${init.status}`,
    });
    this.name = 'ApiError';
    this.status = init.status;
    this.method = init.method;
    this.path = init.path;
    this.body = init.body;
    this.details = init.details;
  }
}

/** The service could not be reached or the connection broke before an answer. */
export class NetworkError extends SluiceError {
  constructor(message: string, cause?: unknown) {
    super(message, { code: 'SLUICE_NETWORK', cause });
    this.name = 'NetworkError';
  }
}

/**
 * The job would spend more credits than are left, than its cap allows, or than is left of one
 * of the pipeline's budgets (`SLUICE_BUDGET`).
 */
export class CreditGuardError extends SluiceError {
  readonly needed: number;
  readonly remaining: number;
  readonly type: string;

  constructor(
    message: string,
    init: {
      needed: number;
      remaining: number;
      type: string;
      code?: 'SLUICE_CREDIT_GUARD' | 'SLUICE_BUDGET';
    },
  ) {
    super(message, { code: init.code ?? 'SLUICE_CREDIT_GUARD' });
    this.name = 'CreditGuardError';
    this.needed = init.needed;
    this.remaining = init.remaining;
    this.type = init.type;
  }
}

/**
 * A pipeline file that cannot be used; names the file, line and field. One error may say several
 * mistakes of the file, each on a line of its own (`problems`), so that one run of `validate`
 * shows all of them.
 */
export class PipelineSpecError extends SluiceError {
  readonly file: string;
  readonly line: number | undefined;
  readonly path: string;
  /** Each mistake: this one first, with its line, field and message (without file and line). */
  readonly problems: readonly { line: number | undefined; path: string; message: string }[];

  constructor(message: string, init: { file: string; line?: number; path: string }) {
    const where = init.line === undefined ? init.file : `${init.file}:${init.line}`;
    super(`${where}: ${init.path ? `${init.path}: ` : ''}${message}`, { code: 'SLUICE_SPEC' });
    this.name = 'PipelineSpecError';
    this.file = init.file;
    this.line = init.line;
    this.path = init.path;
    this.problems = [{ line: init.line, path: init.path, message }];
  }

  /** One error for several mistakes of a file, in the order of their lines. */
  static all(errors: readonly PipelineSpecError[]): PipelineSpecError {
    const sorted = [...errors].sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
    const [first, ...more] = sorted;
    if (first === undefined) throw new Error('PipelineSpecError.all of no error');
    if (more.length === 0) return first;
    const combined = Object.create(PipelineSpecError.prototype) as PipelineSpecError;
    Object.assign(combined, first, {
      problems: sorted.flatMap((e) => e.problems),
    });
    combined.message = sorted.map((e) => e.message).join('\n');
    combined.stack = `${combined.name}: ${combined.message}`;
    return combined;
  }
}

const contexts = new WeakMap<object, Record<string, string>>();

/**
 * Notes where an error happened (the pipeline, the run), so that the one place that reports
 * errors can say so: JSON log lines carry `pipeline` and `run_id` wherever there is one.
 */
export function attachContext<E>(error: E, context: Record<string, string>): E {
  if (typeof error === 'object' && error !== null) {
    contexts.set(error, { ...context, ...contexts.get(error) });
  }
  return error;
}

export function contextOf(error: unknown): Record<string, string> {
  return (typeof error === 'object' && error !== null && contexts.get(error)) || {};
}
