import { type Kysely, sql } from 'kysely';
import type { StateDatabase } from './state-tables.js';

/**
 * Reads and writes of the state tables, the same for every destination. Statements that must
 * commit with a file or with the end of a job take that transaction's executor (`db`).
 *
 * A download attempt goes through these statuses:
 *
 *   requested -> started -> loading -> loaded
 *           \-> (crash)      \-> cancelled | failed | superseded | abandoned
 *
 * A targeted update (`kind`) goes `requested -> started -> refreshed`; a scrape is a download
 * whose answer holds its records (`payload`), loaded from there.
 *
 * `requested` is written BEFORE the request that starts (and pays for) a download, and the id
 * as soon as the service answers, before the first poll. So whatever crashes when, a later run
 * finds either the id or the window in which the download was started, and re-attaches instead
 * of paying again.
 */

export type Attempt = StateDatabase['_sluice_downloads'];
export type RunRow = StateDatabase['_sluice_runs'];
export type JobRow = StateDatabase['_sluice_jobs'];
export type FileRow = StateDatabase['_sluice_files'];
export type RejectRow = StateDatabase['_sluice_rejects'];
export type CursorRow = StateDatabase['_sluice_cursors'];
export type LeaseRow = StateDatabase['_sluice_leases'];
export type TableOwnerRow = StateDatabase['_sluice_tables'];
export type AlertRow = StateDatabase['_sluice_alerts'];
export type PhaseRow = StateDatabase['_sluice_phases'];

/** A run as it starts: what it was asked to do, and why. */
export interface NewRun {
  runId: string;
  pipeline: string;
  startedAt: string;
  /** The first run of the chain of resumes this run continues, or null. */
  resumes: string | null;
  runKey?: string | null;
  /** The selected jobs' names, sorted, as a JSON array. */
  selectedJobs?: string | null;
  /** The command of several pipeline files it belongs to. */
  batch?: { id: string; members: string } | null;
}

/** How a transaction holds its run's lease (see `DialectConnection.leaseHold`). */
export type LeaseHold = 'share' | 'write' | 'none';

export type AttemptStatus =
  | 'requested'
  | 'started'
  | 'loading'
  | 'loaded'
  /** A targeted update the service says is done: its records are refreshed. */
  | 'refreshed'
  | 'cancelled'
  | 'failed'
  | 'superseded'
  | 'abandoned';

/** Statuses of an attempt a later run should pick up again. */
export const OPEN_STATUSES: readonly AttemptStatus[] = ['requested', 'started', 'loading'];

type Db = Kysely<StateDatabase>;

/**
 * A reject's text as every destination stores it: a NUL character (which PostgreSQL's text
 * cannot hold, and which is often why the row was rejected) is written as the six characters
 * `\u0000`. A reject that could not be stored would fail its whole file, every run alike.
 */
function storableReject(row: RejectRow): RejectRow {
  if (!row.raw.includes('\u0000') && !row.reason.includes('\u0000')) return row;
  return { ...row, raw: withoutNul(row.raw), reason: withoutNul(row.reason) };
}

function withoutNul(text: string): string {
  return text.replaceAll('\u0000', '\\u0000');
}

export class StateStore {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The executor for statements outside any transaction. */
  private get db(): Db {
    return this.#db;
  }

  // --- runs -------------------------------------------------------------------------------

  async startRun(run: NewRun): Promise<void> {
    await this.db
      .insertInto('_sluice_runs')
      .values({
        run_id: run.runId,
        pipeline: run.pipeline,
        started_at: run.startedAt,
        finished_at: null,
        status: 'running',
        summary: null,
        stage: null,
        error_code: null,
        error_message: null,
        resumes: run.resumes,
        credits: null,
        run_key: run.runKey ?? null,
        selected_jobs: run.selectedJobs ?? null,
        batch_id: run.batch?.id ?? null,
        batch_members: run.batch?.members ?? null,
      })
      .execute();
  }

  /** The runs of an orchestrator's key, newest first. */
  async runsByKey(pipeline: string, key: string): Promise<RunRow[]> {
    return this.db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('run_key', '=', key)
      .orderBy('started_at', 'desc')
      .orderBy('run_id', 'desc')
      .execute();
  }

  /** Runs that ended at or after `since` (ISO 8601), newest first. */
  async runsEndedSince(pipeline: string, since: string): Promise<RunRow[]> {
    return this.db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('finished_at', '>=', since)
      .orderBy('started_at', 'desc')
      .orderBy('run_id', 'desc')
      .execute();
  }

  /** The latest runs of commands of these members (`batch_members`), newest first. */
  async runsOfBatches(pipeline: string, members: string, limit: number): Promise<RunRow[]> {
    return this.db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('batch_members', '=', members)
      .orderBy('started_at', 'desc')
      .orderBy('run_id', 'desc')
      .limit(limit)
      .execute();
  }

  async finishRun(
    runId: string,
    end: Pick<
      RunRow,
      'finished_at' | 'status' | 'stage' | 'error_code' | 'error_message' | 'summary' | 'credits'
    >,
  ): Promise<void> {
    await this.db.updateTable('_sluice_runs').set(end).where('run_id', '=', runId).execute();
  }

