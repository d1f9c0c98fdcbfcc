import type { CreditType } from '../catalog.js';
import { isRetryable } from '../error-codes.js';
import { type ErrorCode, SluiceError } from '../errors.js';

/**
 * What a run reports: a typed outcome per job, and the run's status derived from them. Every
 * failure says which stage it happened in, in the summary and in the state tables.
 */

/** The stages of a run, in order: dlt's extract, normalize, load, and what surrounds them. */
export type Stage =
  /** The service's login (or API token) is tried before anything is written. */
  | 'login'
  | 'destination'
  | 'lock'
  /** The job's tables are claimed for it in the destination (`_sluice_tables`). */
  | 'tables'
  | 'views'
  | 'guard'
  | 'extract'
  | 'normalize'
  | 'load'
  | 'finish';

export type JobStatus =
  | 'loaded'
  /** The query matched nothing: the job's tables exist, empty (or, for replace, emptied). */
  | 'empty'
  | 'failed'
  | 'refused'
  | 'timed_out'
  /**
   * Its download was cancelled on the service, not by this run: the records it holds (paid
   * for) are loaded, fewer than the job asked for.
   */
  | 'cancelled'
  | 'interrupted'
  /** Loaded by an earlier run this run continues (see prior-work.ts): not downloaded again. */
  | 'skipped'
  /** A `refresh:` step: the service refreshed the records (a targeted update). */
  | 'refreshed';

/** `incomplete`: every job ended, but some with less than it asked for (a cancelled download). */
export type RunStatus = 'succeeded' | 'failed' | 'refused' | 'incomplete' | 'interrupted';

export interface ErrorInfo {
  code: ErrorCode;
  message: string;
  /** Whether running again, unchanged, can help. */
  retryable: boolean;
  stage?: Stage;
}

export type Credits = Partial<Record<CreditType, number>>;

export interface JobOutcome {
  job: string;
  status: JobStatus;
  /** The stage the job was in when it ended (its failure's stage, when it failed). */
  stage: Stage;
  download_id: string | null;
  /** True when this run picked up a download an earlier run had started (and paid for). */
  reattached: boolean;
  found: number | null;
  downloaded: number;
  loaded: number;
  rejected: number;
  /** Credits this run spent on the job (none when it re-attached to a paid download). */
  credits: Credits;
  /** What the job's download cost, whichever run paid for it. */
  download_credits: Credits;
  files_loaded: number;
  seconds: number;
  /** The tables the job wrote, as they are named in the destination. */
  tables: string[];
  message?: string;
  error?: ErrorInfo;
  /** An incremental job's range, and where its cursor went. */
  incremental?: IncrementalRange;
}

/** The range a job's download covers, as the run summary reports it. */
export interface IncrementalRange {
  /** The cursor field. */
  cursor: string;
  /** Lower bound (inclusive) of the field for this download, or null: every record. */
  from: string | null;
  /**
   * Upper bound (inclusive), where there is a lower one: the service's time just before the
   * guard counted (incremental.ts rangeOf). Absent on a re-attached download.
   */
  to?: string;
  /** The saved cursor the range started from, or null (first run, or --full-refresh). */
  last: string | null;
  /** `--full-refresh`: the saved cursor is ignored, and reset once this download is loaded. */
  full_refresh: boolean;
  /** The cursor after the job: the largest value loaded, or the old one when it did not move. */
  next?: string | null;
  /** Why the cursor did not move, when it did not. */
  kept?: string;
}

export interface RunSummary {
  pipeline: string;
  /** This run's id; for a replay, the replayed run's. */
  run_id: string;
  /** The interrupted or failed run this one finished, or null: see resume.ts. */
  resumed_from: string | null;
  status: RunStatus;
  /**
   * True when this command ran nothing and bought nothing, because the unit of work it was
   * asked for was done by an earlier run (`original`): its run key's, the run it waited for, or
   * the stopped command it finishes (see prior-work.ts). Its `credits` and `jobs` are then
   * empty: what that run did is under `original`.
   */
  replayed: boolean;
  original?: OriginalRun;
  destination: string;
  started_at: string;
  seconds: number;
  /** Credits spent by this run, per type. */
  credits: Credits;
  views: { created: string[]; updated: string[]; unchanged: string[] };
  jobs: JobOutcome[];
  /** A failure outside any job (e.g. the views could not be synced). */
  error?: ErrorInfo;
}

/** Why a command replays an earlier run instead of running. */
export type ReplayReason = 'run_key' | 'waited' | 'batch';

/** The run a replay stands for, with its own figures. */
export interface OriginalRun {
  run_id: string;
  reason: ReplayReason;
  run_key: string | null;
  /** The command of several pipeline files it ran in, when it did. */
  batch_id: string | null;
  status: RunStatus;
  started_at: string;
  finished_at: string | null;
  seconds: number;
  /** What that run spent, per type. */
  credits: Credits;
  views: RunSummary['views'];
  jobs: JobOutcome[];
}

const stages = new WeakMap<object, Stage>();
const committed = new WeakSet<JobOutcome>();

/** The job's last transaction committed: what happens after cannot undo that it loaded. */
export function markCommitted(outcome: JobOutcome): void {
  committed.add(outcome);
}

export function isCommitted(outcome: JobOutcome): boolean {
  return committed.has(outcome);
}

/** Notes the stage an error happened in; the innermost (first) note wins. */
export function markStage<E>(error: E, stage: Stage): E {
  if (typeof error === 'object' && error !== null && !stages.has(error)) stages.set(error, stage);
  return error;
}

/** Runs `work`, noting `stage` on anything it throws. */
export async function inStage<T>(stage: Stage, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw markStage(error, stage);
  }
}

export function stageOf(error: unknown): Stage | undefined {
  return typeof error === 'object' && error !== null ? stages.get(error) : undefined;
}

/** An error as the summary and the state tables carry it. */
export function errorInfo(error: unknown, stage?: Stage): ErrorInfo {
  const at = stageOf(error) ?? stage;
  const where = at === undefined ? {} : { stage: at };
  if (error instanceof SluiceError) {
    return { code: error.code, message: error.message, retryable: error.retryable, ...where };
  }
  const message = error instanceof Error ? error.message : String(error);
  return {
    code: 'SLUICE_INTERNAL',
    message: `internal error: ${message} (this is a bug in sluice; please report it with the log)`,
    retryable: isRetryable('SLUICE_INTERNAL'),
    ...where,
  };
}

export function runStatus(
  jobs: readonly JobOutcome[],
  runError: ErrorInfo | undefined,
  aborted: boolean,
): RunStatus {
  if (aborted || jobs.some((j) => j.status === 'interrupted')) return 'interrupted';
  if (runError || jobs.some((j) => j.status === 'failed' || j.status === 'timed_out')) {
    return 'failed';
  }
  if (jobs.some((j) => j.status === 'refused')) return 'refused';
  if (jobs.some((j) => j.status === 'cancelled')) return 'incomplete';
  return 'succeeded';
}

export function addCredits(into: Credits, from: Credits): Credits {
  for (const [type, n] of Object.entries(from) as [CreditType, number][]) {
    into[type] = (into[type] ?? 0) + n;
  }
  return into;
}

export function newOutcome(job: string): JobOutcome {
  return {
    job,
    status: 'loaded',
    stage: 'guard',
    download_id: null,
    reattached: false,
    found: null,
    downloaded: 0,
    loaded: 0,
    rejected: 0,
    credits: {},
    download_credits: {},
    files_loaded: 0,
    seconds: 0,
    tables: [],
  };
}
