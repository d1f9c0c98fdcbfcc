import pLimit from 'p-limit';
import type { DownloadInfo, ResultFileRef } from '../client/types.js';
import { SluiceError } from '../errors.js';
import type { Attempt, FileTransaction, WriteTarget } from '../load/destination.js';
import type { Logger } from '../log.js';
import type { JobTables, RelatedTable } from '../records/tables.js';
import type { ParsedRow, RecordBatch, RejectedLine, Row } from '../records/types.js';
import { isoAt } from './clock.js';
import type { RunContext } from './context.js';
import { creditsFor } from './estimate.js';
import { FileReader, parseWorkers } from './normalize.js';
import { inStage, type JobOutcome, markStage } from './outcome.js';
import type { JobSpec } from './spec.js';

/**
 * The load stage: each result file in one transaction together with its `_sluice_files` row
 * (so a file is loaded exactly once, whatever crashes when), files handed out through p-limit;
 * then the job's end in one transaction of its own (replace swap, attempt status).
 */

/** Result files loaded at once. The single SQLite writer and two cores keep it at one for now. */
const FILES_AT_ONCE = 1;

/** A file whose transaction lost a deadlock or a race to change a table is loaded again. */
const CONFLICT_RETRIES = 3;

export interface JobLoad {
  ctx: RunContext;
  job: JobSpec;
  tables: JobTables;
  outcome: JobOutcome;
  log: Logger;
}

/** Where rows of `table` go for this job. */
function targetOf(load: JobLoad, table: string, related?: RelatedTable): WriteTarget {
  const { job, tables, ctx } = load;
  const mode: 'append' | 'merge' = related
    ? related.key.length > 0
      ? 'merge'
      : 'append'
    : job.write === 'merge' || tables.plan.enrichment
      ? 'merge'
      : 'append';
  return {
    table,
    mode,
    key: related ? related.key : job.key,
    hints: tables.hintsOf(table),
    ...(tables.staged(table) ? { stagedBy: ctx.spec.name } : {}),
    ...(related?.replaceBy ? { parentColumn: related.replaceBy.column } : {}),
  };
}

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
    workers,
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

class TooManyRejects extends Error {
  constructor(
    readonly error: SluiceError,
    readonly rejects: ReturnType<typeof rejectRows>,
  ) {
    super(error.message);
  }
}

/** One file's batches, written inside its transaction, with its state row last. */
async function writeFile(
  load: JobLoad,
  tx: FileTransaction,
  file: ResultFileRef,
  downloadId: string,
  batches: AsyncIterable<RecordBatch>,
): Promise<{ rows: number; rejects: number }> {
  const { ctx, job, outcome, tables } = load;
  const loadedAt = isoAt(ctx.clock);
  const main = targetOf(load, tables.main);
  const merging = main.mode === 'merge';
  let rows = 0;
  let bytes = 0;
  const kept: RejectedLine[] = [];
  // A file loaded again (after a rollback) must not keep the rejects of its earlier try.
  await tx.clearRejects(downloadId, file.name);
  for await (const batch of inNormalize(batches)) {
    bytes = batch.bytesRead;
    const good: ParsedRow[] = [];
    const bad = [...batch.rejects];
    for (const parsed of batch.rows) {
      const { line, row } = parsed;
      const missing = merging
        ? main.key.find((k) => row[k] === undefined || row[k] === null)
        : undefined;
      if (missing) {
        bad.push({
          line,
          raw: JSON.stringify(row).slice(0, 10_000),
          reason: `missing merge key '${missing}'`,
        });
        continue;
      }
      row._sluice_download_id = downloadId;
      row._sluice_loaded_at = loadedAt;
      good.push(parsed);
    }
    // Merging, a record that comes twice in a batch is the last one, children and all.
    const survivors = merging ? lastOfEachKey(good, main.key) : good;
    if (survivors.length > 0) {
      await tx.write(
        main,
        survivors.map((p) => p.row),
      );
    }
    rows += good.length;
    await writeRelated(load, tx, survivors, downloadId, loadedAt);
    if (bad.length > 0) {
      kept.push(...bad);
      const records = rejectRows(job.name, downloadId, file.name, bad, ctx);
      await tx.addRejects(records);
    }
    if (job.max_rejects !== undefined && outcome.rejected + kept.length > job.max_rejects) {
      throw new TooManyRejects(
        new SluiceError(
          `job '${job.name}': more rows rejected (${outcome.rejected + kept.length} so far) than max_rejects (${job.max_rejects}); ${file.name} was not loaded and the download is kept: raise max_rejects (or fix the data) and run again to load the rest without buying it again; the reasons are in _sluice_rejects`,
          { code: 'SLUICE_TOO_MANY_REJECTS' },
        ),
        rejectRows(job.name, downloadId, file.name, kept, ctx),
      );
    }
    ctx.progress.update(outcome.loaded + outcome.rejected + rows + kept.length);
  }
  await tx.recordFile({
    download_id: downloadId,
    file_index: file.index,
    file_name: file.name,
    table_name: job.table,
    rows_loaded: rows,
    rows_rejected: kept.length,
    bytes,
    loaded_at: isoAt(ctx.clock),
    run_id: ctx.runId,
  });
  return { rows, rejects: kept.length };
}

