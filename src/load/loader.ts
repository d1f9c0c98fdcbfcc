import { Naming } from '../schema/naming.js';
import type { TableDef } from '../schema/plan.js';
import type { Column, ColumnType } from '../schema/types.js';
import type {
  Destination,
  FileOptions,
  FileTransaction,
  JobFinish,
  Lock,
  LockOptions,
  PairFilter,
  State,
  WriteTarget,
} from './destination.js';
import type { Dialect } from './dialect.js';
import { DestinationError } from './errors.js';
import { type LoaderInternals, LoaderTransaction } from './loader-transaction.js';
import { StateStore } from './state-store.js';
import { migrateStateTables, StateVersionError } from './state-tables.js';

/**
 * The one implementation of `Destination`, over a dialect: names, the schema's evolution as
 * batches arrive (inferred in `schema/`, run by the dialect), transactions, and the state.
 *
 * Column types are cached per table once described; a transaction works on its own copy and
 * hands back, only when it commits, the tables it changed or described under their lock (and
 * those the cache did not know), so a rolled-back file leaves no column the table lacks.
 */
export class Loader<C> implements Destination, LoaderInternals<C> {
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
          throw new DestinationError(error.message, 'SLUICE_STATE_VERSION');
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
          ...(def.parentIndexAtEnd ? { parentIndexAtEnd: true } : {}),
        };
        await tx.ensure(target, def.columns);
      }
    });
  }

  async dropStaging(tables: readonly string[], stagedBy: string): Promise<void> {
    await this.#transaction(async (tx) => {
      for (const table of tables) await tx.drop(this.naming.staging(table, stagedBy));
    });
  }

  loadFile<T>(work: (tx: FileTransaction) => Promise<T>, options: FileOptions = {}): Promise<T> {
    return this.#transaction((tx) => work(tx), options.besideOthers);
  }

  async finishJob(finish: JobFinish): Promise<void> {
    const swapped = new Set(finish.swap?.tables);
    const indexes = finish.parentIndexes ?? [];
    // Each live table's index in a transaction of its own, so that none holds the database for
    // all their sorts (a run stopped between two finds the first made and makes the others).
    for (const index of indexes.filter((i) => !swapped.has(i.table))) {
      await this.#transaction((tx) => tx.indexParent(index));
    }
    await this.#transaction(async (tx) => {
      if (finish.swap) {
        for (const table of finish.swap.tables) {
          await tx.swapIn(table, finish.swap.stagedBy);
        }
      }
      // A swapped-in table is indexed under its live name: SQLite would make a staging
      // table's index again at the swap, as index names cannot be renamed there.
      for (const index of indexes.filter((i) => swapped.has(i.table))) {
        await tx.indexParent(index);
      }
      if (finish.attempt) {
        await this.#store.updateAttempt(finish.attempt.attemptId, finish.attempt.changes, tx.db);
      }
      if (finish.job) await this.#store.saveJob(finish.job, tx.db);
      if (finish.clearCursor) {
        await this.#store.clearCursor(finish.clearCursor.pipeline, finish.clearCursor.job, tx.db);
      }
      if (finish.cursor) await this.#store.saveCursor(finish.cursor, tx.db);
      await finish.beforeCommit?.();
    });
  }

  readPairs(
    table: string,
    columns: [string, string],
    filter?: PairFilter,
  ): Promise<[unknown, unknown][]> {
    return this.#guard(() =>
      this.#dialect.readPairs(
        this.naming.table(table),
        [this.naming.column(columns[0]), this.naming.column(columns[1])],
        filter,
      ),
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

  async #transaction<T>(
    work: (tx: LoaderTransaction<C>) => Promise<T>,
    besideOthers?: () => boolean,
  ): Promise<T> {
    return this.#guard(async () => {
      let done: LoaderTransaction<C> | undefined;
      const result = await this.#dialect.transaction(async (conn, db) => {
        const tx = new LoaderTransaction(this, conn, db, besideOthers);
        const value = await work(tx);
        done = tx;
        return value;
      });
      // Committed: the tables the transaction changed, or described under their lock, are now
      // as it saw them, for everyone. A table it only described is learnt if unknown, never
      // overwritten: another transaction may have changed it and committed since.
      if (done) {
        for (const [table, columns] of done.tables) {
          if (done.known.has(table)) {
            if (columns === undefined) this.#tables.delete(table);
            else this.#tables.set(table, columns);
          } else if (columns !== undefined && !this.#tables.has(table)) {
            this.#tables.set(table, columns);
          }
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
