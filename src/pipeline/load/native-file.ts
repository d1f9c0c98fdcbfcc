import { FIELDS } from '../../catalog.js';
import type { ResultFileRef, ServiceClient } from '../../client/types.js';
import { FileReadFailed, type FileToRead } from '../../load/destination.js';
import type { JobTables } from '../../records/tables.js';
import { checkpoint } from '../checkpoints.js';
import { isoAt } from '../clock.js';
import type { RunContext } from '../context.js';
import type { DownloadRecords } from './download-records.js';
import type { FileCounts, FilesInFlight } from './files-in-flight.js';
import { type JobLoad, targetOf } from './job-load.js';
import { maxRecordBytes } from './normalize.js';
import type { FileWritten } from './write-file.js';

/**
 * Result files the destination reads itself (issue 41; docs/speed.md, "DuckDB reading the files
 * itself"), where its reading gives exactly the rows sluice's decoding gives: the destination
 * decides per file (`FileTransaction.readFile`), and sends any file it doubts back whole, to be
 * loaded the usual way.
 */

/**
 * Whether a job's files may be offered to the destination to read itself: one it can
 * (`capabilities.readsFiles`; NDJSON or CSV), `nested: json` with no pinned column, no
 * autotrace and no owner lookup (one table, a row per record: `JobTables.plainJson`), appended
 * or merged by its key (the last line of each key wins, as in sluice's own path).
 */
export function nativeLoadable(load: JobLoad): boolean {
  return readsItself(load.ctx, load.tables);
}

/** `nativeLoadable` by a job's tables (`plannedTables`, before the job's load begins). */
export function readsItself(ctx: Pick<RunContext, 'destination'>, tables: JobTables): boolean {
  return (
    ctx.destination.capabilities.readsFiles === true &&
    tables.plainJson &&
    (!tables.merging || (tables.plan.write === 'merge' && tables.plan.key.length > 0)) &&
    tables.relatedTables().length === 0
  );
}

/**
 * Offers one file to the destination to read itself, in one transaction with its
 * `_sluice_files` row; undefined when the destination sent it back, and nothing was written.
 */
export async function loadNatively(
  load: JobLoad,
  source: Pick<ServiceClient, 'openResultFile'>,
  file: ResultFileRef,
  downloadId: string,
  {
    inFlight,
    counts,
    records,
    next,
  }: {
    inFlight: FilesInFlight;
    counts: FileCounts;
    records: DownloadRecords;
    /** The job's next file, which the destination may fetch while it reads this one. */
    next?: ResultFileRef | undefined;
  },
): Promise<FileWritten | undefined> {
  const { ctx, job, outcome, tables } = load;
  const opener = (ref: ResultFileRef) => ({
    name: ref.name,
    open: () => source.openResultFile(downloadId, ref, { signal: ctx.signal }),
  });
  return ctx.destination
    .loadFile(async (tx) => {
      if (tx.readFile === undefined) return undefined;
      const loadedAt = isoAt(ctx.clock);
      const toRead: FileToRead = {
        ...opener(file),
        format: job.format,
        ...(next === undefined ? {} : { next: opener(next) }),
        fields: FIELDS[tables.plan.type],
        constants: { _sluice_download_id: downloadId, _sluice_loaded_at: loadedAt },
        maxRecordBytes: maxRecordBytes(ctx.env),
        sentBack: (why) =>
          load.log.debug({ file: file.name }, `${file.name}: loaded the usual way: ${why}`),
      };
      const read = await tx.readFile(targetOf(load, tables.main), toRead);
      if (read === undefined) return undefined;
      // A file loaded again (after a rollback) must not keep the rejects of its earlier try.
      await tx.clearRejects(downloadId, file.name);
      counts.rows = read.rows;
      ctx.progress.update(
        job.name,
        outcome.loaded + outcome.rejected + inFlight.rows + inFlight.rejects,
      );
      await checkpoint(ctx, 'file-batch', job.name, file.index);
      const downloadRecords = records.written(file, read.rows);
      await tx.recordFile({
        download_id: downloadId,
        file_index: file.index,
        file_name: file.name,
        table_name: job.table,
        rows_loaded: read.rows,
        rows_rejected: 0,
        bytes: read.bytes,
        loaded_at: isoAt(ctx.clock),
        run_id: ctx.runId,
      });
      return {
        rows: read.rows,
        rejects: 0,
        ...(downloadRecords === undefined ? {} : { downloadRecords }),
      };
    })
    .catch((error: unknown) => {
      // Rolled back: the file goes down the usual path.
      if (!(error instanceof FileReadFailed)) throw error;
      load.log.debug({ file: file.name }, `${file.name}: ${error.message}`);
      return undefined;
    });
}
