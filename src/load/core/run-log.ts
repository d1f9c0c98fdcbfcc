import type { Kysely } from 'kysely';
import type { StateDatabase } from '../state-tables.js';

export type RunRow = StateDatabase['_sluice_runs'];
export type JobRow = StateDatabase['_sluice_jobs'];
export type PhaseRow = StateDatabase['_sluice_phases'];
export type AlertRow = StateDatabase['_sluice_alerts'];

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

type Db = Kysely<StateDatabase>;

/**
 * The log of what runs did: one job, the rows of runs, of their jobs, of the jobs' phases and of
 * the alerts sent about them (`_sluice_runs`, `_sluice_jobs`, `_sluice_phases`,
 * `_sluice_alerts`). A statement that must commit with the end of a job takes that
 * transaction's executor (`db`).
 */
export class RunLog {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  // --- runs -------------------------------------------------------------------------------

  async startRun(run: NewRun): Promise<void> {
    await this.#db
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
    return this.#db
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
    return this.#db
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
    return this.#db
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
    await this.#db.updateTable('_sluice_runs').set(end).where('run_id', '=', runId).execute();
  }

  /**
   * Runs of a pipeline still marked `running`. Called by a run that holds the pipeline's lock:
   * any other run still `running` died without finishing (killed, or its machine went away).
   */
  async runsLeftRunning(pipeline: string): Promise<RunRow[]> {
    return this.#db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('status', '=', 'running')
      .execute();
  }

  async latestRun(pipeline: string, before?: string): Promise<RunRow | undefined> {
    let query = this.#db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .orderBy('started_at', 'desc')
      .orderBy('run_id', 'desc');
    if (before !== undefined) query = query.where('run_id', '!=', before);
    return query.executeTakeFirst();
  }

  /** A pipeline's latest runs by when they started, for `sluice status`. */
  async recentRuns(pipeline: string, limit: number): Promise<RunRow[]> {
    return this.#db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .orderBy('started_at', 'desc')
      .limit(limit)
      .execute();
  }

  /** The alerts sent about a run (or their failures): see pipeline/notify/. */
  async recordAlerts(rows: readonly AlertRow[]): Promise<void> {
    if (rows.length > 0)
      await this.#db
        .insertInto('_sluice_alerts')
        .values([...rows])
        .execute();
  }

  /** A run and the runs that resumed it (their `resumes` names it). */
  async runChain(root: string): Promise<RunRow[]> {
    return this.#db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where((eb) => eb.or([eb('run_id', '=', root), eb('resumes', '=', root)]))
      .orderBy('started_at')
      .execute();
  }

  async run(runId: string): Promise<RunRow | undefined> {
    return this.#db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('run_id', '=', runId)
      .executeTakeFirst();
  }

  // --- jobs of a run ----------------------------------------------------------------------

  async saveJob(row: JobRow, db: Db = this.#db): Promise<void> {
    const { run_id, job, ...rest } = row;
    await db
      .insertInto('_sluice_jobs')
      .values(row)
      .onConflict((oc) => oc.columns(['run_id', 'job']).doUpdateSet(rest))
      .execute();
  }

  async jobsOfRuns(runIds: readonly string[]): Promise<JobRow[]> {
    if (runIds.length === 0) return [];
    return this.#db
      .selectFrom('_sluice_jobs')
      .selectAll()
      .where('run_id', 'in', runIds)
      .orderBy('started_at')
      .execute();
  }

  // --- phases of jobs (state version 5) ----------------------------------------------------

  async startPhase(row: PhaseRow): Promise<void> {
    await this.#db.insertInto('_sluice_phases').values(row).execute();
  }

  async endPhase(row: PhaseRow, endedAt: string): Promise<void> {
    await this.#db
      .updateTable('_sluice_phases')
      .set({ ended_at: endedAt })
      .where('run_id', '=', row.run_id)
      .where('job', '=', row.job)
      .where('phase', '=', row.phase)
      .where('started_at', '=', row.started_at)
      .execute();
  }
}