function rejectRows(
  job: string,
  downloadId: string,
  fileName: string,
  rejects: readonly RejectedLine[],
  ctx: RunContext,
) {
  const createdAt = isoAt(ctx.clock);
  return rejects.map((r) => ({
    download_id: downloadId,
    job,
    file_name: fileName,
    line: r.line,
    raw: r.raw,
    reason: r.reason,
    created_at: createdAt,
  }));
}

/** Batches from the parser; what it throws happened in the normalize stage. */
async function* inNormalize(batches: AsyncIterable<RecordBatch>): AsyncGenerator<RecordBatch> {
  const iterator = batches[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<RecordBatch>;
    try {
      next = await iterator.next();
    } catch (error) {
      throw markStage(error, 'normalize');
    }
    if (next.done) return;
    yield next.value;
  }
}

/** The last record of each key, in the order of their last appearance. */
function lastOfEachKey(rows: ParsedRow[], key: readonly string[]): ParsedRow[] {
  const last = new Map<string, number>();
  for (let i = 0; i < rows.length; i++) last.set(keyOf(rows[i]!.row, key), i);
  if (last.size === rows.length) return rows;
  return rows.filter((parsed, i) => last.get(keyOf(parsed.row, key)) === i);
}

function keyOf(row: Row, key: readonly string[]): string {
  return key.length === 1 ? String(row[key[0]!]) : key.map((k) => String(row[k])).join('\u0000');
}

/**
 * Writes a batch's related rows. Rows that belong to a parent loaded in this batch are deleted
 * first (child rows of a re-loaded property, a person's phones, a property's owner links), so
 * that no stale row survives a merge. Within a batch, the last row of an identity wins.
 */
async function writeRelated(
  load: JobLoad,
  tx: FileTransaction,
  parents: readonly ParsedRow[],
  downloadId: string,
  loadedAt: string,
): Promise<void> {
  const { tables, job } = load;
  const related = new Map<string, Map<string, Row>>();
  for (const parsed of parents) {
    if (!parsed.related) continue;
    for (const [name, rows] of parsed.related) {
      const table = tables.related(name);
      let byIdentity = related.get(name);
      if (byIdentity === undefined) {
        byIdentity = new Map();
        related.set(name, byIdentity);
      }
      for (const row of rows) {
        row._sluice_download_id = downloadId;
        row._sluice_loaded_at = loadedAt;
        byIdentity.set(tables.identityOf(table, row), row);
      }
    }
  }
  const merging = job.write === 'merge' || tables.plan.enrichment !== undefined;
  // Parents first: the people table before its phones, so keys are read from written rows.
  const ordered = tables
    .relatedTables()
    .sort((a, b) => Number(!!a.replaceBy) - Number(!!b.replaceBy));
  for (const table of ordered) {
    const rows = [...(related.get(table.name)?.values() ?? [])];
    const target = targetOf(load, table.name, table);
    if (table.replaceBy && (merging || !table.onlyWhenMerging)) {
      const { column, parentTable, parentKey } = table.replaceBy;
      const parentRows =
        parentTable === tables.main
          ? parents.map((p) => p.row)
          : [...(related.get(parentTable)?.values() ?? [])];
      const keys = new Set<string | number>();
      for (const row of parentRows) {
        const value = row[parentKey];
        if (typeof value === 'string' || typeof value === 'number') keys.add(value);
      }
      if (keys.size > 0) await tx.deleteWhereIn(target, column, [...keys]);
    }
    if (rows.length > 0) await tx.write(target, rows);
  }
}

/** The end of a job: the replace swap and the attempt's last status, in one transaction. */
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
  await ctx.destination.finishJob({
    ...(swap ? { swap } : {}),
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
