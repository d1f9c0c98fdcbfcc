import type { FieldMap } from '../catalog.js';
import { SluiceError } from '../errors.js';
import type { Logger } from '../log.js';
import type { RowEncoding } from '../schema/copy-text.js';
import type { Naming, NamingStyle } from '../schema/naming.js';
import type { TableDef } from '../schema/plan.js';
import type { Column, ColumnType, PackedRows, Row } from '../schema/types.js';
import type { DashboardReads } from './core/dashboard-reads.js';
import type { Attempt, FileRow, RejectRow } from './core/download-ledger.js';
import type { CursorRow, TableOwnerRow } from './core/pipeline-holdings.js';
import type { AlertRow, JobRow, NewRun, PhaseRow, RunRow } from './core/run-log.js';

export type { Column, ColumnType, Row } from '../schema/types.js';
export type {
  DashboardReads,
  Paged,
  RejectFilter,
  RunFilter,
} from './core/dashboard-reads.js';
export type { Attempt, FileRow, RejectRow } from './core/download-ledger.js';
export type { CursorRow, TableOwnerRow } from './core/pipeline-holdings.js';
export type { AlertRow, JobRow, NewRun, PhaseRow, RunRow } from './core/run-log.js';

/**
 * A destination is sealed: the run talks to it in terms of tables, files and state, and
 * nothing outside `src/load/` sees SQL, Kysely or a driver. Each kind is a dialect under one
 * implementation (`loader.ts`), like Kysely's, and one contract suite (`test/contract/`) runs
 * against every kind.
 */

export interface DestinationCapabilities {
  /** Longest identifier in UTF-8 bytes (63 for some servers); names beyond it are shortened. */
  maxIdentifierBytes: number;
  /** Most columns a table may have. */
  maxColumns: number;
  /**
   * How a column's type is widened: `in-place` (ALTER COLUMN ... TYPE) or `rebuild` (the
   * column is renamed aside, added again with the new type and copied back).
   */
  alterColumnType: 'in-place' | 'rebuild';
  /** Write transactions that can run at once (1 for a database with one writer). */
  concurrentWriters: number;
  /**
   * How the parse workers hand it rows (`schema/copy-text.ts`): bound values, or already in
   * the text its bulk loader reads (COPY text). Its writer takes either.
   */
  rowEncoding: RowEncoding;
  /**
   * Bytes of a result file in one written batch, where several parse workers share a file (with
   * one or none, a batch is 500 rows): for a job whose rows are only appended, and, by the
   * file's format, for one that merges or replaces rows by a key (a merge writes each batch
   * through a staging table). An embedded database's write costs little, and small batches keep
   * the parsers' garbage young; a server's is round trips, which larger batches spread over more
   * rows, at the cost of more held in the parse workers at once (each kind says why its own).
   */
  batchBytes: { appends: number; merges: { csv: number; json: number } };
  /**
   * Whether its file transactions can read a whole result file themselves
   * (`FileTransaction.readFile`), where that gives exactly the rows sluice's own decoding gives.
   */
  readsFiles?: boolean;
}

/** A result file for the destination to read itself (see `FileTransaction.readFile`). */
export interface FileToRead {
  /** The file's name, the same for each time it is offered. */
  name: string;
  /** Its format: NDJSON, or CSV with a header line. */
  format: 'json' | 'csv';
  /** The file's text as the service sends it (unzipped), opened when the destination reads it. */
  open(): Promise<NodeJS.ReadableStream>;
  /** The job's next file, which the destination may fetch while it reads this one. */
  next?: Pick<FileToRead, 'name' | 'open'>;
  /** The catalogue's fields of the job's data type, by which sluice decodes the records. */
  fields: FieldMap;
  /** The load's own columns, the same in every row. */
  constants: Readonly<Record<string, string>>;
  /** A line longer than this (in bytes) is a reject: such a file is left to sluice's decoding. */
  maxRecordBytes: number;
  /** Told why, when the destination sends the file back to be loaded the usual way. */
  sentBack?(why: string): void;
}

/**
 * The database's own reading of a file failed after its checks passed (out of memory, say):
 * its transaction writes nothing, and the file is to be loaded the usual way.
 */
export class FileReadFailed extends SluiceError {
  constructor(cause: unknown) {
    super(`the database could not read the file itself: ${(cause as Error).message}`, {
      code: 'SLUICE_DESTINATION',
      cause,
    });
  }
}

