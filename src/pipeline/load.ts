import pLimit from 'p-limit';
import type { DownloadInfo, ResultFileRef } from '../client/types.js';
import { SluiceError } from '../errors.js';
import type { Attempt } from '../load/destination.js';
import { checkpoint } from './checkpoints.js';
import { isoAt } from './clock.js';
import { jobRow, type RunContext } from './context.js';
import { creditsFor } from './estimate.js';
import { cursorChange } from './incremental.js';
import { FileReader, parseWorkers } from './normalize.js';
import { inStage, type JobOutcome, markStage } from './outcome.js';
import type { JobSpec } from './spec.js';
import { type JobLoad, TooManyRejects, writeFile } from './write-file.js';

export type { JobLoad } from './write-file.js';

/**
 * The load stage: each result file in one transaction together with its `_sluice_files` row
 * (so a file is loaded exactly once, whatever crashes when), files handed out through p-limit;
 * then the job's end in one transaction of its own (replace swap, attempt status), the child
 * tables' parent links left until then indexed just before it (or after the swap).
 */

/** Result files loaded at once. The single SQLite writer and two cores keep it at one for now. */
const FILES_AT_ONCE = 1;

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
  if (staged.length > 0) await ctx.destination.prepareTables(staged, ctx.spec.name);
  if (live.length > 0) await ctx.destination.prepareTables(live);
  load.outcome.tables = defs.map((d) => ctx.destination.physicalName(d.name));
}

/** Loads every file of the download not yet loaded, each in one transaction. */
export async function loadFiles(load: JobLoad, attempt: Attempt, info: DownloadInfo) {
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
  progress.update(outcome.loaded + outcome.rejected);
  const pending = info.files.filter((file) => !loaded.has(file.index));
  const workers = parseWorkers(ctx.env, info.numRecords);
  const reader = new FileReader(
    ctx.client,
    downloadId,
    tables.plan,
    job.format,
    {
      workers,
      blockBytes: destination.capabilities.batchBytes,
      ...(destination.capabilities.copyText ? { copyText: { keep: tables.keysRead() } } : {}),
    },
    ctx.signal,
  );
  const limit = pLimit(FILES_AT_ONCE);
  let failed = false;
  const loadOne = async (file: ResultFileRef) => {
    if (failed) return;
    try {
      const counts = await loadFile(load, reader, file, downloadId);
      outcome.loaded += counts.rows;
      outcome.rejected += counts.rejects;
      outcome.files_loaded += 1;
      await checkpoint(ctx, 'file-committed', job.name, file.index);
      log.info(
        { file: file.name, rows: counts.rows, rejected: counts.rejects },
        `loaded ${file.name}: ${counts.rows} rows${counts.rejects ? `, ${counts.rejects} rejected` : ''}`,
      );
    } catch (error) {
      failed = true;
      limit.clearQueue();
      throw error;
    }
  };
  try {
    await Promise.all(pending.map((file) => limit(() => loadOne(file))));
  } finally {
    await reader.close();
  }
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

async function loadFile(
  load: JobLoad,
  reader: FileReader,
  file: ResultFileRef,
  downloadId: string,
): Promise<{ rows: number; rejects: number }> {
  const { ctx, log } = load;
  for (let attempt = 1; ; attempt++) {
    const parsing = await inStage('normalize', () => reader.open(file));
    let tooMany: TooManyRejects | undefined;
    try {
      return await inStage('load', () =>
        ctx.destination.loadFile(async (tx) => {
          try {
            return await writeFile(load, tx, file, downloadId, parsing.batches);
          } catch (error) {
            if (error instanceof TooManyRejects) tooMany = error;
            throw error;
          }
        }),
      );
    } catch (error) {
      if (tooMany) {
        // The file is rolled back; its rejects are kept so that the reasons can be read.
        const rows = tooMany.rejects;
        await ctx.destination.loadFile(async (tx) => {
          await tx.clearRejects(downloadId, file.name);
          await tx.addRejects(rows);
        });
        throw markStage(tooMany.error, 'load');
      }
      const code = (error as { code?: unknown }).code;
      if (code === 'SLUICE_DESTINATION_CONFLICT' && attempt < CONFLICT_RETRIES) {
        log.info(`${file.name}: ${(error as Error).message}; loading it again`);
        continue;
      }
      throw error;
    } finally {
      parsing.cancel();
    }
  }
}

/**
 * The end of a job, in one transaction: the replace swap and the attempt's last status; the
 * child tables' parent links left until now are indexed just before (or after the swap).
 */
export async function finishJob(
  load: JobLoad,
  attempt: Attempt | undefined,
  info: DownloadInfo | undefined,
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
  const status = info === undefined ? 'empty' : info.state === 'cancelled' ? 'timed_out' : 'loaded';
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
