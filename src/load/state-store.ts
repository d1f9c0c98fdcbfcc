import type { Kysely } from 'kysely';
import { type Attempt, DownloadLedger, type FileRow } from './core/download-ledger.js';
import { type CursorRow, PipelineHoldings, type TableOwnerRow } from './core/pipeline-holdings.js';
import {
  type AlertRow,
  type JobRow,
  type NewRun,
  type PhaseRow,
  RunLog,
  type RunRow,
} from './core/run-log.js';
import type { State } from './destination.js';
import type { StateDatabase } from './state-tables.js';

export type { Attempt, FileRow, RejectRow } from './core/download-ledger.js';
export type { CursorRow, LeaseHold, TableOwnerRow } from './core/pipeline-holdings.js';
export type { AlertRow, JobRow, NewRun, PhaseRow, RunRow } from './core/run-log.js';

/**
 * The state tables, the same for every destination, as the run sees them (`State`): one job,
 * to put the three stores that keep them behind one face. Each store keeps one kind of thing:
 *
 * - `runs` (`RunLog`): what runs did: runs, their jobs, the jobs' phases, the alerts sent;
 * - `downloads` (`DownloadLedger`): what was bought and loaded: attempts, files, rejects;
 * - `holdings` (`PipelineHoldings`): what pipelines hold between runs: cursors, leases, the
 *   tables each owns.
 *
 * Statements that must commit with a file or with the end of a job are the stores' own, with
 * that transaction's executor; every statement here runs outside any transaction.
 */
export class StateStore implements State {
  readonly runs: RunLog;
  readonly downloads: DownloadLedger;
  readonly holdings: PipelineHoldings;

  constructor(db: Kysely<StateDatabase>) {
    this.runs = new RunLog(db);
    this.downloads = new DownloadLedger(db);
    this.holdings = new PipelineHoldings(db);
  }

  // --- runs, jobs, phases, alerts ---------------------------------------------------------

  startRun(run: NewRun): Promise<void> {
    return this.runs.startRun(run);
  }
  finishRun(runId: string, end: Parameters<RunLog['finishRun']>[1]): Promise<void> {
    return this.runs.finishRun(runId, end);
  }
  runsLeftRunning(pipeline: string): Promise<RunRow[]> {
    return this.runs.runsLeftRunning(pipeline);
  }
  latestRun(pipeline: string, before?: string): Promise<RunRow | undefined> {
    return this.runs.latestRun(pipeline, before);
  }
  runsByKey(pipeline: string, key: string): Promise<RunRow[]> {
    return this.runs.runsByKey(pipeline, key);
  }
  runsEndedSince(pipeline: string, since: string): Promise<RunRow[]> {
    return this.runs.runsEndedSince(pipeline, since);
  }
  runsOfBatches(pipeline: string, members: string, limit: number): Promise<RunRow[]> {
    return this.runs.runsOfBatches(pipeline, members, limit);
  }
  run(runId: string): Promise<RunRow | undefined> {
    return this.runs.run(runId);
  }
  runChain(root: string): Promise<RunRow[]> {
    return this.runs.runChain(root);
  }
  recordAlerts(rows: readonly AlertRow[]): Promise<void> {
    return this.runs.recordAlerts(rows);
  }
  saveJob(row: JobRow): Promise<void> {
    return this.runs.saveJob(row);
  }
  jobsOfRuns(runIds: readonly string[]): Promise<JobRow[]> {
    return this.runs.jobsOfRuns(runIds);
  }
  startPhase(row: PhaseRow): Promise<void> {
    return this.runs.startPhase(row);
  }
  endPhase(row: PhaseRow, endedAt: string): Promise<void> {
    return this.runs.endPhase(row, endedAt);
  }

  // --- attempts and files ----------------------------------------------------------------

  openAttempt(pipeline: string, job: string): Promise<Attempt | undefined> {
    return this.downloads.openAttempt(pipeline, job);
  }
  attemptsOfRuns(runIds: readonly string[]): Promise<Attempt[]> {
    return this.downloads.attemptsOfRuns(runIds);
  }
  attemptsSince(pipeline: string, since: string): Promise<Attempt[]> {
    return this.downloads.attemptsSince(pipeline, since);
  }
  knownDownloadIds(): Promise<Set<string>> {
    return this.downloads.knownDownloadIds();
  }
  insertAttempt(attempt: Attempt): Promise<void> {
    return this.downloads.insertAttempt(attempt);
  }
  updateAttempt(attemptId: string, changes: Parameters<State['updateAttempt']>[1]): Promise<void> {
    return this.downloads.updateAttempt(attemptId, changes);
  }
  loadedFiles(downloadId: string): Promise<Map<number, FileRow>> {
    return this.downloads.loadedFiles(downloadId);
  }

  // --- cursors and table owners ----------------------------------------------------------

  tableOwners(): Promise<TableOwnerRow[]> {
    return this.holdings.tableOwners();
  }
  cursor(pipeline: string, job: string): Promise<CursorRow | undefined> {
    return this.holdings.cursor(pipeline, job);
  }
  cursors(pipeline: string): Promise<CursorRow[]> {
    return this.holdings.cursors(pipeline);
  }

  // --- status -----------------------------------------------------------------------------

  /** Recent runs, their jobs, downloads and files, for `sluice status`. */
  async recent(pipeline: string, limit: number) {
    const runs = await this.runs.recentRuns(pipeline, limit);
    const jobs = await this.runs.jobsOfRuns(runs.map((r) => r.run_id));
    const downloads = await this.downloads.recentAttempts(pipeline, limit * 4);
    const ids = downloads.map((d) => d.download_id).filter((id): id is string => id !== null);
    const files = await this.downloads.filesOf(ids);
    const rejects = await this.downloads.rejectCounts(ids);
    const cursors = await this.holdings.cursors(pipeline);
    return { runs, jobs, downloads, files, rejects, cursors };
  }
}
