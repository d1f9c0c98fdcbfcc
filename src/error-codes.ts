/**
 * The one table of error codes. Each code sluice can print is here once, with the exit code the
 * CLI ends with and a line saying what it means; `retryable` comes from the exit code (true
 * exactly when it is 1), and the README's exit-code table is written from this table
 * (`exitCodeTable`, checked by test/e2e/readme.test.ts). So the three cannot disagree.
 */

/** Exit codes of the CLI. */
export const EXIT = {
  ok: 0,
  /** Failed, and worth a retry: the service or the database failed, a timeout, a lock. */
  failed: 1,
  /** A mistake to fix: running again unchanged fails the same way. */
  invalidInput: 2,
  /** Refused before anything was spent: the credit guard, a budget, or the service's own 402. */
  creditGuard: 3,
  /**
   * Done, but with less than was asked for: a download cancelled on the service, or a job
   * refused (credit guard, budget, 402) after other jobs of the run spent or loaded.
   */
  incomplete: 4,
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export interface CodeInfo {
  exit: ExitCode;
  /** What it means, for the README's table. */
  meaning: string;
}

const retry = (meaning: string): CodeInfo => ({ exit: EXIT.failed, meaning });
const fix = (meaning: string): CodeInfo => ({ exit: EXIT.invalidInput, meaning });

const CODES = {
  // --- worth a retry (exit 1) ----------------------------------------------------------------
  SLUICE_NETWORK: retry('the service could not be reached, or the connection broke'),
  SLUICE_TIMEOUT: retry('a download did not finish within its poll timeout'),
  SLUICE_API_BAD_JSON: retry('the service sent JSON cut short or broken (a transfer fault)'),
  SLUICE_LOCKED: retry('another run of the pipeline holds its lock'),
  SLUICE_LOCK_LOST: retry(
    'the run lost its lock to another run and stopped before committing more',
  ),
  SLUICE_DESTINATION_UNREACHABLE: retry('the database server does not answer'),
  SLUICE_DESTINATION_BUSY: retry(
    'the database is locked by another program, or a lock or statement timeout passed',
  ),
  SLUICE_DESTINATION_CONNECTION: retry('the connection to the database broke mid-work'),
  SLUICE_DESTINATION_CONFLICT: retry('a deadlock or a race to change a table'),
  SLUICE_DESTINATION_RECOVERY: retry(
    'a killed run left a log in a DuckDB file that only a process that can write it replays: the next run does',
  ),
  SLUICE_DISK_FULL: retry('the disk is full (the database, or the folder files are saved in)'),
  SLUICE_DOWNLOAD_FAILED: retry('the service reported the download as failed'),
  SLUICE_REFRESH_FAILED: retry(
    'a targeted update (refresh:) failed on the service, or the service no longer lists it',
  ),
  SLUICE_DOWNLOAD_NOT_READY: retry('the download is not finished yet (downloads fetch)'),
  SLUICE_FILE_EXPIRED: retry("a result file's URL expired again and again"),
  SLUICE_FILE_SHORT: retry('a result file ended before the bytes its server announced'),
  SLUICE_FILE_INCOMPLETE: retry(
    'result files held fewer records than the download, or none: not recorded as loaded',
  ),
  SLUICE_FILE_DAMAGED: retry('a result file could not be decompressed (damaged gzip)'),
  SLUICE_FILE_CHANGED: retry('a result file changed on the server while it was read'),
  SLUICE_FILE_RESUME: retry('the server resumed a result file from the wrong byte'),
  SLUICE_FILE_GONE: retry('the download no longer lists a result file'),
  SLUICE_INTERNAL: retry('a bug in sluice: please report it'),

  // --- a mistake to fix (exit 2) -------------------------------------------------------------
  SLUICE_SPEC: fix('a pipeline file that cannot be used (file, line and field named)'),
  SLUICE_USAGE: fix('a flag or setting that cannot be used'),
  SLUICE_USAGE_ARGUMENTS: fix('a command line the CLI does not understand'),
  SLUICE_UNKNOWN_JOB: fix('--job names no job of the pipeline'),
  SLUICE_CREDENTIALS: fix('credentials or the service URL are missing'),
  SLUICE_SECRET_FILE: fix(
    'a secret file (NAME_FILE, ${file:PATH}) or an env file (.env, --env-file) is missing or cannot be read',
  ),
  SLUICE_UNSUPPORTED: fix('the API version has no such operation'),
  SLUICE_QUERY: fix('a query that cannot be used'),
  SLUICE_QUERY_SYNTAX: fix('a query that does not parse'),
  SLUICE_QUERY_FIELD: fix('a query names a field the data type does not have'),
  SLUICE_QUERY_TOO_LONG: fix('a query longer than the service takes'),
  SLUICE_VIEW_FIELD: fix('a view names a field the data type does not have'),
  SLUICE_API_NOT_JSON: fix(
    'the service URL answered something else than the service (an HTML page, a redirect)',
  ),
  SLUICE_API_BAD_RESPONSE: fix('the service answered in a form sluice cannot use'),
  SLUICE_DOWNLOAD_EXPIRED: fix(
    "a download's result files are past the days the service keeps them (v3: 7): start a new download (run --fresh)",
  ),
  SLUICE_DOWNLOAD_UNCERTAIN: fix(
    'a download start failed, and whether the service started it cannot be told: check the downloads (sluice downloads list) before running again',
  ),
  SLUICE_SCRAPE_UNANSWERED: fix(
    'a run stopped between asking for a scrape and saving its answer, and the service may have charged it: run --fresh to scrape anew',
  ),
  SLUICE_BAD_FILE: fix('a result file cannot be read at all (its CSV header)'),
  SLUICE_DESTINATION: fix('the database refused a statement'),
  SLUICE_DESTINATION_AUTH: fix(
    'the database refused the login or a right (wrong password or role)',
  ),
  SLUICE_DESTINATION_MISSING: fix('no such database or schema'),
  SLUICE_DESTINATION_TLS: fix('the database and the URL disagree on TLS (sslmode, certificates)'),
  SLUICE_DESTINATION_UNUSABLE: fix('not a database, a directory, read-only, damaged'),
  SLUICE_DESTINATION_LIMIT: fix('beyond what the database can hold (too many columns)'),
  SLUICE_DESTINATION_DATA: fix('the data cannot be written as it is (duplicate merge keys)'),
  SLUICE_DESTINATION_VALUE: fix('the database refused a value'),
  SLUICE_DESTINATION_DEPENDENT: fix('views depend on a table or column sluice must change'),
  SLUICE_NO_STATE: fix('no state tables where a read-only command looked'),
  SLUICE_STATE_VERSION: fix('state tables of a newer sluice'),
  SLUICE_READ_ONLY: fix('the destination is open read-only'),
  SLUICE_JOB_CHANGED: fix('a job changed how it loads while its download is half loaded'),
  SLUICE_TABLE_OWNED: fix(
    "a job's table is another pipeline's or job's in the destination, or a people table (_sluice_tables)",
  ),
  SLUICE_TOO_MANY_REJECTS: fix('more rows rejected than max_rejects; the download is kept'),
  SLUICE_ALL_REJECTED: fix('every row of a job was rejected'),
  SLUICE_SCHEMA_CONTRACT: fix(
    'the data would add or widen columns of a table its schema contract freezes (schema:)',
  ),

  // --- refused before anything was spent (exit 3) --------------------------------------------
  SLUICE_CREDIT_GUARD: {
    exit: EXIT.creditGuard,
    meaning: 'the credit guard refused a job (too few credits left, or max_credits)',
  },
  SLUICE_BUDGET: {
    exit: EXIT.creditGuard,
    meaning:
      "a job would pass the pipeline's budget for the period (budget:); it renews with the next period",
  },

  // --- done, with less than was asked for (exit 4) -------------------------------------------
  SLUICE_DOWNLOAD_CANCELLED: {
    exit: EXIT.incomplete,
    meaning:
      'a download was cancelled on the service: what was paid for is loaded, the rest is not',
  },

  // --- interrupted (exit 130) ----------------------------------------------------------------
  SLUICE_INTERRUPTED: {
    exit: EXIT.interrupted,
    meaning: 'stopped by Ctrl-C or SIGTERM; run again to pick up where it stopped',
  },
} as const satisfies Record<string, CodeInfo>;

/** `SLUICE_API_<status>`: the service answered with that HTTP status (see `apiCodeInfo`). */
export type ApiStatusCode = `SLUICE_API_${number}`;

export type ErrorCode = keyof typeof CODES | ApiStatusCode;

/** HTTP statuses of the service that are worth a retry: overloaded, timed out, failed. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** The service's HTTP status as a code: 5xx, 408 and 429 worth a retry, 402 refused, else 2. */
function apiCodeInfo(status: number): CodeInfo {
  if (isRetryableStatus(status)) {
    return retry('the service failed or is overloaded (5xx, 408, 429)');
  }
  if (status === 402) {
    return { exit: EXIT.creditGuard, meaning: 'the service refused: credits exhausted (402)' };
  }
  return fix(
    'the service refused the request as it stands (wrong password, unknown id or view: 400, 401, 403, 404, 409, 422)',
  );
}

/** What a code means; an unknown code (from an older state table, say) is a failure (exit 1). */
export function codeInfo(code: string): CodeInfo {
  if (Object.hasOwn(CODES, code)) return CODES[code as keyof typeof CODES];
  const api = /^SLUICE_API_(\d{3})$/.exec(code);
  if (api) return apiCodeInfo(Number(api[1]));
  return retry('unknown');
}

export function exitCodeOf(code: string): ExitCode {
  return codeInfo(code).exit;
}

/** Whether running again, unchanged, can help: exactly when the exit code is 1. */
export function isRetryable(code: string): boolean {
  return codeInfo(code).exit === EXIT.failed;
}

const EXIT_MEANINGS: Record<ExitCode, string> = {
  0: 'done',
  1: 'failed, and worth a retry: the service or the database failed, a timeout, a held lock',
  2: 'a mistake to fix: running again unchanged fails the same way',
  3: 'refused before anything was spent: the credit guard, a budget, or the service (402)',
  4: 'done with less than asked for: a download cancelled on the service, or a job refused after others spent (what was paid is loaded)',
  130: 'interrupted (Ctrl-C, SIGTERM); run again to pick up where it stopped',
};

/**
 * The README's exit-code table, as Markdown: one row per exit code with the codes it covers,
 * then one row per code with its meaning.
 */
export function exitCodeTable(): string {
  const lines = ['| exit | meaning |', '| --- | --- |'];
  for (const [exit, meaning] of Object.entries(EXIT_MEANINGS))
    lines.push(`| ${exit} | ${meaning} |`);
  lines.push('', '| error code | exit | meaning |', '| --- | --- | --- |');
  const rows: [string, CodeInfo][] = [
    ...(Object.entries(CODES) as [string, CodeInfo][]).map(([code, info]): [string, CodeInfo] => [
      `\`${code}\``,
      info,
    ]),
    ['`SLUICE_API_5xx`, `SLUICE_API_408`, `SLUICE_API_429`', apiCodeInfo(500)],
    ['`SLUICE_API_402`', apiCodeInfo(402)],
    ['`SLUICE_API_4xx` (the other 4xx)', apiCodeInfo(400)],
  ];
  rows.sort((a, b) => a[1].exit - b[1].exit || a[0].localeCompare(b[0]));
  for (const [label, info] of rows) lines.push(`| ${label} | ${info.exit} | ${info.meaning} |`);
  return lines.join('\n');
}

/** Every code of the table (the API status codes aside), for tests. */
export const ERROR_CODES: readonly string[] = Object.keys(CODES);
