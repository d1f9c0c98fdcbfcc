import type { ResultFileRef } from '../client/types.js';
import { SluiceError } from '../errors.js';
import type { FileTransaction, TableContract, WriteTarget } from '../load/destination.js';
import type { Logger } from '../log.js';
import { jsonText } from '../records/numbers.js';
import type { JobTables, RelatedTable } from '../records/tables.js';
import type { PackedBatch, PackedRelated, RejectedLine, Row } from '../records/types.js';
import { plainRows } from '../schema/copy-text.js';
import { META_COLUMNS } from '../schema/plan.js';
import {
  type ColumnType,
  type PackedRows,
  type RowValue,
  selectPacked,
  unpackRow,
} from '../schema/types.js';
import { checkpoint } from './checkpoints.js';
import { isoAt } from './clock.js';
import type { RunContext } from './context.js';
import { contractOf } from './contract.js';
import type { DownloadRecords } from './download-records.js';
import { type JobOutcome, markStage } from './outcome.js';
import type { JobSpec } from './spec.js';

/**
 * One result file inside its transaction: its batches written to the job's tables (related
 * rows of re-loaded parents replaced), its rejects kept, and its `_sluice_files` row last.
 */

export interface JobLoad {
  ctx: RunContext;
  job: JobSpec;
  tables: JobTables;
  outcome: JobOutcome;
  log: Logger;
}

const META = META_COLUMNS.map((c) => [c.name, c.type] as const);

/** Where rows of `table` go for this job. */
export function targetOf(load: JobLoad, table: string, related?: RelatedTable): WriteTarget {
  const { job, tables, ctx } = load;
  const mode: 'append' | 'merge' = related
    ? related.key.length > 0
      ? 'merge'
      : 'append'
    : tables.merging
      ? 'merge'
      : 'append';
  return {
    table,
    mode,
    key: related ? related.key : job.key,
    hints: tables.hintsOf(table),
    ...(tables.staged(table) ? { stagedBy: ctx.spec.name } : {}),
    ...(related?.replaceBy ? { parentColumn: related.replaceBy.column } : {}),
    ...(related && tables.indexesParentAtEnd(related) ? { parentIndexAtEnd: true } : {}),
    ...withContract(load),
  };
}

function withContract(load: JobLoad): { contract?: TableContract } {
  const contract = contractOf(load);
  return contract === undefined ? {} : { contract };
}

/** max_rejects was crossed in a file: its transaction rolls back, its rejects are kept. */
export class TooManyRejects extends Error {
  constructor(
    readonly error: SluiceError,
    readonly rejects: ReturnType<typeof rejectRows>,
  ) {
    super(error.message);
  }
}

/** Rows and rejects a file has written so far, in a transaction not yet committed. */
export interface FileCounts {
  rows: number;
  rejects: number;
  /** Loaded alone: no other file is in flight, none starts until it ends. */
  alone: boolean;
}

/**
 * The files being written at once and what each has written so far, which the job's outcome
 * counts only once a file commits: the progress shown, and `max_rejects`, count them too.
 *
 * A file may also be loaded alone (one that must make or change a table, or that lost a
 * conflict, beside others): it waits for the files in flight to end (committed or rolled back),
 * and no file starts until it has ended. A file that is already the only one in flight may
 * become alone at once (`claimAlone`).
 */
export class FilesInFlight {
  readonly #files = new Set<FileCounts>();
  /** Files waiting to be loaded alone, or loaded alone. */
  #alone = 0;
  #waiting: (() => void)[] = [];
  /** Set when a file failed: no file starts after it. */
  #stopped = false;

