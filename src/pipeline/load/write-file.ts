import type { ResultFileRef } from '../../client/types.js';
import type { FileTransaction, WriteTarget } from '../../load/destination.js';
import type { PackedBatch, RejectedLine } from '../../records/types.js';
import { plainRows } from '../../schema/copy-text.js';
import { type PackedRows, type RowValue, unpackRow } from '../../schema/types.js';
import { checkpoint } from '../checkpoints.js';
import { isoAt } from '../clock.js';
import { markStage } from '../outcome.js';
import type { DownloadRecords } from './download-records.js';
import { checkMaxRejects, rejectOf, rejectRows } from './file-rejects.js';
import type { FileCounts, FilesInFlight } from './files-in-flight.js';
import { type JobLoad, targetOf } from './job-load.js';
import { writeRelated } from './write-related.js';
import { keyReader, reading, writeRows } from './write-rows.js';

/**
 * One result file inside its transaction: its batches written to the job's tables (related
 * rows of re-loaded parents replaced), its rejects kept, and its `_sluice_files` row last.
 * Beside it: the job's write targets (job-load.ts), the files written at once (files-in-flight.ts),
 * rejects and max_rejects (file-rejects.ts), rows written (write-rows.ts), related rows
 * (write-related.ts).
 */

/** What a file wrote; `downloadRecords`: the download's records, when its commit completes it. */
export interface FileWritten {
  rows: number;
  rejects: number;
  downloadRecords?: number;
}

/** A file being written: what stays the same from batch to batch. */
interface FileWrite {
  load: JobLoad;
  tx: FileTransaction;
  main: WriteTarget;
  constants: Readonly<Record<string, RowValue>>;
}

/**
 * One file's batches, written inside its transaction, with its state row last, once the file
 * is known to be whole (`download`: its records against the download's, which throws when it is
 * not). `counts` is this file's entry of `inFlight`, kept up to date batch by batch.
 */
export async function writeFile(
  load: JobLoad,
  tx: FileTransaction,
  file: ResultFileRef,
  downloadId: string,
  batches: AsyncIterable<PackedBatch>,
  inFlight: FilesInFlight,
  counts: FileCounts,
  download: DownloadRecords,
): Promise<FileWritten> {
  const { ctx, job, outcome, tables, log } = load;
  const loadedAt = isoAt(ctx.clock);
  const main = targetOf(load, tables.main);
  let rows = 0;
  let bytes = 0;
  let written = 0;
  /** The file's records: each is a row or a line the parser rejected (related rows are not). */
  let records = 0;
  const kept: RejectedLine[] = [];
  // A file loaded again (after a rollback) must not keep the rejects of its earlier try.
  await tx.clearRejects(downloadId, file.name);
  const constants = { _sluice_download_id: downloadId, _sluice_loaded_at: loadedAt };
  const write: FileWrite = { load, tx, main, constants };
  for await (const batch of inNormalize(batches)) {
    bytes = batch.bytesRead;
    records += batch.rows.count + batch.rejects.length;
    // Said by the batch that read the file's header: once per file.
    for (const warning of batch.warnings ?? []) {
      log.warn({ file: file.name }, `${file.name}: ${warning}`);
    }
    const { loaded, bad } = await writeBatch(write, batch);
    rows += loaded;
    if (bad.length > 0) {
      kept.push(...bad);
      await tx.addRejects(rejectRows(job.name, downloadId, file.name, bad, ctx));
    }
    counts.rows = rows;
    counts.rejects = kept.length;
    checkMaxRejects(load, inFlight, downloadId, file.name, kept);
    ctx.progress.update(
      job.name,
      outcome.loaded + outcome.rejected + inFlight.rows + inFlight.rejects,
    );
    if (++written === 1) await checkpoint(ctx, 'file-batch', job.name, file.index);
  }
  const downloadRecords = download.written(file, records);
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
  return {
    rows,
    rejects: kept.length,
    ...(downloadRecords === undefined ? {} : { downloadRecords }),
  };
}

/**
 * Writes one batch: its rows (merging, those with the whole key, the last of each key) and the
 * related rows of those written. `loaded`: the rows written; `bad`: the batch's rejects, the
 * parser's and the rows refused.
 */
async function writeBatch(
  write: FileWrite,
  batch: PackedBatch,
): Promise<{ loaded: number; bad: RejectedLine[] }> {
  const { load, tx, main, constants } = write;
  const merging = main.mode === 'merge';
  const packed = merging ? reading(batch.rows, main.key) : batch.rows;
  const bad = [...batch.rejects];
  /** The rows of the batch that are written, by their place in it. */
  let survivors: number[] = Array.from({ length: packed.count }, (_, i) => i);
  if (merging) survivors = withMergeKey(batch, packed, main.key, survivors, bad);
  const good = survivors.length;
  // Merging, a record that comes twice in a batch is the last one, children and all.
  if (merging) survivors = lastOfEachKey(packed, survivors, main.key);
  let refused = 0;
  if (survivors.length > 0) {
    const lineOf = (i: number) => batch.lines[i]!;
    const failed = await writeRows(tx, main, packed, batch.columns, survivors, constants, lineOf);
    if (failed.length > 0) {
      // Rows the database refused are kept aside, and their related rows are not written.
      const out = new Set(failed.map((f) => f.at));
      bad.push(...failed.map((f) => f.reject));
      survivors = survivors.filter((_, i) => !out.has(i));
      refused = failed.length;
    }
  }
  bad.push(...(await writeRelated(load, tx, batch, survivors, constants)));
  return { loaded: good - refused, bad };
}

/** Rows `indexes` that have every column of the merge key; the others go to `bad`. */
function withMergeKey(
  batch: PackedBatch,
  packed: PackedRows,
  key: readonly string[],
  indexes: number[],
  bad: RejectedLine[],
): number[] {
  const at = key.map((k) => packed.names.indexOf(k));
  const width = packed.names.length;
  return indexes.filter((i) => {
    const missing = at.findIndex((c) => c < 0 || (packed.values[i * width + c] ?? null) === null);
    if (missing < 0) return true;
    const reason = `missing merge key '${key[missing]}'`;
    bad.push(rejectOf(batch.lines[i]!, unpackRow(plainRows(packed), i), reason));
    return false;
  });
}

/** Batches from the parser; what it throws happened in the normalize stage. */
async function* inNormalize(batches: AsyncIterable<PackedBatch>): AsyncGenerator<PackedBatch> {
  const iterator = batches[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<PackedBatch>;
    try {
      next = await iterator.next();
    } catch (error) {
      throw markStage(error, 'normalize');
    }
    if (next.done) return;
    yield next.value;
  }
}

/** The last record of each key among rows `indexes`, in the order of their last appearance. */
function lastOfEachKey(packed: PackedRows, indexes: number[], key: readonly string[]): number[] {
  const keyOf = keyReader(
    packed,
    key.map((k) => packed.names.indexOf(k)),
  );
  const last = new Map<string, number>();
  for (const i of indexes) last.set(keyOf(i), i);
  if (last.size === indexes.length) return indexes;
  return indexes.filter((i) => last.get(keyOf(i)) === i);
}
