import type { Kysely } from 'kysely';
import type { StateDatabase } from '../state-tables.js';

export type Attempt = StateDatabase['_sluice_downloads'];
export type FileRow = StateDatabase['_sluice_files'];
export type RejectRow = StateDatabase['_sluice_rejects'];

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
 * The ledger of what was bought and loaded: one job, the rows of download attempts, of the
 * result files loaded from them and of the rows those files rejected (`_sluice_downloads`,
 * `_sluice_files`, `_sluice_rejects`). Statements that must commit with a file or with the end
 * of a job take that transaction's executor (`db`).
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
export class DownloadLedger {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  // --- download attempts -----------------------------------------------------------------

  /** The newest attempt of a job that has not reached an end. */
  async openAttempt(pipeline: string, job: string): Promise<Attempt | undefined> {
    return this.#db
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
    return this.#db
      .selectFrom('_sluice_downloads')
      .selectAll()
      .where('run_id', 'in', runIds)
      .orderBy('requested_at')
      .execute();
  }

  /** A pipeline's attempts asked for at or after `since` (ISO), for its credit budgets. */
  async attemptsSince(pipeline: string, since: string): Promise<Attempt[]> {
    return this.#db
      .selectFrom('_sluice_downloads')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('requested_at', '>=', since)
      .orderBy('requested_at')
      .execute();
  }

  /** A pipeline's latest attempts by when they were asked for, for `sluice status`. */
  async recentAttempts(pipeline: string, limit: number): Promise<Attempt[]> {
    return this.#db
      .selectFrom('_sluice_downloads')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .orderBy('requested_at', 'desc')
      .limit(limit)
      .execute();
  }

  /** Every download id any pipeline of this destination knows, so none is adopted twice. */
  async knownDownloadIds(): Promise<Set<string>> {
    const rows = await this.#db
      .selectFrom('_sluice_downloads')
      .select('download_id')
      .where('download_id', 'is not', null)
      .execute();
    return new Set(rows.map((r) => r.download_id!));
  }

  async insertAttempt(attempt: Attempt, db: Db = this.#db): Promise<void> {
    await db.insertInto('_sluice_downloads').values(attempt).execute();
  }

  async updateAttempt(
    attemptId: string,
    changes: Partial<Omit<Attempt, 'attempt_id' | 'pipeline' | 'job'>>,
    db: Db = this.#db,
  ): Promise<void> {
    await db
      .updateTable('_sluice_downloads')
      .set(changes)
      .where('attempt_id', '=', attemptId)
      .execute();
  }

  // --- files and rejects ------------------------------------------------------------------

  async loadedFiles(downloadId: string): Promise<Map<number, FileRow>> {
    const rows = await this.#db
      .selectFrom('_sluice_files')
      .selectAll()
      .where('download_id', '=', downloadId)
      .execute();
    return new Map(rows.map((r) => [Number(r.file_index), r]));
  }

  /** The files loaded from these downloads, newest first, for `sluice status`. */
  async filesOf(downloadIds: readonly string[]): Promise<FileRow[]> {
    if (downloadIds.length === 0) return [];
    return this.#db
      .selectFrom('_sluice_files')
      .selectAll()
      .where('download_id', 'in', downloadIds)
      .orderBy('loaded_at', 'desc')
      .execute();
  }

  async insertFile(row: FileRow, db: Db = this.#db): Promise<void> {
    await db.insertInto('_sluice_files').values(row).execute();
  }

  async insertRejects(rows: readonly RejectRow[], db: Db = this.#db): Promise<void> {
    for (let i = 0; i < rows.length; i += 500) {
      await db
        .insertInto('_sluice_rejects')
        .values(rows.slice(i, i + 500).map(storableReject))
        .execute();
    }
  }

  async deleteRejects(downloadId: string, fileName: string, db: Db = this.#db): Promise<void> {
    await db
      .deleteFrom('_sluice_rejects')
      .where('download_id', '=', downloadId)
      .where('file_name', '=', fileName)
      .execute();
  }

  /** How many rows each of these downloads rejected (those with none are left out). */
  async rejectCounts(
    downloadIds: readonly string[],
  ): Promise<{ download_id: string; count: number }[]> {
    if (downloadIds.length === 0) return [];
    return this.#db
      .selectFrom('_sluice_rejects')
      .select(['download_id', (eb) => eb.fn.countAll<number>().as('count')])
      .where('download_id', 'in', downloadIds)
      .groupBy('download_id')
      .execute();
  }
}

/**
 * A reject's text as every destination stores it: a NUL character (which a text type of some
 * servers cannot hold, and which is often why the row was rejected) is written as the six
 * characters `\u0000`. A reject that could not be stored would fail its whole file, every run
 * alike.
 */
function storableReject(row: RejectRow): RejectRow {
  if (!row.raw.includes('\u0000') && !row.reason.includes('\u0000')) return row;
  return { ...row, raw: withoutNul(row.raw), reason: withoutNul(row.reason) };
}

function withoutNul(text: string): string {
  return text.replaceAll('\u0000', '\\u0000');
}
