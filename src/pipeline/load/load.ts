import { availableParallelism } from 'node:os';
import pLimit from 'p-limit';
import { FILE_TRIES, isTransferFault } from '../../client/index.js';
import type { DownloadInfo, ResultFileRef, ServiceClient } from '../../client/types.js';
import { SluiceError } from '../../errors.js';
import type { Attempt } from '../../load/destination.js';
import type { ParseJob } from '../../records/index.js';
import { checkpoint } from '../checkpoints.js';
import { isoAt } from '../clock.js';
import { jobRow, type RunContext } from '../context.js';
import { creditsFor } from '../guard/figures.js';
import { inStage, type JobOutcome, markStage } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import { inSpan } from '../trace.js';
import { contractOf } from './contract.js';
import { DownloadRecords } from './download-records.js';
import { TooManyRejects } from './file-rejects.js';
import { FilesInFlight } from './files-in-flight.js';
import { cursorChange } from './incremental.js';
import type { JobLoad } from './job-load.js';
import { loadNatively, nativeLoadable } from './native-file.js';
import { FileReader, maxRecordBytes, parseWorkers } from './normalize.js';
import { type FileWritten, writeFile } from './write-file.js';

export type { JobLoad } from './job-load.js';

/**
 * The load stage: each result file in one transaction together with its `_sluice_files` row
 * (so a file is loaded exactly once, whatever crashes when), files handed out through p-limit,
 * several at once where the destination has several writers; then the job's end in one
 * transaction of its own (replace swap, attempt status), the child tables' parent links left
 * until then indexed just before it (or after the swap).
 */

/**
 * Result files loaded at once, each in its own transaction over its own connection, the parse
 * workers shared between them: `SLUICE_FILES_AT_ONCE` (at most the destination's writers), else
 * one for every two cores, so one on two cores: there the parse workers and the server already
 * take both cores, and a second file gained nothing but memory (docs/speed.md has the figures).
 * With more cores, each file's COPY has a server process of its own. Always one for a destination
 * with one writer, and for a job whose rows
 * depend on the order of its files: a merge (a later file's record wins), autotrace and owner
 * lookups (people are merged).
 */
export function filesAtOnce(
  env: NodeJS.ProcessEnv,
  writers: number,
  tables: { appendsOnly: boolean },
  cores = availableParallelism(),
): number {
  if (writers <= 1 || !tables.appendsOnly) return 1;
  const set = env.SLUICE_FILES_AT_ONCE;
  if (set !== undefined && set !== '') {
    const n = Number(set);
    return Number.isInteger(n) && n >= 1 ? Math.min(n, writers) : 1;
  }
  return Math.max(1, Math.min(writers, Math.floor(cores / 2)));
}

/** A file whose transaction lost a deadlock or a race to change a table is loaded again. */
const CONFLICT_RETRIES = 3;

/**
 * A new download of a `write: replace` job begins from empty staging tables: whatever an
 * abandoned download left in them goes first, before the new one is asked for.
 */
export async function dropStaging(load: JobLoad): Promise<void> {
  const { ctx, tables } = load;
  const staged = tables
    .definitions()
    .map((d) => d.name)
    .filter((name) => tables.staged(name));
  if (staged.length > 0) await ctx.destination.dropStaging(staged, ctx.spec.name);
}

/**
 * Makes the job's tables exist before its files are loaded, so that a download with no
 * records still leaves them. For `write: replace`, the job's own tables are made aside.
 */
export async function prepareTables(load: JobLoad): Promise<void> {
  const { ctx, tables } = load;
  const defs = tables.definitions();
  const staged = defs.filter((d) => tables.staged(d.name));
  const live = defs.filter((d) => !tables.staged(d.name));
  const contract = contractOf(load);
  if (staged.length > 0) await ctx.destination.prepareTables(staged, ctx.spec.name, contract);
  if (live.length > 0) await ctx.destination.prepareTables(live, undefined, contract);
  load.outcome.tables = defs.map((d) => ctx.destination.physicalName(d.name));
}