  /**
   * Runs of a pipeline still marked `running`. Called by a run that holds the pipeline's lock:
   * any other run still `running` died without finishing (killed, or its machine went away).
   */
  async runsLeftRunning(pipeline: string): Promise<RunRow[]> {
    return this.db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('status', '=', 'running')
      .execute();
  }

  async latestRun(pipeline: string, before?: string): Promise<RunRow | undefined> {
    let query = this.db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .orderBy('started_at', 'desc')
      .orderBy('run_id', 'desc');
    if (before !== undefined) query = query.where('run_id', '!=', before);
    return query.executeTakeFirst();
  }

  /** The alerts sent about a run (or their failures): see pipeline/notify/. */
  async recordAlerts(rows: readonly AlertRow[]): Promise<void> {
    if (rows.length > 0)
      await this.db
        .insertInto('_sluice_alerts')
        .values([...rows])
        .execute();
  }

  /** A run and the runs that resumed it (their `resumes` names it). */
  async runChain(root: string): Promise<RunRow[]> {
    return this.db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where((eb) => eb.or([eb('run_id', '=', root), eb('resumes', '=', root)]))
      .orderBy('started_at')
      .execute();
  }

  async run(runId: string): Promise<RunRow | undefined> {
    return this.db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('run_id', '=', runId)
      .executeTakeFirst();
  }

  // --- jobs of a run ----------------------------------------------------------------------

  async saveJob(row: JobRow, db: Db = this.db): Promise<void> {
    const { run_id, job, ...rest } = row;
    await db
      .insertInto('_sluice_jobs')
      .values(row)
      .onConflict((oc) => oc.columns(['run_id', 'job']).doUpdateSet(rest))
      .execute();
  }

  async jobsOfRuns(runIds: readonly string[]): Promise<JobRow[]> {
    if (runIds.length === 0) return [];
    return this.db
      .selectFrom('_sluice_jobs')
      .selectAll()
      .where('run_id', 'in', runIds)
      .orderBy('started_at')
      .execute();
  }

  // --- phases of jobs (state version 5) ----------------------------------------------------

  async startPhase(row: PhaseRow): Promise<void> {
    await this.db.insertInto('_sluice_phases').values(row).execute();
  }

  async endPhase(row: PhaseRow, endedAt: string): Promise<void> {
    await this.db
      .updateTable('_sluice_phases')
      .set({ ended_at: endedAt })
      .where('run_id', '=', row.run_id)
      .where('job', '=', row.job)
      .where('phase', '=', row.phase)
      .where('started_at', '=', row.started_at)
      .execute();
  }

  // --- download attempts -----------------------------------------------------------------

  /** The newest attempt of a job that has not reached an end. */
  async openAttempt(pipeline: string, job: string): Promise<Attempt | undefined> {
    return this.db
      .selectFrom('_sluice_downloads')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('job', '=', job)
      .where('status', 'in', OPEN_STATUSES)
      .orderBy('requested_at', 'desc')
      .executeTakeFirst();
  }

  async attemptsOfRuns(runIds: readonly string[]): Promise<Attempt[]> {
    if (runIds.length === 0) return [];
    return this.db
      .selectFrom('_sluice_downloads')
      .selectAll()
      .where('run_id', 'in', runIds)
      .orderBy('requested_at')
      .execute();
  }

  /** A pipeline's attempts asked for at or after `since` (ISO), for its credit budgets. */
  async attemptsSince(pipeline: string, since: string): Promise<Attempt[]> {
    return this.db
      .selectFrom('_sluice_downloads')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('requested_at', '>=', since)
      .orderBy('requested_at')
      .execute();
  }

  /** Every download id any pipeline of this destination knows, so none is adopted twice. */
  async knownDownloadIds(): Promise<Set<string>> {
    const rows = await this.db
      .selectFrom('_sluice_downloads')
      .select('download_id')
      .where('download_id', 'is not', null)
      .execute();
    return new Set(rows.map((r) => r.download_id!));
  }

  async insertAttempt(attempt: Attempt, db: Db = this.db): Promise<void> {
    await db.insertInto('_sluice_downloads').values(attempt).execute();
  }

  async updateAttempt(
    attemptId: string,
    changes: Partial<Omit<Attempt, 'attempt_id' | 'pipeline' | 'job'>>,
    db: Db = this.db,
  ): Promise<void> {
    await db
      .updateTable('_sluice_downloads')
      .set(changes)
      .where('attempt_id', '=', attemptId)
      .execute();
  }

  // --- files and rejects ------------------------------------------------------------------

  async loadedFiles(downloadId: string): Promise<Map<number, FileRow>> {
    const rows = await this.db
      .selectFrom('_sluice_files')
      .selectAll()
      .where('download_id', '=', downloadId)
      .execute();
    return new Map(rows.map((r) => [Number(r.file_index), r]));
  }

  async insertFile(row: FileRow, db: Db = this.db): Promise<void> {
    await db.insertInto('_sluice_files').values(row).execute();
  }

