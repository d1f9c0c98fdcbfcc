import { type Kysely, sql } from 'kysely';
import type { StateDatabase } from '../state-tables.js';
import { type Attempt, DownloadLedger, type FileRow, type RejectRow } from './download-ledger.js';
import { type AlertRow, type JobRow, type PhaseRow, RunLog, type RunRow } from './run-log.js';

/**
 * The dashboard's reads of the state tables (`sluice ui`, `sluice report`): paged and filtered
 * where a destination may hold many rows (10,000 runs, a million rejects), so that no page reads
 * a whole table. Reads only: every statement here is a SELECT. Reads the run itself asks too
 * (a run, a pipeline's latest, a run's attempts) are the stores' own.
 */

export interface RunFilter {
  pipeline?: string | undefined;
  status?: string | undefined;
  /** Started at or after (ISO 8601). */
  from?: string | undefined;
  /** Started before (ISO 8601). */
  until?: string | undefined;
}

export interface RejectFilter {
  /** Text that the reject's raw line, reason or file name contains. */
  search?: string | undefined;
  pipeline?: string | undefined;
  runId?: string | undefined;
}

export interface Paged<T> {
  rows: T[];
  total: number;
  /** There are more than `total` (a count that stopped at COUNT_CAP). */
  more?: boolean;
}

/** Where a filtered count of rejects stops. */
export const COUNT_CAP = 10_000;

export interface TableFreshness {
  table_name: string;
  last_loaded_at: string | null;
  rows_loaded: number;
}

type Db = Kysely<StateDatabase>;
// The pipeline's own tables, outside StateDatabase, read as they are.
// biome-ignore lint/suspicious/noExplicitAny: tables outside StateDatabase
type AnyDb = Kysely<any>;

export class DashboardReads {
  readonly #db: Db;
  readonly #tableNames: () => Promise<string[]>;
  readonly #runs: RunLog;
  readonly #downloads: DownloadLedger;

  /** `tableNames`: the destination's tables, as its dialect lists them. */
  constructor(db: Db, tableNames: () => Promise<string[]>) {
    this.#db = db;
    this.#tableNames = tableNames;
    this.#runs = new RunLog(db);
    this.#downloads = new DownloadLedger(db);
  }