/**
 * Loads every file of the download not yet loaded, each in one transaction. `source`: where
 * the files are read (the service, unless a scrape's saved answer).
 */
// Over 80 lines on purpose: the files of one download go through one pool (FilesInFlight) whose
// start, stop on the first failure, and settling of what committed share its locals.
export async function loadFiles(
  load: JobLoad,
  attempt: Attempt,
  info: DownloadInfo,
  source: Pick<ServiceClient, 'openResultFile'> = load.ctx.client,
) {
  const { ctx, job, outcome, log, tables } = load;
  const { destination, progress } = ctx;
  const downloadId = attempt.download_id!;
  const loaded = await destination.state.loadedFiles(downloadId);
  await destination.state.updateAttempt(attempt.attempt_id, {
    status: 'loading',
    num_records: info.numRecords,
    stage: 'load',
    updated_at: isoAt(ctx.clock),
  });
  for (const row of loaded.values()) {
    outcome.loaded += Number(row.rows_loaded);
    outcome.rejected += Number(row.rows_rejected);
  }
  outcome.files_loaded = loaded.size;
  progress.phase(job.name, 'load', info.numRecords);
  progress.update(job.name, outcome.loaded + outcome.rejected);
  const pending = info.files.filter((file) => !loaded.has(file.index));
  const workers = parseWorkers(ctx.env, info.numRecords, ctx.parsers.idle);
  const files = Math.min(
    filesAtOnce(ctx.env, destination.capabilities.concurrentWriters, tables),
    Math.max(1, pending.length),
  );
  const { batchBytes } = destination.capabilities;
  const reader = new FileReader(
    source,
    downloadId,
    tables.plan,
    job.format,
    {
      workers,
      files,
      blockBytes: tables.appendsOnly ? batchBytes.appends : batchBytes.merges[job.format],
      ...(destination.capabilities.rowEncoding === 'values'
        ? {}
        : { encoding: { name: destination.capabilities.rowEncoding, keep: tables.keysRead() } }),
      maxRecordBytes: maxRecordBytes(ctx.env),
      spares: ctx.parsers,
    },
    ctx.signal,
  );
  const limit = pLimit(files);
  const inFlight = new FilesInFlight();
  const records = new DownloadRecords(downloadId, info.numRecords, info.files, loaded);
  const native = nativeLoadable(load);
  /** The first file to fail: no file starts after it, those under way finish. */
  let failure: { error: unknown } | undefined;
  const loadOne = async (file: ResultFileRef, next: ResultFileRef | undefined) => {
    try {
      const at = { 'sluice.file': file.name, 'sluice.download_id': downloadId };
      const counts = await inSpan('load', at, async (span) => {
        const done = await loadFile(load, reader, file, downloadId, {
          inFlight,
          shared: files > 1,
          records,
          ...(native ? { native: source, next } : {}),
        });
        span.setAttributes({
          'sluice.records': done?.rows,
          'sluice.records.rejected': done?.rejects,
        });
        return done;
      });
      if (counts === undefined) return; // another file failed before this one began
      outcome.files_loaded += 1;
      await checkpoint(ctx, 'file-committed', job.name, file.index);
      log.info(
        { file: file.name, rows: counts.rows, rejected: counts.rejects },
        `loaded ${file.name}: ${counts.rows} rows${counts.rejects ? `, ${counts.rejects} rejected` : ''}`,
      );
    } catch (error) {
      // The files still queued return at once (p-limit's clearQueue would leave them pending).
      inFlight.stop();
      if (failure === undefined) failure = { error };
      else log.warn({ file: file.name }, `${file.name}: ${(error as Error).message}`);
    }
  };
  try {
    // Every file under way ends (commits or rolls back) before the workers are closed.
    await Promise.all(pending.map((file, i) => limit(() => loadOne(file, pending[i + 1]))));
  } finally {
    await reader.close();
  }
  if (failure) throw failure.error;
  if (outcome.rejected > 0) {
    log.warn(
      `${outcome.rejected} rows rejected; they are kept in _sluice_rejects with their reasons`,
    );
  }
  if (outcome.loaded === 0 && outcome.rejected > 0) {
    throw markStage(
      new SluiceError(
        `job '${job.name}': every row (${outcome.rejected}) was rejected; see the reasons in _sluice_rejects`,
        { code: 'SLUICE_ALL_REJECTED' },
      ),
      'load',
    );
  }
}