  async insertRejects(rows: readonly RejectRow[], db: Db = this.db): Promise<void> {
    for (let i = 0; i < rows.length; i += 500) {
      await db
        .insertInto('_sluice_rejects')
        .values(rows.slice(i, i + 500).map(storableReject))
        .execute();
    }
  }

  async deleteRejects(downloadId: string, fileName: string, db: Db = this.db): Promise<void> {
    await db
      .deleteFrom('_sluice_rejects')
      .where('download_id', '=', downloadId)
      .where('file_name', '=', fileName)
      .execute();
  }

  // --- cursors ----------------------------------------------------------------------------

  async cursor(pipeline: string, job: string): Promise<CursorRow | undefined> {
    return this.db
      .selectFrom('_sluice_cursors')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('job', '=', job)
      .executeTakeFirst();
  }

  async cursors(pipeline: string): Promise<CursorRow[]> {
    return this.db
      .selectFrom('_sluice_cursors')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .orderBy('job')
      .execute();
  }

  async saveCursor(row: CursorRow, db: Db = this.db): Promise<void> {
    const { pipeline, job, ...rest } = row;
    await db
      .insertInto('_sluice_cursors')
      .values(row)
      .onConflict((oc) => oc.columns(['pipeline', 'job']).doUpdateSet(rest))
      .execute();
  }

  async clearCursor(pipeline: string, job: string, db: Db = this.db): Promise<void> {
    await db
      .deleteFrom('_sluice_cursors')
      .where('pipeline', '=', pipeline)
      .where('job', '=', job)
      .execute();
  }

  // --- leases -----------------------------------------------------------------------------

  /**
   * Makes `lease` the holder of its name, whoever held it before. An UPDATE where the row is
   * there (an upsert's update escapes DuckDB's check of write conflicts); the caller holds the
   * pipeline's lock, so no other run inserts it meanwhile.
   */
  async takeLease(lease: LeaseRow, db: Db = this.db): Promise<void> {
    const { name, ...rest } = lease;
    const updated = await db
      .updateTable('_sluice_leases')
      .set(rest)
      .where('name', '=', name)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) {
      await db.insertInto('_sluice_leases').values(lease).execute();
    }
  }

  /**
   * The holder of a lease, held against a takeover until the transaction ends as `hold` says
   * (see `DialectConnection.leaseHold`).
   */
  async lease(name: string, db: Db, hold: LeaseHold): Promise<LeaseRow | undefined> {
    if (hold === 'write') {
      // A write DuckDB counts: it lets an update that changes nothing pass as no conflict. So
      // the holder is changed and changed back; the row stays as it was.
      for (const holder of [sql<string>`holder || '~'`, sql<string>`left(holder, -1)`]) {
        await db.updateTable('_sluice_leases').set({ holder }).where('name', '=', name).execute();
      }
    }
    const query = db.selectFrom('_sluice_leases').selectAll().where('name', '=', name);
    return (hold === 'share' ? query.forShare() : query).executeTakeFirst();
  }

  // --- table owners -----------------------------------------------------------------------

  /** Who owns each table sluice made here (see `Destination.claimTables`). */
  async tableOwners(db: Db = this.db): Promise<TableOwnerRow[]> {
    return db
      .selectFrom('_sluice_tables')
      .selectAll()
      .orderBy('table_name')
      .orderBy('pipeline')
      .orderBy('job')
      .execute();
  }

  async addTableOwner(row: TableOwnerRow, db: Db = this.db): Promise<void> {
    await db.insertInto('_sluice_tables').values(row).execute();
  }

  async dropTableOwner(
    row: Pick<TableOwnerRow, 'table_name' | 'pipeline' | 'job'>,
    db: Db = this.db,
  ): Promise<void> {
    await db
      .deleteFrom('_sluice_tables')
      .where('table_name', '=', row.table_name)
      .where('pipeline', '=', row.pipeline)
      .where('job', '=', row.job)
      .execute();
  }

  // --- status -----------------------------------------------------------------------------

  /** Recent runs, their jobs, downloads and files, for `sluice status`. */
  async recent(pipeline: string, limit: number) {
    const runs = await this.db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .orderBy('started_at', 'desc')
      .limit(limit)
      .execute();
    const jobs = await this.jobsOfRuns(runs.map((r) => r.run_id));
    const downloads = await this.db
      .selectFrom('_sluice_downloads')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .orderBy('requested_at', 'desc')
      .limit(limit * 4)
      .execute();
    const ids = downloads.map((d) => d.download_id).filter((id): id is string => id !== null);
    const files =
      ids.length === 0
        ? []
        : await this.db
            .selectFrom('_sluice_files')
            .selectAll()
            .where('download_id', 'in', ids)
            .orderBy('loaded_at', 'desc')
            .execute();
    const rejects =
      ids.length === 0
        ? []
        : await this.db
            .selectFrom('_sluice_rejects')
            .select(['download_id', (eb) => eb.fn.countAll<number>().as('count')])
            .where('download_id', 'in', ids)
            .groupBy('download_id')
            .execute();
    const cursors = await this.cursors(pipeline);
    return { runs, jobs, downloads, files, rejects, cursors };
  }
}