/** What a destination's own reading of a file wrote: its rows, and the bytes of its text. */
export interface FileRead {
  rows: number;
  bytes: number;
}

/** Where rows go: a table of the job, written directly or built aside for a replace. */
export interface WriteTarget {
  /** Logical name; the destination maps it to a physical one. */
  table: string;
  /** Set for `write: replace`: the rows go to this pipeline's staging table of `table`. */
  stagedBy?: string;
  mode: 'append' | 'merge';
  key: string[];
  hints: FieldMap;
  /** Column linking child rows to their parent (indexed when the table is created, or seen). */
  parentColumn?: string;
  /** The parent link is indexed when the job ends instead (see `TableDef.parentIndexAtEnd`). */
  parentIndexAtEnd?: boolean;
  /** What the rows may change in an existing table's columns (default: anything). */
  contract?: TableContract;
}

/**
 * A schema contract (`schema:` of a pipeline file), dlt's way. It binds a table that was there
 * before this run (for `write: replace`, the live table the staging table stands in for); a
 * table the run makes takes the columns of its data.
 */
export interface TableContract {
  /** Fields the table has no column for: add columns, fail the job, or leave their values out. */
  newColumns: 'evolve' | 'freeze' | 'discard';
  /** Values a column's type cannot hold: widen the column, or fail the job. */
  typeChanges: 'widen' | 'freeze';
  /** Told the fields a `discard` left out of a table (logical names), each time it does. */
  onDiscard?: (table: string, fields: string[]) => void;
}

/** The statements of one result file: they commit together, with the file's state row. */
export interface FileTransaction {
  /**
   * Adds or widens columns as the rows need, then appends or upserts them. Rows with a value
   * the database refuses (an out-of-range date, say) are left out and handed back by their
   * place in `rows`, with the database's reason: the file goes on without them.
   *
   * `rows`: objects, or packed rows (the fast path: see `PackedRows`). `columns`: the column
   * types the rows ask for, when the caller knows them already.
   */
  write(
    target: WriteTarget,
    rows: Row[] | PackedRows,
    columns?: ReadonlyMap<string, ColumnType>,
  ): Promise<{ index: number; reason: string }[]>;
  /** Deletes rows whose `column` is one of `values` (the child rows of re-loaded parents). */
  deleteWhereIn(
    target: Pick<WriteTarget, 'table' | 'stagedBy'>,
    column: string,
    values: readonly (string | number)[],
  ): Promise<void>;
  addRejects(rows: readonly RejectRow[]): Promise<void>;
  /** Removes a file's rejects (a file loaded again must not keep its earlier try's). */
  clearRejects(downloadId: string, fileName: string): Promise<void>;
  /** The `_sluice_files` row that makes the file count as loaded. */
  recordFile(row: FileRow): Promise<void>;
  /**
   * Reads a whole NDJSON result file into the target's existing table by the database's own
   * reader, when every one of its lines comes out exactly as sluice's decoding would write it
   * (no reject, no new or wider column); else writes nothing and answers undefined, for the file
   * to be loaded the usual way. Where the destination has no such reader: undefined.
   */
  readFile?(target: WriteTarget, file: FileToRead): Promise<FileRead | undefined>;
}

export interface FileOptions {
  /**
   * Whether other files of the job are being loaded beside this one, each in its own
   * transaction; asked when the file would make a table or add or widen a column. The table is
   * first looked at again as committed (another file may have made the change already); if the
   * change is still wanted and other files are still beside it, it is refused with
   * SLUICE_DESTINATION_CONFLICT, and the file is to be loaded again alone: a change made beside
   * other files would wait for their commits (or deadlock), and a file that had described the
   * table before it would go on writing by the columns it had seen (a boolean widened to a
   * number takes `1`, not `t`). Answering false, the caller lets no other file start until this
   * one ends.
   */
  besideOthers?: () => boolean;
}

/** Which rows `readPairs` reads, by the columns every loaded row carries. */
export interface PairFilter {
  /** Rows loaded from this download (`_sluice_download_id`). */
  downloadId?: string;
  /** Rows loaded at or after this time (`_sluice_loaded_at`, ISO 8601 UTC). */
  loadedSince?: string;
}

/**
 * The end of a job, in one transaction: tables swapped in, the attempt and cursor updated
 * (parent links left until then indexed just before, or after the swap).
 */
