import type { Kysely } from 'kysely';
import { Naming } from '../schema/naming.js';
import { batchColumns, hasChanges, planChanges, type TableDef } from '../schema/plan.js';
import type { Column, ColumnType, Row } from '../schema/types.js';
import type {
  Destination,
  FileTransaction,
  JobFinish,
  Lock,
  LockOptions,
  State,
  WriteTarget,
} from './destination.js';
import type { BoundColumn, Dialect, IndexRename } from './dialect.js';
import { DestinationError } from './errors.js';
import { type FileRow, type RejectRow, StateStore } from './state-store.js';
import { migrateStateTables, type StateDatabase, StateVersionError } from './state-tables.js';

/**
 * The one implementation of `Destination`, over a dialect: names, the schema's evolution as
 * batches arrive (inferred in `schema/`, run by the dialect), transactions, and the state.
 *
 * Column types are cached per table once described; a transaction works on its own copy and
 * hands it back only when it commits, so a rolled-back file leaves no column the table lacks.
 */
export class Loader<C> implements Destination {
  readonly naming: Naming;
  readonly state: State;
  readonly #dialect: Dialect<C>;
  readonly #store: StateStore;
  /** Committed column types per physical table. */
  readonly #tables = new Map<string, Map<string, ColumnType>>();
  /** Physical column name -> the row key it holds (they differ only for names over the limit). */
  readonly #sources = new Map<string, string>();

  constructor(dialect: Dialect<C>) {
    this.#dialect = dialect;
    this.naming = new Naming(dialect.capabilities.maxIdentifierBytes);
    this.#store = new StateStore(dialect.db);
    this.state = this.#guarded(this.#store);
  }

  get kind() {
    return this.#dialect.kind;
  }
  get description() {
    return this.#dialect.description;
  }
  get capabilities() {
    return this.#dialect.capabilities;
  }
  get readOnly() {
    return this.#dialect.readOnly;
  }

  async ensureState(): Promise<void> {
    await this.#guard(async () => {
      try {
        await this.#dialect.migrationTransaction((conn, db) =>
          migrateStateTables(db, { columns: (t) => this.#dialect.stateColumns(t, conn) }),
        );
      } catch (error) {
        if (error instanceof StateVersionError) {
          throw new DestinationError(error.message, 'SLUICE_STATE_VERSION', false);
        }
        throw error;
      }
    });
  }

  async hasState(): Promise<boolean> {
    return this.#guard(async () => (await this.#dialect.describe('_sluice_runs')) !== undefined);
  }

  lock(name: string, options: LockOptions): Promise<Lock> {
    return this.#guard(() => this.#dialect.lock(name, options));
  }

  physicalName(table: string): string {
    return this.naming.table(table);
  }

  #physical(table: string, stagedBy?: string): string {
    return stagedBy === undefined ? this.naming.table(table) : this.naming.staging(table, stagedBy);
  }

  /** The name of an index sluice keeps on a (physical) table. */
  indexName(table: string, purpose: 'key' | 'parent'): string {
    return this.naming.fit(`${table}__sluice_${purpose}`);
  }

  describeTable(table: string, stagedBy?: string): Promise<Column[] | undefined> {
    return this.#guard(() => this.#dialect.describe(this.#physical(table, stagedBy)));
  }

  async prepareTables(tables: readonly TableDef[], stagedBy?: string): Promise<void> {
    await this.#transaction(async (tx) => {
      for (const def of tables) {
        const target: WriteTarget = {
          table: def.name,
          mode: def.key.length > 0 ? 'merge' : 'append',
          key: def.key,
          hints: def.hints,
          ...(stagedBy === undefined ? {} : { stagedBy }),
          ...(def.parentColumn === undefined ? {} : { parentColumn: def.parentColumn }),
        };
        await tx.ensure(target, def.columns, true);
      }
    });
  }

  async dropStaging(tables: readonly string[], stagedBy: string): Promise<void> {
    await this.#transaction(async (tx) => {
      for (const table of tables) await tx.drop(this.naming.staging(table, stagedBy));
    });
  }

  loadFile<T>(work: (tx: FileTransaction) => Promise<T>): Promise<T> {
    return this.#transaction((tx) => work(tx));
  }

  async finishJob(finish: JobFinish): Promise<void> {
    await this.#transaction(async (tx) => {
      if (finish.swap) {
        for (const table of finish.swap.tables) {
          await tx.swapIn(table, finish.swap.stagedBy);
        }
      }
      if (finish.attempt) {
        await this.#store.updateAttempt(finish.attempt.attemptId, finish.attempt.changes, tx.db);
      }
      if (finish.clearCursor) {
        await this.#store.clearCursor(finish.clearCursor.pipeline, finish.clearCursor.job, tx.db);
      }
      if (finish.cursor) await this.#store.saveCursor(finish.cursor, tx.db);
    });
  }

  readPairs(table: string, columns: [string, string]): Promise<[unknown, unknown][]> {
    return this.#guard(() =>
      this.#dialect.readPairs(this.naming.table(table), [
        this.naming.column(columns[0]),
        this.naming.column(columns[1]),
      ]),
    );
  }

  async close(): Promise<void> {
    await this.#dialect.close();
  }

  // --- internals shared with transactions ---------------------------------------------------

  get dialect(): Dialect<C> {
    return this.#dialect;
  }

  get store(): StateStore {
    return this.#store;
  }

  committedColumns(table: string): Map<string, ColumnType> | undefined {
    return this.#tables.get(table);
  }

  /** A physical column name for a row key, remembered so that rows can be read back into it. */
  bind(name: string): string {
    const physical = this.naming.column(name);
    if (physical !== name) this.#sources.set(physical, name);
    return physical;
  }

  sourceOf(physical: string): string {
    return this.#sources.get(physical) ?? physical;
  }

  physical(table: string, stagedBy?: string): string {
    return this.#physical(table, stagedBy);
  }

  async #transaction<T>(work: (tx: LoaderTransaction<C>) => Promise<T>): Promise<T> {
    return this.#guard(async () => {
      let done: LoaderTransaction<C> | undefined;
      const result = await this.#dialect.transaction(async (conn, db) => {
        const tx = new LoaderTransaction(this, conn, db);
        const value = await work(tx);
        done = tx;
        return value;
      });
      // Committed: what the transaction learnt about its tables is now true for everyone.
      if (done) {
        for (const [table, columns] of done.tables) {
          if (columns === undefined) this.#tables.delete(table);
          else this.#tables.set(table, columns);
        }
      }
      return result;
    });
  }

  async #guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.#dialect.translate(error);
    }
  }

  /** The state store with every call's driver errors translated. */
  #guarded(store: StateStore): State {
    return new Proxy(store, {
      get: (target, property, receiver) => {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) =>
          this.#guard(() => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
      },
    }) as State;
  }
}