/**
 * Loads one file in one transaction, again if it loses a conflict, fetched again if it came
 * damaged or short; once it commits, its rows and rejects count in the job's outcome. `shared`:
 * other files are loaded beside it; one that must change a table, or loses a conflict, is
 * loaded again alone. `records`: the download's records, which its last file checks. Undefined
 * when another file failed before this one began, or while it waited to be loaded again alone.
 */
// Over 80 lines on purpose: one retry loop whose branches (a conflict lost, a file damaged or
// short, too many rejects, a failure elsewhere) each decide the next attempt from the same
// local state (alone or shared, faults so far, the open parse job, which must be closed).
async function loadFile(
  load: JobLoad,
  reader: FileReader,
  file: ResultFileRef,
  downloadId: string,
  {
    inFlight,
    shared,
    records,
    native,
    next,
  }: {
    inFlight: FilesInFlight;
    shared: boolean;
    records: DownloadRecords;
    /** Where the file is fetched for the destination to read it itself (native-file.ts). */
    native?: Pick<ServiceClient, 'openResultFile'>;
    /** The job's next file, which the destination may fetch while it reads this one. */
    next?: ResultFileRef | undefined;
  },
): Promise<FileWritten | undefined> {
  const { ctx, log, outcome } = load;
  let alone = false;
  /** Offered to the destination to read itself until it sends the file back. */
  let offer = native;
  /** Transfer faults of this file so far. */
  let faults = 0;
  for (let attempt = 1; ; attempt++) {
    const counts = await inFlight.open(alone);
    if (counts === undefined) return undefined;
    let tooMany: TooManyRejects | undefined;
    let parsing: ParseJob | undefined;
    try {
      log.debug(
        { file: file.name, attempt, alone },
        `loading ${file.name}${attempt > 1 || faults > 0 ? ` again (try ${attempt + faults})` : ''}${alone ? ', alone' : ''}: fetching and parsing it into one transaction`,
      );
      let done =
        offer &&
        (await inStage('load', () =>
          loadNatively(load, offer!, file, downloadId, { inFlight, counts, records, next }),
        ));
      if (done !== undefined) {
        log.debug({ file: file.name }, `${file.name}: read by the destination itself`);
      } else {
        offer = undefined;
        // The file's request, until its body streams (read as the load writes it).
        const at = { 'sluice.file': file.name };
        parsing = await inSpan('fetch', at, () => inStage('normalize', () => reader.open(file)));
        const batches = parsing.batches;
        done = await inStage('load', () =>
          ctx.destination.loadFile(
            async (tx) => {
              try {
                return await writeFile(
                  load,
                  tx,
                  file,
                  downloadId,
                  batches,
                  inFlight,
                  counts,
                  records,
                );
              } catch (error) {
                if (error instanceof TooManyRejects) tooMany = error;
                throw error;
              }
            },
            { besideOthers: () => shared && !inFlight.claimAlone(counts) },
          ),
        );
      }
      // Committed: counted in the outcome at the moment it leaves the files in flight.
      inFlight.close(counts);
      records.committed(file);
      outcome.loaded += done.rows;
      outcome.rejected += done.rejects;
      if (done.downloadRecords !== undefined && done.downloadRecords > records.expected) {
        log.warn(
          `download ${downloadId}: its files hold ${done.downloadRecords} records, more than the ${records.expected} the service counts; all are loaded`,
        );
      }
      return done;
    } catch (error) {
      inFlight.close(counts);
      records.rolledBack(file);
      const code = (error as { code?: unknown }).code;
      const conflict = code === 'SLUICE_DESTINATION_CONFLICT' && attempt < CONFLICT_RETRIES;
      // Damaged or short: fetched again (FILE_TRIES in all), its transaction rolled back.
      const transfer = isTransferFault(error);
      if (transfer) faults++;
      const fetchAgain = transfer && faults < FILE_TRIES;
      const again = conflict || fetchAgain;
      // No file starts after one that fails (while its rejects are being kept, say).
      if (!again) inFlight.stop();
      if (tooMany) {
        // The file is rolled back; its rejects are kept so that the reasons can be read.
        const rows = tooMany.rejects;
        await ctx.destination.loadFile(async (tx) => {
          await tx.clearRejects(downloadId, file.name);
          await tx.addRejects(rows);
        });
        throw markStage(tooMany.error, 'load');
      }
      if (fetchAgain) {
        // Not a conflict: the tries a conflict gets are left as they were.
        attempt--;
        log.info(`${file.name}: ${(error as Error).message}; fetching it again`);
        continue;
      }
      if (conflict) {
        // A conflict beside other files (only ever the first try's) sends the file on alone,
        // and does not use up the tries a conflict with another session gets.
        if (shared && !counts.alone) attempt--;
        alone = shared;
        const how = alone ? ' alone, once the files beside it are loaded' : '';
        log.info(`${file.name}: ${(error as Error).message}; loading it again${how}`);
        continue;
      }
      if (transfer)
        throw markStage(stayedFaulty(error as SluiceError, file, faults, records), 'load');
      throw error;
    } finally {
      parsing?.cancel();
    }
  }
}