export interface JobFinish {
  /**
   * Parent links to index, those left until the job's end (logical tables): a live table's in a
   * transaction of its own before the job's, a table the swap brings in after the swap. A table
   * that is not there, or already indexed, is left as it is.
   */
  parentIndexes?: { table: string; column: string }[];
  /** `write: replace`: these logical tables get this pipeline's staging tables swapped in. */
  swap?: { tables: string[]; stagedBy: string };
  attempt?: { attemptId: string; changes: Partial<Attempt> };
  /** The job's row, so that it counts as loaded exactly when its tables are. */
  job?: JobRow;
  cursor?: CursorRow;
  clearCursor?: { pipeline: string; job: string };
  /** Runs last inside the transaction (a test's place to stop a run mid-swap). */
  beforeCommit?: () => Promise<void>;
}

/** What a claim of tables changes in `_sluice_tables`. */
export interface TableOwnerChanges {
  add: readonly TableOwnerRow[];
  drop: readonly TableOwnerRow[];
}

export interface Lock {
  /** Where the lock lives, for messages. */
  readonly where: string;
  release(): Promise<void>;
}

export interface LockOptions {
  /** Wait for the holder to finish (else fail at once with SLUICE_LOCKED). */
  wait: boolean;
  signal?: AbortSignal;
  /** Called once when the lock is held by another run and `wait` is set. */
  onWait?: (where: string) => void;
  /** Time between attempts while waiting (default 1 s). */
  pollMs?: number;
  /** Who takes the lock (a run id), for the message another holder gets. */
  holder?: string;
}

/** The state tables, as the run sees them. */
export interface State {
  startRun(run: NewRun): Promise<void>;
  finishRun(
    runId: string,
    end: Pick<
      RunRow,
      'finished_at' | 'status' | 'stage' | 'error_code' | 'error_message' | 'summary' | 'credits'
    >,
  ): Promise<void>;
  runsLeftRunning(pipeline: string): Promise<RunRow[]>;
  latestRun(pipeline: string, before?: string): Promise<RunRow | undefined>;
  runsByKey(pipeline: string, key: string): Promise<RunRow[]>;
  runsEndedSince(pipeline: string, since: string): Promise<RunRow[]>;
  runsOfBatches(pipeline: string, members: string, limit: number): Promise<RunRow[]>;
  run(runId: string): Promise<RunRow | undefined>;
  runChain(root: string): Promise<RunRow[]>;
  recordAlerts(rows: readonly AlertRow[]): Promise<void>;
  saveJob(row: JobRow): Promise<void>;
  /** A job entered a phase (`_sluice_phases`), and left it. */
  startPhase(row: PhaseRow): Promise<void>;
  endPhase(row: PhaseRow, endedAt: string): Promise<void>;
  jobsOfRuns(runIds: readonly string[]): Promise<JobRow[]>;
  openAttempt(pipeline: string, job: string): Promise<Attempt | undefined>;
  attemptsOfRuns(runIds: readonly string[]): Promise<Attempt[]>;
  attemptsSince(pipeline: string, since: string): Promise<Attempt[]>;
  knownDownloadIds(): Promise<Set<string>>;
  insertAttempt(attempt: Attempt): Promise<void>;
  updateAttempt(
    attemptId: string,
    changes: Partial<Omit<Attempt, 'attempt_id' | 'pipeline' | 'job'>>,
  ): Promise<void>;
  loadedFiles(downloadId: string): Promise<Map<number, FileRow>>;
  /** Who owns each table sluice made here (none before state version 4). */
  tableOwners(): Promise<TableOwnerRow[]>;
  cursor(pipeline: string, job: string): Promise<CursorRow | undefined>;
  cursors(pipeline: string): Promise<CursorRow[]>;
  recent(
    pipeline: string,
    limit: number,
  ): Promise<{
    runs: RunRow[];
    jobs: JobRow[];
    downloads: Attempt[];
    files: FileRow[];
    rejects: { download_id: string; count: number }[];
    cursors: CursorRow[];
  }>;
}

