import type { Kysely } from 'kysely';
import { SluiceError } from '../errors.js';
import { plainRows } from '../schema/copy-text.js';
import { ColumnNames, type Naming } from '../schema/naming.js';
import {
  hasChanges,
  packedColumns,
  packRows,
  planChanges,
  type TableChanges,
  type Widening,
} from '../schema/plan.js';
import {
  type Column,
  type ColumnType,
  finerThanMicroseconds,
  type PackedRows,
  type Row,
  type RowValue,
  selectPacked,
  widen,
} from '../schema/types.js';
import type {
  DestinationCapabilities,
  FileRead,
  FileToRead,
  FileTransaction,
  WriteTarget,
} from './destination.js';
import {
  type BoundColumn,
  type Dialect,
  type IndexRename,
  rowsInTableOrder,
  type TableRows,
} from './dialect.js';
import { DestinationError } from './errors.js';
import type { FileRow, RejectRow, StateStore } from './state-store.js';
import type { StateDatabase } from './state-tables.js';

/** What a transaction needs of its loader. */
export interface LoaderInternals<C> {
  readonly capabilities: DestinationCapabilities;
  readonly dialect: Dialect<C>;
  readonly store: StateStore;
  readonly naming: Naming;
  committedColumns(table: string): Map<string, ColumnType> | undefined;
  /** Whether the loader made the (physical) table, in a transaction that committed. */
  madeHere(table: string): boolean;
  physical(table: string, stagedBy?: string): string;
  indexName(table: string, purpose: 'key' | 'parent'): string;
}

/** One transaction of a loader: a file's rows, a job's end, or tables made up front. */
export class LoaderTransaction<C> implements FileTransaction {
  /** Tables this transaction described or changed (undefined: dropped), by physical name. */
  readonly tables = new Map<string, Map<string, ColumnType> | undefined>();
  /**
   * Tables whose columns this transaction knows as they will be when it commits: those it
   * made, changed, dropped or swapped, and those it described holding their lock. A table it
   * only described may have been changed by another transaction since.
   */
  readonly known = new Set<string>();
  /** Tables this transaction made (physical names). */
  readonly made = new Set<string>();
  /** Tables whose key index, and whose parent-link index, this transaction has seen to. */
  readonly #indexed = new Set<string>();
  readonly #parentIndexed = new Set<string>();
  readonly #indexes = new Map<string, Promise<{ name: string }[]>>();
  /** Each table's columns for the row keys written to it, as of the columns seen (`#columns`). */
  readonly #names = new Map<string, ColumnNames>();

  constructor(
    readonly loader: LoaderInternals<C>,
    readonly conn: C,
    readonly db: Kysely<StateDatabase>,
    /**
     * Whether other files are loaded beside this one (see `FileOptions`): then a table it would
     * make or change is refused with SLUICE_DESTINATION_CONFLICT instead.
     */
    readonly besideOthers: () => boolean = () => false,
  ) {}