/** One transaction of a loader: a file's rows, a job's end, or tables made up front. */
class LoaderTransaction<C> implements FileTransaction {
  /** Tables this transaction described or changed (undefined: dropped), by physical name. */
  readonly tables = new Map<string, Map<string, ColumnType> | undefined>();
  readonly #indexed = new Set<string>();

  constructor(
    readonly loader: Loader<C>,
    readonly conn: C,
    readonly db: Kysely<StateDatabase>,
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
      const described = await this.#dialect.describe(table, this.conn);
      columns = described && new Map(described.map((c) => [c.name, c.type]));
    }
    this.tables.set(table, columns);
    return columns;
  }

  /**
   * Makes the target's table hold `wanted` columns (logical names): creates it with its
   * indexes, or adds and widens columns, after waiting for other writers of the table.
   */
  async ensure(
    target: WriteTarget,
    wanted: Iterable<Column>,
    checkIndexes = false,
  ): Promise<Map<string, ColumnType>> {
    const table = this.loader.physical(target.table, target.stagedBy);
    const bound = [...wanted].map((c) => ({ name: this.loader.bind(c.name), type: c.type }));
    let existing = await this.#columns(table);
    let changes = planChanges(existing && toColumns(existing), bound);
    if (hasChanges(changes) && !changes.create) {
      // Another transaction may have changed the table since it was described: wait for it.
      await this.#dialect.lockTable(this.conn, table);
      existing = await this.#columns(table, true);
      changes = planChanges(existing && toColumns(existing), bound);
    }
    if (!hasChanges(changes)) {
      await this.#ensureKeyIndex(table, target);
      if (checkIndexes && target.parentColumn !== undefined)
        await this.#ensureParentIndex(table, target);
      return existing!;
    }
    const limit = this.loader.capabilities.maxColumns;
    const count = (existing?.size ?? 0) + changes.add.length;
    if (count > limit) {
      throw new DestinationError(
        `table ${table} would need ${count} columns, more than the ${limit} ${this.loader.kind === 'postgres' ? 'PostgreSQL' : 'SQLite'} allows: use a view with fewer fields, or nested: tables`,
        'SLUICE_DESTINATION_LIMIT',
        false,
      );
    }
    const columns = new Map(existing);
    if (changes.create) {
      await this.#dialect.createTable(this.conn, table, withSource(this.loader, changes.add));
      for (const c of changes.add) columns.set(c.name, c.type);
      if (target.parentColumn !== undefined) {
        await this.#dialect.createIndex(this.conn, table, {
          name: this.loader.indexName(table, 'parent'),
          columns: [this.loader.bind(target.parentColumn)],
          unique: false,
        });
      }
    } else {
      if (changes.add.length > 0) {
        await this.#dialect.addColumns(this.conn, table, withSource(this.loader, changes.add));
        for (const c of changes.add) columns.set(c.name, c.type);
      }
      for (const change of changes.widen) {
        await this.#dialect.widenColumn(this.conn, table, change);
        columns.set(change.name, change.to);
      }
    }
    this.tables.set(table, columns);
    await this.#ensureKeyIndex(table, target);
    if (checkIndexes && !changes.create && target.parentColumn !== undefined) {
      await this.#ensureParentIndex(table, target);
    }
    return columns;
  }

  async #ensureKeyIndex(table: string, target: WriteTarget): Promise<void> {
    if (target.mode !== 'merge' || target.key.length === 0 || this.#indexed.has(table)) return;
    const name = this.loader.indexName(table, 'key');
    const columns = target.key.map((k) => this.loader.bind(k));
    const existing = await this.#dialect.indexes(table, this.conn);
    if (!existing.some((i) => i.name === name)) {
      try {
        await this.#dialect.createIndex(this.conn, table, { name, columns, unique: true });
      } catch (error) {
        const translated = this.#dialect.translate(error);
        if (
          translated instanceof DestinationError &&
          translated.code === 'SLUICE_DESTINATION_DATA'
        ) {
          throw new DestinationError(
            `cannot merge into ${table} on ${target.key.join(', ')}: the table already holds rows with the same ${target.key.join(', ')} (it was appended to before); remove the duplicates or use write: append`,
            'SLUICE_DESTINATION_DATA',
            false,
            error,
          );
        }
        throw error;
      }
    }
    this.#indexed.add(table);
  }

  /** Child tables made by older versions of sluice had no index on their parent link. */
  async #ensureParentIndex(table: string, target: WriteTarget): Promise<void> {
    const name = this.loader.indexName(table, 'parent');
    const existing = await this.#dialect.indexes(table, this.conn);
    if (existing.some((i) => i.name === name)) return;
    await this.#dialect.createIndex(this.conn, table, {
      name,
      columns: [this.loader.bind(target.parentColumn!)],
      unique: false,
    });
  }

  async write(target: WriteTarget, rows: Row[]): Promise<void> {
    const wanted = batchColumns(rows, target.hints);
    const columns = await this.ensure(
      target,
      [...wanted].map(([name, type]) => ({ name, type })),
    );
    if (rows.length === 0) return;
    const table = this.loader.physical(target.table, target.stagedBy);
    // Rows are written whole, every column of the table: a field now absent becomes NULL,
    // and one statement serves every batch of the table.
    const bound: BoundColumn[] = [...columns].map(([name, type]) => ({
      name,
      type,
      source: this.loader.sourceOf(name),
    }));
    await this.#dialect.insert(
      this.conn,
      table,
      bound,
      rows,
      target.mode,
      target.key.map((k) => this.loader.bind(k)),
    );
  }

  async deleteWhereIn(
    target: Pick<WriteTarget, 'table' | 'stagedBy'>,
    column: string,
    values: readonly (string | number)[],
  ): Promise<void> {
    if (values.length === 0) return;
    const table = this.loader.physical(target.table, target.stagedBy);
    if ((await this.#columns(table)) === undefined) return;
    await this.#dialect.deleteWhereIn(this.conn, table, this.loader.bind(column), values);
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

  async drop(table: string): Promise<void> {
    await this.#dialect.drop(this.conn, table);
    this.tables.set(table, undefined);
  }

  /** Swaps this pipeline's staging table of `logical` in for the live one. */
  async swapIn(logical: string, stagedBy: string): Promise<void> {
    const target = this.loader.physical(logical);
    const staging = this.loader.physical(logical, stagedBy);
    const columns = await this.#columns(staging, true);
    if (columns === undefined) {
      // Nothing was staged (an older run's table): the new table is an empty one.
      if ((await this.#columns(target)) !== undefined) await this.#dialect.clear(this.conn, target);
      return;
    }
    const renames: IndexRename[] = [];
    for (const index of await this.#dialect.indexes(staging, this.conn)) {
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
    await this.#dialect.swap(this.conn, staging, target, renames);
    this.tables.set(target, columns);
    this.tables.set(staging, undefined);
  }
}

function toColumns(map: Map<string, ColumnType>): Column[] {
  return [...map].map(([name, type]) => ({ name, type }));
}

function withSource<C>(loader: Loader<C>, columns: readonly Column[]): BoundColumn[] {
  return columns.map((c) => ({ ...c, source: loader.sourceOf(c.name) }));
}