export interface OpenDestinationOptions {
  /** Open for reading only: create nothing, write nothing (`sluice status`). */
  readOnly?: boolean;
  /** Where a relative path of a file destination starts from (default: the working directory). */
  baseDir?: string;
  /** Stops a statement that waits (on another session's lock, say). */
  signal?: AbortSignal;
  /** Where waits on other sessions' locks are reported. */
  logger?: Logger;
  /**
   * Wait while another process holds the destination itself (a database that one process at a
   * time opens for writing), instead of failing with SLUICE_LOCKED.
   */
  wait?: boolean;
  /** Called once when the destination is held by another process and `wait` is set. */
  onWait?: (where: string) => void;
  /**
   * How logical names (the service's fields, the jobs' tables) become tables and columns: as
   * they are (`keep`, the default) or `snake_case` (`firstName` -> `first_name`).
   */
  naming?: NamingStyle;
  /**
   * The destination's own settings, as a pipeline file gives them beside `url` (see
   * `DestinationEntry.settings`): each kind reads those it declares into options of its own.
   */
  settings?: Readonly<Record<string, unknown>>;
  /** Where the destination reads variables of its own (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

export interface Destination {
  /** Its kind's name in the registry (`DestinationEntry.name`). */
  readonly kind: string;
  /** Where the data goes, without any password, for messages and summaries. */
  readonly description: string;
  readonly capabilities: DestinationCapabilities;
  /** Physical names within this destination's identifier limit. */
  readonly naming: Naming;
  readonly state: State;
  /** Opened read-only: nothing is created or written (`sluice status`). */
  readonly readOnly: boolean;

  /** Creates or migrates the state tables. */
  ensureState(): Promise<void>;
  /** Paged reads of the state tables for the dashboard (`sluice ui`). */
  reads(): DashboardReads;
  /** Whether state tables exist (read-only destinations never create them). */
  hasState(): Promise<boolean>;

  /**
   * Takes an exclusive lock named `name` for the life of the handle, so that two runs of a
   * pipeline never both start a download. The operating system or the database server
   * releases it when the process dies. Fails with SLUICE_LOCKED when held and not waiting.
   *
   * A lock can also be lost while its holder lives (its server session ends, its lock file is
   * deleted), and another run take it: so taking it also makes this handle the holder of the
   * name's lease in the state tables, and from then on every transaction of this handle, and
   * every write of its state, first checks that it still is; if another run has taken the lease,
   * it fails with SLUICE_LOCK_LOST and commits nothing more.
   */
  lock(name: string, options: LockOptions): Promise<Lock>;

  /** Columns of a table (logical name), or undefined when it does not exist. */
  describeTable(table: string, stagedBy?: string): Promise<Column[] | undefined>;
  /** The physical name of a logical table, as analysts query it. */
  physicalName(table: string): string;
  /**
   * Makes the tables exist before any row is written, with the columns they are known to have
   * and their indexes (key; parent link, unless `parentIndexAtEnd`); existing tables get
   * missing columns added.
   */
  prepareTables(
    tables: readonly TableDef[],
    stagedBy?: string,
    contract?: TableContract,
  ): Promise<void>;
  /**
   * Records who owns tables (`_sluice_tables`), in one transaction that no other claim of this
   * destination runs beside: `decide` is given every owner recorded, and says which rows to add
   * and which to drop, or throws to refuse (and nothing is written).
   */
  claimTables(decide: (owners: readonly TableOwnerRow[]) => TableOwnerChanges): Promise<void>;
  /** Drops this pipeline's staging tables of `tables` (a replace starting over). */
  dropStaging(tables: readonly string[], stagedBy: string): Promise<void>;

  /**
   * A job whose files this destination reads itself (`capabilities.readsFiles`) waits for its
   * download: what reading them takes is started now (DuckDB's line-check worker), so that the
   * first file does not wait for it.
   */
  prepareReads(): void;
  /** Runs a file's statements in one transaction; rolls back everything if `work` throws. */
  loadFile<T>(work: (tx: FileTransaction) => Promise<T>, options?: FileOptions): Promise<T>;
  /**
   * Ends a job in one transaction (replace swap, attempt status, cursor), after the parent
   * links left until then are indexed.
   */
  finishJob(finish: JobFinish): Promise<void>;

  /**
   * Pairs of non-null values of two columns of a table (e.g. property id, owner people key),
   * of all its rows or of those a filter picks by the load columns every row carries.
   */
  readPairs(
    table: string,
    columns: [string, string],
    filter?: PairFilter,
  ): Promise<[unknown, unknown][]>;

  close(): Promise<void>;
}
