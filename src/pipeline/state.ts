import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { StateDatabase } from '../load/destination.js';

/**
 * The `_sluice_*` state tables, which live in the destination itself, next to the data they
 * describe. A download attempt goes through these statuses:
 *
 *   requested -> started -> loading -> loaded
 *           \-> (crash)      \-> cancelled | failed | superseded | abandoned
 *
 * `requested` is written BEFORE the request that starts (and pays for) a download, and the id
 * is written as soon as the service answers, before the first poll. So whatever crashes when, a
 * later run finds either the id or the window in which the download was started, and re-attaches
 * instead of paying again.
 */

export type AttemptStatus =
  | 'requested'
  | 'started'
  | 'loading'
  | 'loaded'
  | 'cancelled'
  | 'failed'
  | 'superseded'
  | 'abandoned';

/** Statuses of an attempt a later run should pick up again. */
export const OPEN_STATUSES: AttemptStatus[] = ['requested', 'started', 'loading'];

export type Attempt = StateDatabase['_sluice_downloads'];

type Db = Kysely<StateDatabase> | Transaction<StateDatabase>;

export function nowIso(): string {
  return new Date().toISOString();
}

export class PipelineState {
  constructor(
    private readonly db: Kysely<StateDatabase>,
    readonly pipeline: string,
  ) {}

  async startRun(): Promise<string> {
    const runId = randomUUID();
    await this.db
      .insertInto('_sluice_runs')
      .values({
        run_id: runId,
        pipeline: this.pipeline,
        started_at: nowIso(),
        finished_at: null,
        status: 'running',
        summary: null,
      })
      .execute();
    return runId;
  }

  async finishRun(runId: string, status: string, summary: unknown): Promise<void> {
    await this.db
      .updateTable('_sluice_runs')
      .set({ finished_at: nowIso(), status, summary: JSON.stringify(summary) })
      .where('run_id', '=', runId)
      .execute();
  }

  /** The newest attempt of a job that has not reached an end. */
  async openAttempt(job: string): Promise<Attempt | undefined> {
    return this.db
      .selectFrom('_sluice_downloads')
      .selectAll()
      .where('pipeline', '=', this.pipeline)
      .where('job', '=', job)
      .where('status', 'in', OPEN_STATUSES)
      .orderBy('requested_at', 'desc')
      .executeTakeFirst();
  }

  /** Every download id this pipeline's state knows, so recovery never adopts one twice. */
  async knownDownloadIds(): Promise<Set<string>> {
    const rows = await this.db
      .selectFrom('_sluice_downloads')
      .select('download_id')
      .where('download_id', 'is not', null)
      .execute();
    return new Set(rows.map((r) => r.download_id!));
  }

  async recordRequest(init: {
    job: string;
    specHash: string;
    api: string;
    targetTable: string;
    loadTable: string;
    runId: string;
  }): Promise<Attempt> {
    const now = nowIso();
    const attempt: Attempt = {
      attempt_id: randomUUID(),
      pipeline: this.pipeline,
      job: init.job,
      spec_hash: init.specHash,
      api: init.api,
      download_id: null,
      status: 'requested',
      target_table: init.targetTable,
      load_table: init.loadTable,
      num_found: null,
      num_records: null,
      requested_at: now,
      started_at: null,
      updated_at: now,
      finished_at: null,
      run_id: init.runId,
      message: null,
    };
    await this.db.insertInto('_sluice_downloads').values(attempt).execute();
    return attempt;
  }

  async update(
    attempt: Attempt,
    changes: Partial<Omit<Attempt, 'attempt_id' | 'pipeline' | 'job'>>,
    db: Db = this.db,
  ): Promise<void> {
    const values = { ...changes, updated_at: nowIso() };
    await db
      .updateTable('_sluice_downloads')
      .set(values)
      .where('attempt_id', '=', attempt.attempt_id)
      .execute();
    Object.assign(attempt, values);
  }

  async loadedFiles(downloadId: string): Promise<Map<number, StateDatabase['_sluice_files']>> {
    const rows = await this.db
      .selectFrom('_sluice_files')
      .selectAll()
      .where('download_id', '=', downloadId)
      .execute();
    return new Map(rows.map((r) => [r.file_index, r]));
  }

  /** Recent runs, downloads and files for `sluice status`. */
  async recent(limit: number) {
    const runs = await this.db
      .selectFrom('_sluice_runs')
      .selectAll()
      .where('pipeline', '=', this.pipeline)
      .orderBy('started_at', 'desc')
      .limit(limit)
      .execute();
    const downloads = await this.db
      .selectFrom('_sluice_downloads')
      .selectAll()
      .where('pipeline', '=', this.pipeline)
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
    return { runs, downloads, files, rejects };
  }
}