/** The error for a file that came damaged or short each of the `tries` times it was fetched. */
function stayedFaulty(
  error: SluiceError,
  file: ResultFileRef,
  tries: number,
  records: DownloadRecords,
): SluiceError {
  if (error.code === 'SLUICE_FILE_INCOMPLETE') return records.incomplete(file, tries);
  return new SluiceError(
    `${error.message}; fetched ${tries} times, it never came whole: it was not recorded as loaded and the download is kept: run again later to fetch it anew, without buying anything again`,
    { code: error.code, cause: error },
  );
}

/**
 * The end of a job, in one transaction: the replace swap and the attempt's last status; the
 * child tables' parent links left until now are indexed just before (or after the swap).
 */
export async function finishJob(
  load: JobLoad,
  attempt: Attempt | undefined,
  info: DownloadInfo | undefined,
  /** How the job ended, when not loaded (or empty, without a download). */
  ended?: 'timed_out' | 'cancelled',
): Promise<void> {
  const { ctx, job, tables, outcome } = load;
  const swap =
    job.write === 'replace'
      ? {
          tables: tables
            .definitions()
            .map((d) => d.name)
            .filter((name) => tables.staged(name)),
          stagedBy: ctx.spec.name,
        }
      : undefined;
  const now = isoAt(ctx.clock);
  const status = info === undefined ? 'empty' : (ended ?? 'loaded');
  const startedAt = attempt?.requested_at ?? now;
  const cursor = await cursorChange(load, attempt, info);
  await ctx.destination.finishJob({
    parentIndexes: tables.parentIndexesAtEnd(),
    ...(swap ? { swap } : {}),
    ...cursor,
    job: jobRow(ctx, job, { ...outcome, status, stage: 'finish' }, startedAt),
    beforeCommit: () => checkpoint(ctx, 'swap', job.name),
    ...(attempt && info
      ? {
          attempt: {
            attemptId: attempt.attempt_id,
            changes: {
              status: info.state === 'cancelled' ? 'cancelled' : 'loaded',
              finished_at: now,
              updated_at: now,
              stage: 'finish',
              credits: JSON.stringify(outcome.download_credits),
              // A scrape's records are in its tables now: the copy kept to load them goes.
              ...(attempt.kind === 'scrape' ? { payload: null } : {}),
            },
          },
        }
      : {}),
  });
}

/** What the download cost, and what of it this run spent (none for a re-attached download). */
export function countCredits(
  ctx: RunContext,
  job: JobSpec,
  attempt: Attempt,
  info: DownloadInfo,
  outcome: JobOutcome,
): void {
  outcome.downloaded = info.numRecords;
  outcome.download_credits = creditsFor(job, info.numRecords);
  outcome.credits = attempt.run_id === ctx.runId ? { ...outcome.download_credits } : {};
}
