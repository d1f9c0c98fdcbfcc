import type { Kysely } from 'kysely';
import { plainRows } from '../schema/copy-text.js';
import { packedColumns, packRows } from '../schema/plan.js';
import {
  type Column,
  type ColumnType,
  type PackedRows,
  type Row,
  selectPacked,
} from '../schema/types.js';
import { inexactRows, type RefusedRow } from './core/inexact-rows.js';
import { type ShapeInternals, TableShapes } from './core/table-shapes.js';
import type { FileRead, FileToRead, FileTransaction, WriteTarget } from './destination.js';
import { type BoundColumn, type Dialect, rowsInTableOrder, type TableRows } from './dialect.js';
import { DestinationError } from './errors.js';
import type { FileRow, RejectRow, StateStore } from './state-store.js';
import type { StateDatabase } from './state-tables.js';

export type { RefusedRow } from './core/inexact-rows.js';

/** What a transaction needs of its loader. */
export interface LoaderInternals<C> extends ShapeInternals<C> {
  readonly store: StateStore;
}

/**
 * One transaction of a loader (a file's rows, a job's end, or tables made up front), with one
 * job: the rows and state rows that commit together. It writes rows (each value the database
 * refuses handed back, the batch going on without it), deletes the child rows of re-loaded
 * parents, and records the file and its rejects. The tables' columns and indexes are its
 * `shapes`' (`TableShapes`).
 */
export class LoaderTransaction<C> implements FileTransaction {
  /** The shape of the tables this transaction touches: what the loader learns at its commit. */
  readonly shapes: TableShapes<C>;

  constructor(
    readonly loader: LoaderInternals<C>,
    readonly conn: C,
    readonly db: Kysely<StateDatabase>,
    /**
     * Whether other files are loaded beside this one (see `FileOptions`): then a table it would
     * make or change is refused with SLUICE_DESTINATION_CONFLICT instead.
     */
    readonly besideOthers: () => boolean = () => false,
  ) {
    this.shapes = new TableShapes(loader, conn, besideOthers);
  }

  get #dialect(): Dialect<C> {
    return this.loader.dialect;
  }

  /** Makes the target's table hold `wanted` columns (see `TableShapes.ensure`). */
  ensure(target: WriteTarget, wanted: Iterable<Column>): Promise<Map<string, ColumnType>> {
    return this.shapes.ensure(target, wanted);
  }

  /** The file read by the database itself, where its writer can (see `FileTransaction`). */
  async readFile(target: WriteTarget, file: FileToRead): Promise<FileRead | undefined> {
    const table = this.loader.physical(target.table, target.stagedBy);
    if (this.#dialect.writer.readFile === undefined) return undefined;
    if ((await this.shapes.columns(table)) === undefined) return undefined;
    // The table as it is (with its key index, merging): the file changes no column.
    const columns = await this.ensure(target, []);
    const names = this.shapes.namesOf(table);
    const key = target.key.map((k) => names.physical(k));
    const into = { table, columns, names, mode: target.mode, key };
    return this.#dialect.writer.readFile(this.conn, into, file);
  }

  async write(
    target: WriteTarget,
    rows: Row[] | PackedRows,
    known?: ReadonlyMap<string, ColumnType>,
  ): Promise<RefusedRow[]> {
    let packed: PackedRows;
    let wanted: ReadonlyMap<string, ColumnType>;
    if (Array.isArray(rows)) {
      const made = packRows(rows, target.hints);
      packed = made.packed;
      wanted = known ?? made.columns;
    } else {
      packed = rows;
      wanted = known ?? packedColumns(plainRows(rows), target.hints);
    }
    const columns = await this.ensure(
      target,
      [...wanted].map(([name, type]) => ({ name, type })),
    );
    if (packed.count === 0) return [];
    const table = this.loader.physical(target.table, target.stagedBy);
    // Rows are written whole, every column of the table: a field now absent becomes NULL, and
    // (as values) one statement serves every batch of the table.
    const names = this.shapes.namesOf(table);
    const bound: BoundColumn[] = [...columns].map(([name, type]) => ({
      name,
      type,
      source: names.logical(name),
    }));
    const inexact = inexactRows(packed, bound, target.table);
    if (inexact.length > 0) {
      // The other rows are written as a batch of their own; each refused one is handed back.
      const out = new Set(inexact.map((r) => r.index));
      const kept = [...Array(packed.count).keys()].filter((i) => !out.has(i));
      const rest = await this.write(target, selectPacked(plainRows(packed), kept));
      return [...inexact, ...rest.map((r) => ({ ...r, index: kept[r.index]! }))];
    }
    const key = target.key.map((k) => names.physical(k));
    const insert = (some: TableRows) =>
      this.#dialect.writer.insert(this.conn, table, bound, some, target.mode, key);
    try {
      await this.#inSavepoint(() => insert(this.#dialect.writer.encode(packed, bound)));
      return [];
    } catch (error) {
      // Rows the writer's own encoding got wrong (cells out of line) are sluice's own fault,
      // never a value to keep aside.
      if (this.#dialect.writer.isEncodingFault(error)) throw error;
      if (!isValueError(this.#dialect.translate(error))) throw error;
    }
    return this.#writeOneByOne(target.table, packed, bound, insert);
  }

  /**
   * A value the database refuses (one sluice's checks did not foresee): the batch is written
   * row by row, as values, and each refused row is handed back to be kept aside with the reason.
   */
  async #writeOneByOne(
    logical: string,
    packed: PackedRows,
    bound: BoundColumn[],
    insert: (some: TableRows) => Promise<void>,
  ): Promise<RefusedRow[]> {
    const all = rowsInTableOrder(packed, bound);
    const refused: RefusedRow[] = [];
    const width = bound.length;
    for (let index = 0; index < all.count; index++) {
      const one = { count: 1, values: all.values.slice(index * width, (index + 1) * width) };
      try {
        await this.#inSavepoint(() => insert(one));
      } catch (error) {
        const translated = this.#dialect.translate(error);
        if (!isValueError(translated)) throw error;
        refused.push({ index, reason: `${logical}: ${(translated as Error).message}` });
      }
    }
    return refused;
  }

  /** Runs `work` so that its failure undoes only itself, not the file's transaction. */
  async #inSavepoint(work: () => Promise<void>): Promise<void> {
    await this.#dialect.writer.savepoint(this.conn, 'begin');
    try {
      await work();
    } catch (error) {
      await this.#dialect.writer.savepoint(this.conn, 'rollback');
      throw error;
    }
    await this.#dialect.writer.savepoint(this.conn, 'release');
  }

  async deleteWhereIn(
    target: Pick<WriteTarget, 'table' | 'stagedBy'>,
    column: string,
    values: readonly (string | number)[],
  ): Promise<void> {
    if (values.length === 0) return;
    const table = this.loader.physical(target.table, target.stagedBy);
    if ((await this.shapes.columns(table)) === undefined) return;
    const physical = this.shapes.namesOf(table).physical(column);
    await this.#dialect.writer.deleteWhereIn(this.conn, table, physical, values);
  }

  async addRejects(rows: readonly RejectRow[]): Promise<void> {
    await this.loader.store.downloads.insertRejects(rows, this.db);
  }

  async clearRejects(downloadId: string, fileName: string): Promise<void> {
    await this.loader.store.downloads.deleteRejects(downloadId, fileName, this.db);
  }

  async recordFile(row: FileRow): Promise<void> {
    await this.loader.store.downloads.insertFile(row, this.db);
  }
}

function isValueError(error: unknown): boolean {
  return error instanceof DestinationError && error.code === 'SLUICE_DESTINATION_VALUE';
}