  get #dialect(): Dialect<C> {
    return this.loader.dialect;
  }

  async #columns(table: string, fresh = false): Promise<Map<string, ColumnType> | undefined> {
    if (!fresh && this.tables.has(table)) return this.tables.get(table);
    const committed = fresh ? undefined : this.loader.committedColumns(table);
    let columns: Map<string, ColumnType> | undefined;
    if (committed !== undefined) columns = new Map(committed);
    else {
      const described = await this.#dialect.schema.describe(table, this.conn);
      columns = described && new Map(described.map((c) => [c.name, c.type]));
    }
    this.tables.set(table, columns);
    // Worked out again from the columns as they are now (the same names: see ColumnNames).
    this.#names.delete(table);
    return columns;
  }

  /** The physical columns of a (physical) table for row keys, once its columns are seen. */
  #namesOf(table: string): ColumnNames {
    let names = this.#names.get(table);
    if (names === undefined) {
      names = new ColumnNames(this.loader.naming, this.tables.get(table)?.keys() ?? []);
      this.#names.set(table, names);
    }
    return names;
  }

  /**
   * Makes the target's table hold `wanted` columns (logical names): creates it with its
   * indexes, or adds and widens columns, after waiting for other writers of the table.
   */
  async ensure(target: WriteTarget, wanted: Iterable<Column>): Promise<Map<string, ColumnType>> {
    const table = this.loader.physical(target.table, target.stagedBy);
    const logical = [...wanted];
    const bind = () => {
      const names = this.#namesOf(table);
      return logical.map((c) => ({ name: names.physical(c.name), type: c.type }));
    };
    // The changes the rows ask for, as far as the target's schema contract lets them.
    const plan = async () => {
      const changes = planChanges(existing && toColumns(existing), bind());
      if (!hasChanges(changes) || target.contract === undefined) return changes;
      return this.#underContract(target, changes, existing, (c) => this.#namesOf(table).logical(c));
    };
    let existing = await this.#columns(table);
    let changes = await plan();
    if (hasChanges(changes) && this.besideOthers()) {
      // Another file of the run may have made the change already: looked at again, as committed.
      existing = await this.#columns(table, true);
      changes = await plan();
      if (hasChanges(changes) && this.besideOthers()) {
        throw new DestinationError(
          `table ${table} needs ${changes.create ? 'making' : 'new or wider columns'}, which waits for the files loaded beside this one`,
          'SLUICE_DESTINATION_CONFLICT',
        );
      }
    }
    if (hasChanges(changes) && !changes.create) {
      // Another transaction may have changed the table since it was described: wait for it.
      await this.#dialect.schema.lockTable(this.conn, table);
      existing = await this.#columns(table, true);
      this.known.add(table);
      changes = await plan();
    }
    if (!hasChanges(changes)) {
      await this.#ensureIndexes(table, target);
      return existing!;
    }
    const limit = this.loader.capabilities.maxColumns;
    const count = (existing?.size ?? 0) + changes.add.length;
    if (count > limit) {
      throw new DestinationError(
        `table ${table} would need ${count} columns, more than the ${limit} ${this.#dialect.displayName} allows: use a view with fewer fields, or nested: tables`,
        'SLUICE_DESTINATION_LIMIT',
      );
    }
    const columns = new Map(existing);
    if (changes.create) {
      this.made.add(table);
      await this.#dialect.schema.createTable(
        this.conn,
        table,
        this.#withSource(table, changes.add),
      );
      for (const c of changes.add) columns.set(c.name, c.type);
    } else {
      if (changes.add.length > 0) {
        await this.#dialect.schema.addColumns(
          this.conn,
          table,
          this.#withSource(table, changes.add),
        );
        for (const c of changes.add) columns.set(c.name, c.type);
      }
      for (const change of changes.widen) {
        await this.#dialect.schema.widenColumn(this.conn, table, change);
        columns.set(change.name, change.to);
      }
    }
    this.tables.set(table, columns);
    this.known.add(table);
    await this.#ensureIndexes(table, target);
    return columns;
  }

  /**
   * The changes a target's contract allows (see `TableContract`): new columns left out
   * (`discard`), or the job failed (`freeze`) naming the fields and why. The contract binds the
   * table as it was before this run; for a staging table, the live table it stands in for.
   */
  async #underContract(
    target: WriteTarget,
    changes: TableChanges,
    existing: Map<string, ColumnType> | undefined,
    logical: (physical: string) => string,
  ): Promise<TableChanges> {
    const contract = target.contract!;
    if (contract.newColumns === 'evolve' && contract.typeChanges === 'widen') return changes;
    const live = this.loader.physical(target.table);
    if (this.made.has(live) || this.loader.madeHere(live)) return changes;
    const staged = target.stagedBy !== undefined;
    const base = staged ? await this.#columns(live) : existing;
    if (base === undefined) return changes; // a new table: its data's columns
    let { add, widen: widened } = changes;
    if (staged && contract.typeChanges === 'freeze') {
      // A staging table takes the live table's type where that holds the values, so that the
      // swap changes no frozen type.
      const held = (name: string, type: ColumnType) => {
        const from = base.get(name);
        return from !== undefined && widen(from, type) === from ? from : type;
      };
      add = add.map((c) => ({ ...c, type: held(c.name, c.type) }));
      widened = widened
        .map((w) => ({ ...w, to: held(w.name, w.to) }))
        .filter((w) => w.to !== w.from);
    }
    const added = add.filter((c) => !base.has(c.name));
    const changed: Widening[] = [
      ...add,
      ...widened.map((w) => ({ name: w.name, type: w.to })),
    ].flatMap((c) => {
      const from = base.get(c.name);
      if (from === undefined || widen(from, c.type) === from) return [];
      return [{ name: c.name, from, to: widen(from, c.type) }];
    });
    const names = (columns: { name: string }[]) => columns.map((c) => logical(c.name));
    if (changed.length > 0 && contract.typeChanges === 'freeze') {
      const list = changed.map((w) => `${logical(w.name)} (${w.from} -> ${w.to})`).join(', ');
      throw contractError(
        `its schema contract freezes the column types of ${live} (schema: type_changes: freeze), and the data needs ${list}; to load it, set type_changes: widen, or pin the type with columns:`,
      );
    }
    changes = { ...changes, add, widen: widened };
    if (added.length === 0) return changes;
    if (contract.newColumns === 'freeze') {
      throw contractError(
        `its schema contract freezes the columns of ${live} (schema: new_columns: freeze), and the data has fields it has no column for: ${names(added).join(', ')}; to load them, set new_columns: evolve (or discard to leave them out)`,
      );
    }
    if (contract.newColumns === 'discard') {
      contract.onDiscard?.(live, names(added));
      const out = new Set(added.map((c) => c.name));
      return { ...changes, add: add.filter((c) => !out.has(c.name)) };
    }
    return changes;
  }

  /**
   * The table's key index (merges) and its parent-link index, unless that one is left to the
   * job's end (a table made before it keeps its own); looked for once per transaction.
   */
  async #ensureIndexes(table: string, target: WriteTarget): Promise<void> {
    await this.#ensureKeyIndex(table, target);
    if (target.parentIndexAtEnd || target.parentColumn === undefined) return;
    if (this.#parentIndexed.has(table)) return;
    await this.#ensureParentIndex(table, target.parentColumn);
    this.#parentIndexed.add(table);
  }

  async #ensureKeyIndex(table: string, target: WriteTarget): Promise<void> {
    if (target.mode !== 'merge' || target.key.length === 0 || this.#indexed.has(table)) return;
    const name = this.loader.indexName(table, 'key');
    const names = this.#namesOf(table);
    const columns = target.key.map((k) => names.physical(k));
    const existing = await this.#indexesOf(table);
    if (!existing.some((i) => i.name === name)) {
      try {
        await this.#dialect.schema.createIndex(this.conn, table, { name, columns, unique: true });
      } catch (error) {
        const translated = this.#dialect.translate(error);
        if (
          translated instanceof DestinationError &&
          translated.code === 'SLUICE_DESTINATION_DATA'
        ) {
          throw new DestinationError(
            `cannot merge into ${table} on ${target.key.join(', ')}: the table already holds rows with the same ${target.key.join(', ')} (it was appended to before); remove the duplicates or use write: append`,
            'SLUICE_DESTINATION_DATA',
            error,
          );
        }
        throw error;
      }
    }
    this.#indexed.add(table);
  }

  /**
   * Indexes a (physical) table on its parent link (`column`, logical), unless it is: child
   * tables made by older versions of sluice had no such index, and those of a table an append
   * or a replace makes are indexed at the job's end.
   */
  async #ensureParentIndex(table: string, column: string): Promise<void> {
    const name = this.loader.indexName(table, 'parent');
    const existing = await this.#indexesOf(table);
    if (existing.some((i) => i.name === name)) return;
    await this.#dialect.schema.createIndex(this.conn, table, {
      name,
      columns: [this.#namesOf(table).physical(column)],
      unique: false,
    });
    this.#indexes.set(table, Promise.resolve([...existing, { name }]));
  }

  /** Indexes a (logical) table's parent link at the job's end, if the table is there. */
  async indexParent(index: { table: string; column: string }): Promise<void> {
    const table = this.loader.physical(index.table);
    if ((await this.#columns(table)) === undefined) return;
    await this.#ensureParentIndex(table, index.column);
  }

  /** The indexes of a table, read once per transaction (sluice's own are made only here). */
  #indexesOf(table: string): Promise<{ name: string }[]> {
    let indexes = this.#indexes.get(table);
    if (indexes === undefined) {
      indexes = this.#dialect.schema.indexes(table, this.conn);
      this.#indexes.set(table, indexes);
    }
    return indexes;
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
    const names = this.#namesOf(table);
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
    // A value the database refuses (one sluice's checks did not foresee): the batch is written
    // row by row, as values, and each refused row is handed back to be kept aside with the
    // reason.
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
        refused.push({ index, reason: `${target.table}: ${(translated as Error).message}` });
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
    if ((await this.#columns(table)) === undefined) return;
    const physical = this.#namesOf(table).physical(column);
    await this.#dialect.writer.deleteWhereIn(this.conn, table, physical, values);
  }

  async addRejects(rows: readonly RejectRow[]): Promise<void> {
    await this.loader.store.insertRejects(rows, this.db);
  }

  async clearRejects(downloadId: string, fileName: string): Promise<void> {
    await this.loader.store.deleteRejects(downloadId, fileName, this.db);
  }

  async recordFile(row: FileRow): Promise<void> {
    await this.loader.store.insertFile(row, this.db);
  }

  /** The file read by the database itself, where its writer can (see `FileTransaction`). */
  async readFile(target: WriteTarget, file: FileToRead): Promise<FileRead | undefined> {
    const table = this.loader.physical(target.table, target.stagedBy);
    if (this.#dialect.writer.readFile === undefined) return undefined;
    if ((await this.#columns(table)) === undefined) return undefined;
    // The table as it is (with its key index, merging): the file changes no column.
    const columns = await this.ensure(target, []);
    const names = this.#namesOf(table);
    const key = target.key.map((k) => names.physical(k));
    const into = { table, columns, names, mode: target.mode, key };
    return this.#dialect.writer.readFile(this.conn, into, file);
  }

  async drop(table: string): Promise<void> {
    await this.#dialect.schema.drop(this.conn, table);
    this.tables.set(table, undefined);
    this.#names.delete(table);
    this.known.add(table);
    this.#forgetIndexes(table);
  }

  #forgetIndexes(table: string): void {
    this.#indexes.delete(table);
    this.#indexed.delete(table);
    this.#parentIndexed.delete(table);
  }

  /** Columns as written, with the row key each one's values come from. */
  #withSource(table: string, columns: readonly Column[]): BoundColumn[] {
    const names = this.#namesOf(table);
    return columns.map((c) => ({ ...c, source: names.logical(c.name) }));
  }

  /** Swaps this pipeline's staging table of `logical` in for the live one. */
  async swapIn(logical: string, stagedBy: string): Promise<void> {
    const target = this.loader.physical(logical);
    const staging = this.loader.physical(logical, stagedBy);
    const columns = await this.#columns(staging, true);
    if (columns === undefined) {
      // Nothing was staged (an older run's table): the new table is an empty one.
      if ((await this.#columns(target)) !== undefined)
        await this.#dialect.schema.clear(this.conn, target);
      return;
    }
    const renames: IndexRename[] = [];
    for (const index of await this.#dialect.schema.indexes(staging, this.conn)) {
      for (const purpose of ['key', 'parent'] as const) {
        if (index.name === this.loader.indexName(staging, purpose)) {
          renames.push({
            ...index,
            from: index.name,
            name: this.loader.indexName(target, purpose),
          });
        }
      }
    }
    await this.#dialect.schema.swap(this.conn, staging, target, renames);
    this.tables.set(target, columns);
    this.tables.set(staging, undefined);
    this.#names.delete(target);
    this.#names.delete(staging);
    this.known.add(target);
    this.known.add(staging);
    this.#forgetIndexes(target);
    this.#forgetIndexes(staging);
  }
}

/** A row a batch write refused, by its place in the batch. */
export interface RefusedRow {
  index: number;
  reason: string;
}

/**
 * The rows of `packed` holding a value their column would change rather than store: a bigint (an
 * integer past 2^53, records/numbers.ts) in a floating-point column (`real`: PostgreSQL's double
 * precision), which rounds it; a time finer than a microsecond in a timestamp column, which
 * PostgreSQL rounds and DuckDB cuts (SQLite, which keeps the text, refuses it alike, so that every
 * destination holds the same). Each is refused with its reason, by its place in `packed`, rather
 * than stored changed. Only such columns are looked at; rows as COPY text only when its writer
 * saw such a value in one.
 */
function inexactRows(
  packed: PackedRows,
  columns: readonly BoundColumn[],
  table: string,
): RefusedRow[] {
  const types = new Map<string, ColumnType>();
  for (const c of columns)
    if (c.type === 'real' || c.type === 'timestamp') types.set(c.source, c.type);
  if (types.size === 0) return [];
  const { text } = packed;
  if (text && ![...(text.bigints ?? []), ...(text.fineTimes ?? [])].some((n) => types.has(n))) {
    return [];
  }
  const plain = plainRows(packed);
  const width = plain.names.length;
  /** The reason of each row refused, by its place (its first such value says it). */
  const refused = new Map<number, string>();
  for (let c = 0; c < width; c++) {
    const name = plain.names[c]!;
    const type = types.get(name);
    if (type === undefined) continue;
    for (let r = 0; r < plain.count; r++) {
      if (refused.has(r)) continue;
      const why = changedBy(plain.values[r * width + c], type);
      if (why !== undefined) refused.set(r, `${table}: ${name}: ${why}`);
    }
  }
  return [...refused].sort(([a], [b]) => a - b).map(([index, reason]) => ({ index, reason }));
}

/** Why a column of `type` would change `value` (see `inexactRows`), or undefined. */
function changedBy(value: RowValue | undefined, type: ColumnType): string | undefined {
  if (type === 'real' && typeof value === 'bigint') {
    return `the number ${value} cannot be stored exactly: the column is floating point, which rounds an integer past 2^53`;
  }
  if (type === 'timestamp' && typeof value === 'string' && finerThanMicroseconds(value)) {
    return `the time ${value} cannot be stored exactly: a timestamp column holds microseconds, not finer`;
  }
  return undefined;
}

function isValueError(error: unknown): boolean {
  return error instanceof DestinationError && error.code === 'SLUICE_DESTINATION_VALUE';
}

function toColumns(map: Map<string, ColumnType>): Column[] {
  return [...map].map(([name, type]) => ({ name, type }));
}

function contractError(message: string): SluiceError {
  return new SluiceError(message, { code: 'SLUICE_SCHEMA_CONTRACT' });
}