  /** Every pipeline that ran here, by name. */
  async pipelines(): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('_sluice_runs')
      .select('pipeline')
      .distinct()
      .orderBy('pipeline')
      .execute();
    return rows.map((r) => r.pipeline);
  }

  latestRun(pipeline: string): Promise<RunRow | undefined> {
    return this.#runs.latestRun(pipeline);
  }

  async runs(filter: RunFilter, limit: number, offset: number): Promise<Paged<RunRow>> {
    let query = this.#db.selectFrom('_sluice_runs');
    if (filter.pipeline) query = query.where('pipeline', '=', filter.pipeline);
    if (filter.status) query = query.where('status', '=', filter.status);
    if (filter.from) query = query.where('started_at', '>=', filter.from);
    if (filter.until) query = query.where('started_at', '<', filter.until);
    const [rows, count] = await Promise.all([
      query
        .selectAll()
        .orderBy('started_at', 'desc')
        .orderBy('run_id', 'desc')
        .limit(limit)
        .offset(offset)
        .execute(),
      query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst(),
    ]);
    return { rows, total: Number(count?.n ?? 0) };
  }

  run(runId: string): Promise<RunRow | undefined> {
    return this.#runs.run(runId);
  }

  async jobs(runId: string): Promise<JobRow[]> {
    return this.#db
      .selectFrom('_sluice_jobs')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('started_at')
      .orderBy('job')
      .execute();
  }

  attempts(runId: string): Promise<Attempt[]> {
    return this.#downloads.attemptsOfRuns([runId]);
  }

  async files(downloadIds: readonly string[]): Promise<FileRow[]> {
    if (downloadIds.length === 0) return [];
    return this.#db
      .selectFrom('_sluice_files')
      .selectAll()
      .where('download_id', 'in', downloadIds)
      .orderBy('download_id')
      .orderBy('file_index')
      .execute();
  }

  /** Rejects, newest first, paged; the search matches the line, the reason or the file. */
  async rejects(filter: RejectFilter, limit: number, offset: number): Promise<Paged<RejectRow>> {
    let query = this.#db.selectFrom('_sluice_rejects');
    if (filter.search) {
      const like = `%${filter.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      query = query.where((eb) =>
        eb.or([
          eb('reason', 'like', sql<string>`${like} escape '\\'`),
          eb('raw', 'like', sql<string>`${like} escape '\\'`),
          eb('file_name', 'like', sql<string>`${like} escape '\\'`),
        ]),
      );
    }
    if (filter.pipeline) {
      const pipeline = filter.pipeline;
      query = query.where('download_id', 'in', (eb) =>
        eb
          .selectFrom('_sluice_downloads')
          .select('download_id')
          .where('pipeline', '=', pipeline)
          .where('download_id', 'is not', null)
          .$narrowType<{ download_id: string }>(),
      );
    }
    if (filter.runId) {
      const runId = filter.runId;
      query = query.where('download_id', 'in', (eb) =>
        eb
          .selectFrom('_sluice_downloads')
          .select('download_id')
          .where('run_id', '=', runId)
          .where('download_id', 'is not', null)
          .$narrowType<{ download_id: string }>(),
      );
    }
    const [rows, count] = await Promise.all([
      query
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('download_id')
        .orderBy('file_name')
        .orderBy('line')
        .limit(limit)
        .offset(offset)
        .execute(),
      // Filtered, the count stops at COUNT_CAP: counting every match of a million rows would
      // take longer than the page itself.
      filter.search || filter.pipeline
        ? this.#db
            .selectFrom(
              query
                .select(sql<number>`1`.as('one'))
                .limit(COUNT_CAP + 1)
                .as('c'),
            )
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirst()
        : query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst(),
    ]);
    const total = Number(count?.n ?? 0);
    return {
      rows: rows.map((r) => ({ ...r, line: Number(r.line) })),
      total: Math.min(total, COUNT_CAP),
      ...(total > COUNT_CAP ? { more: true } : {}),
    };
  }

  /** What each paid request cost, with when and for which pipeline and data type. */
  async credits(
    since: string,
  ): Promise<
    { pipeline: string; data_type: string | null; requested_at: string; credits: string }[]
  > {
    const rows = await this.#db
      .selectFrom('_sluice_downloads')
      .select(['pipeline', 'data_type', 'requested_at', 'credits'])
      .where('credits', 'is not', null)
      .where('requested_at', '>=', since)
      .orderBy('requested_at')
      .execute();
    return rows.filter((r): r is typeof r & { credits: string } => r.credits !== null);
  }

  /** Each table's last load and rows loaded, from the files loaded into it. */
  async freshness(): Promise<TableFreshness[]> {
    const rows = await this.#db
      .selectFrom('_sluice_files')
      .select((eb) => [
        'table_name',
        eb.fn.max('loaded_at').as('last_loaded_at'),
        eb.fn.sum<number>('rows_loaded').as('rows_loaded'),
      ])
      .groupBy('table_name')
      .orderBy('table_name')
      .execute();
    return rows.map((r) => ({
      table_name: r.table_name,
      last_loaded_at: r.last_loaded_at,
      rows_loaded: Number(r.rows_loaded ?? 0),
    }));
  }

  /** Rows in a table (physical name). */
  async rowCount(table: string): Promise<number> {
    const row = await (this.#db as AnyDb)
      .selectFrom(table)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** The tables of the destination (physical names), the state tables included. */
  tableNames(): Promise<string[]> {
    return this.#tableNames();
  }

  /** A run's jobs' phases (`_sluice_phases`, state version 5), or none before. */
  async phases(runId: string): Promise<PhaseRow[]> {
    if (!(await this.tableNames()).includes('_sluice_phases')) return [];
    return this.#db
      .selectFrom('_sluice_phases')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('started_at')
      .execute();
  }

  /** Alerts sent (`_sluice_alerts`; none in state tables older than version 5), newest first. */
  async alerts(limit: number): Promise<AlertRow[]> {
    const names = await this.tableNames();
    if (!names.includes('_sluice_alerts')) return [];
    return this.#db
      .selectFrom('_sluice_alerts')
      .selectAll()
      .orderBy('sent_at', 'desc')
      .limit(limit)
      .execute();
  }
}