  /** A file's entry, once it may start; undefined when the job stopped meanwhile. */
  async open(alone = false): Promise<FileCounts | undefined> {
    if (alone) {
      this.#alone++;
      while (this.#files.size > 0) await this.#change();
    } else {
      while (this.#alone > 0 && !this.#stopped) await this.#change();
    }
    if (this.#stopped) {
      if (alone) this.#settle(alone);
      return undefined;
    }
    const counts = { rows: 0, rejects: 0, alone };
    this.#files.add(counts);
    return counts;
  }

  /**
   * Makes `counts`' file alone if it is the only file in flight and none waits to be: then true,
   * and no file starts until it ends.
   */
  claimAlone(counts: FileCounts): boolean {
    if (counts.alone) return true;
    if (this.#files.size !== 1 || !this.#files.has(counts) || this.#alone > 0) return false;
    counts.alone = true;
    this.#alone++;
    return true;
  }

  close(counts: FileCounts): void {
    if (this.#files.delete(counts)) this.#settle(counts.alone);
  }

  /** A file failed: the files waiting to start do not. */
  stop(): void {
    this.#stopped = true;
    this.#settle(false);
  }

  get rows(): number {
    let n = 0;
    for (const f of this.#files) n += f.rows;
    return n;
  }

  get rejects(): number {
    let n = 0;
    for (const f of this.#files) n += f.rejects;
    return n;
  }

  #settle(alone: boolean): void {
    if (alone) this.#alone--;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }

  #change(): Promise<void> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }
}

/** What a file wrote; `downloadRecords`: the download's records, when its commit completes it. */
export interface FileWritten {
  rows: number;
  rejects: number;
  downloadRecords?: number;
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
  const merging = main.mode === 'merge';
  let rows = 0;
  let bytes = 0;
  let written = 0;
  /** The file's records: each is a row or a line the parser rejected (related rows are not). */
  let records = 0;
  const kept: RejectedLine[] = [];
  // A file loaded again (after a rollback) must not keep the rejects of its earlier try.
  await tx.clearRejects(downloadId, file.name);
  const constants = { _sluice_download_id: downloadId, _sluice_loaded_at: loadedAt };
  for await (const batch of inNormalize(batches)) {
    bytes = batch.bytesRead;
    records += batch.rows.count + batch.rejects.length;
    // Said by the batch that read the file's header: once per file.
    for (const warning of batch.warnings ?? []) {
      log.warn({ file: file.name }, `${file.name}: ${warning}`);
    }
    const packed = merging ? reading(batch.rows, main.key) : batch.rows;
    const bad = [...batch.rejects];
    /** The rows of the batch that are written, by their place in it. */
    let survivors: number[] = Array.from({ length: packed.count }, (_, i) => i);
    if (merging) {
      const at = main.key.map((k) => packed.names.indexOf(k));
      const width = packed.names.length;
      survivors = survivors.filter((i) => {
        const missing = at.findIndex(
          (c) => c < 0 || (packed.values[i * width + c] ?? null) === null,
        );
        if (missing < 0) return true;
        const reason = `missing merge key '${main.key[missing]}'`;
        bad.push(rejectOf(batch.lines[i]!, unpackRow(plainRows(packed), i), reason));
        return false;
      });
    }
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
    rows += good - refused;
    bad.push(...(await writeRelated(load, tx, batch, survivors, constants)));
    if (bad.length > 0) {
      kept.push(...bad);
      const records = rejectRows(job.name, downloadId, file.name, bad, ctx);
      await tx.addRejects(records);
    }
    counts.rows = rows;
    counts.rejects = kept.length;
    // The rejects of the files committed, of this one and of those written beside it.
    const rejected = outcome.rejected + inFlight.rejects;
    if (job.max_rejects !== undefined && rejected > job.max_rejects) {
      throw new TooManyRejects(
        new SluiceError(
          `job '${job.name}': more rows rejected (${rejected} so far) than max_rejects (${job.max_rejects}); ${file.name} was not loaded and the download is kept: raise max_rejects (or fix the data) and run again to load the rest without buying it again; the reasons are in _sluice_rejects`,
          { code: 'SLUICE_TOO_MANY_REJECTS' },
        ),
        rejectRows(job.name, downloadId, file.name, kept, ctx),
      );
    }
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

function rejectOf(line: number, row: Row, reason: string): RejectedLine {
  return { line, raw: jsonText(row).slice(0, 10_000), reason };
}

export function rejectRows(
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

/**
 * Rows `indexes` of `packed` written to `target`, with the load's own columns (`constants`);
 * the rows the database refused, by their place in `indexes`, as rejects. `columns`: the
 * parser's types for every row of `packed`, which hold when every row is written.
 */
async function writeRows(
  tx: FileTransaction,
  target: WriteTarget,
  packed: PackedRows,
  columns: ReadonlyMap<string, ColumnType>,
  indexes: readonly number[],
  constants: Readonly<Record<string, RowValue>>,
  lineOf: (row: number) => number,
): Promise<{ at: number; reject: RejectedLine }[]> {
  const whole = indexes.length === packed.count;
  const some: PackedRows = {
    ...(whole ? packed : selectPacked(plainRows(packed), indexes)),
    constants,
  };
  const failed = await tx.write(target, some, whole ? new Map([...columns, ...META]) : undefined);
  return failed.map((f) => ({
    at: f.index,
    reject: rejectOf(lineOf(indexes[f.index]!), unpackRow(plainRows(some), f.index), f.reason),
  }));
}

/**
 * The text of a row's values in columns `at` of `packed` (-1: a column it lacks), which tells
 * rows apart: equal texts, equal values.
 */
function keyReader(packed: PackedRows, at: readonly number[]): (row: number) => string {
  const { values } = packed;
  const width = packed.names.length;
  const text = (row: number, c: number) =>
    String(c < 0 ? undefined : (values[row * width + c] ?? null));
  if (at.length === 1) return (row) => text(row, at[0]!);
  return (row) => at.map((c) => text(row, c)).join('\u0000');
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

/**
 * Writes a batch's related rows: those of its written records. Rows that belong to a parent
 * loaded in this batch are deleted first (child rows of a re-loaded property, a person's phones,
 * a property's owner links), so that no stale row survives a merge. Within a batch, the last row
 * of an identity wins (see `lastOfEachIdentity`).
 */
async function writeRelated(
  load: JobLoad,
  tx: FileTransaction,
  batch: PackedBatch,
  parents: readonly number[],
  constants: Readonly<Record<string, RowValue>>,
): Promise<RejectedLine[]> {
  const { tables } = load;
  const written = new Uint8Array(batch.lines.length);
  for (const parent of parents) written[parent] = 1;
  /** Each related table's rows to write, by their place among its rows in the batch. */
  const related = new Map<string, { group: PackedRelated; rows: number[] }>();
  for (const group of batch.related ?? []) {
    const table = tables.related(group.table);
    const rows: number[] = [];
    for (let i = 0; i < group.rows.count; i++) if (written[group.parents[i]!]) rows.push(i);
    related.set(group.table, { group, rows: lastOfEachIdentity(table, group, rows) });
  }
  const refused: RejectedLine[] = [];
  // Parents first: the people table before its phones, so keys are read from written rows.
  const ordered = tables
    .relatedTables()
    .sort((a, b) => Number(!!a.replaceBy) - Number(!!b.replaceBy));
  for (const table of ordered) {
    const entry = related.get(table.name);
    const target = targetOf(load, table.name, table);
    if (table.replaceBy && tables.replacesByParent(table)) {
      const { column, parentTable, parentKey } = table.replaceBy;
      const parentRows = related.get(parentTable);
      const parentValues =
        parentTable === tables.main
          ? columnOf(batch.rows, parentKey, parents)
          : parentRows
            ? columnOf(parentRows.group.rows, parentKey, parentRows.rows)
            : [];
      const keys = new Set<string | number>();
      for (const value of parentValues) {
        if (typeof value === 'string' || typeof value === 'number') keys.add(value);
        // A key past 2^53 as its digits: both databases compare them to an integer exactly.
        else if (typeof value === 'bigint') keys.add(value.toString());
      }
      if (keys.size > 0) await tx.deleteWhereIn(target, column, [...keys]);
    }
    if (entry === undefined || entry.rows.length === 0) continue;
    const { group, rows } = entry;
    const lineOf = (i: number) => batch.lines[group.parents[i]!]!;
    const failed = await writeRows(tx, target, group.rows, group.columns, rows, constants, lineOf);
    refused.push(...failed.map((f) => f.reject));
  }
  return refused;
}

/**
 * Rows `indexes` of a related table less those an identity's later row replaces, each identity
 * in the place of its first row. A keyed table (people) is keyed by its key. A child table
 * takes the rows of the last record of each parent: a record that comes twice in a batch is the
 * last one, children and all (items of different parent items keep their own rows, whatever
 * their positions). Other rows (owner links) are identified by all their values.
 */
function lastOfEachIdentity(
  table: RelatedTable,
  group: PackedRelated,
  indexes: number[],
): number[] {
  const { names, values } = group.rows;
  const width = names.length;
  const parentColumn = table.replaceBy?.column;
  if (table.key.length === 0 && parentColumn !== undefined && names.includes('_position')) {
    // The last record of each parent value; most batches have each parent once.
    const at = names.indexOf(parentColumn);
    const parentOf = (i: number) => (at < 0 ? null : (values[i * width + at] ?? null));
    const lastRecord = new Map<RowValue, number>();
    let repeated = false;
    for (const i of indexes) {
      const value = parentOf(i);
      const record = group.parents[i]!;
      const before = lastRecord.get(value);
      if (before !== record) {
        if (before !== undefined) repeated = true;
        lastRecord.set(value, record);
      }
    }
    return repeated
      ? indexes.filter((i) => lastRecord.get(parentOf(i)) === group.parents[i])
      : indexes;
  }
  const identityOf = keyReader(
    group.rows,
    table.key.length > 0
      ? table.key.map((k) => names.indexOf(k))
      : names.flatMap((name, c) => (name.startsWith('_sluice_') ? [] : [c])),
  );
  const slots = new Map<string, number>();
  const out: number[] = [];
  for (const i of indexes) {
    const identity = identityOf(i);
    const slot = slots.get(identity);
    if (slot === undefined) {
      slots.set(identity, out.length);
      out.push(i);
    } else out[slot] = i;
  }
  return out;
}

/** The values of `column` in rows `indexes` of `packed`. */
function columnOf(rows: PackedRows, column: string, indexes: readonly number[]): RowValue[] {
  const packed = reading(rows, [column]);
  const at = packed.names.indexOf(column);
  const width = packed.names.length;
  return at < 0 ? [] : indexes.map((i) => packed.values[i * width + at] ?? null);
}

/**
 * `packed` with the values of `columns` to read: rows written as COPY text keep only those the
 * parse worker was told the writing thread reads (`JobTables.keysRead`), else all are read back.
 */
function reading(packed: PackedRows, columns: readonly string[]): PackedRows {
  const { text } = packed;
  if (text === undefined) return packed;
  const missing = columns.some((c) => !packed.names.includes(c) && text.names.includes(c));
  return missing ? plainRows(packed) : packed;
}
