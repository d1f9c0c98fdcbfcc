import type { Kysely } from 'kysely';
import { ColumnNames, Naming, type NamingStyle } from '../schema/naming.js';
import type { TableDef } from '../schema/plan.js';
import type { Column, ColumnType } from '../schema/types.js';
import { CommittedTables } from './core/committed-tables.js';
import { DashboardReads } from './core/dashboard-reads.js';
import { LeaseFence } from './core/lease-fence.js';
import type {
  Destination,
  FileOptions,
  FileTransaction,
  JobFinish,
  Lock,
  LockOptions,
  PairFilter,
  State,
  TableContract,
  TableOwnerChanges,
  TableOwnerRow,
  WriteTarget,
} from './destination.js';
import type { Dialect } from './dialect.js';
import { DestinationError, translating } from './errors.js';
import { type LoaderInternals, LoaderTransaction } from './loader-transaction.js';
import { StateStore } from './state-store.js';
import type { StateDatabase } from './state-tables.js';
import { migrateStateTables, StateVersionError } from './state-tables.js';

/**
 * The one implementation of `Destination`, over a dialect: the destination handle, with one
 * job, to answer for the destination as a whole (its names, its state tables, reads for the
 * dashboard, its close) and to run each piece of work in a transaction of its own. What a
 * transaction does to tables and state is `LoaderTransaction`'s (and its `TableShapes`'); the
 * lease behind a lock is `LeaseFence`'s; what is known of the tables as committed is
 * `CommittedTables`'; the state tables' statements are `StateStore`'s.
 */
export class Loader<C> implements Destination, LoaderInternals<C> {
  readonly naming: Naming;
  readonly state: State;
  readonly #dialect: Dialect<C>;
  readonly #store: StateStore;
  readonly #lease: LeaseFence<C>;
  readonly #committed = new CommittedTables();
  /** The state tables are known to be there, at this version. */
  #stateReady = false;

  constructor(dialect: Dialect<C>, naming: NamingStyle = 'keep') {
    this.#dialect = dialect;
    this.naming = new Naming(dialect.capabilities.maxIdentifierBytes, naming);
    this.#store = new StateStore(dialect.db);
    this.#lease = new LeaseFence(dialect, this.#store);
    this.state = this.#lease.guardedState();
  }

  get kind() {
    return this.#dialect.name;
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

  /** The dashboard's reads. */
  reads(): DashboardReads {
    return new DashboardReads(this.#dialect.db, () => this.#dialect.schema.tableNames());
  }

  async ensureState(): Promise<void> {
    if (this.#stateReady) return;
    await this.#guard(async () => {
      try {
        await this.#dialect.connection.migrationTransaction((conn, db) =>
          migrateStateTables(db, { columns: (t) => this.#dialect.schema.stateColumns(t, conn) }),
        );
      } catch (error) {
        if (error instanceof StateVersionError) {
          throw new DestinationError(error.message, 'SLUICE_STATE_VERSION');
        }
        throw error;
      }
    });
    this.#stateReady = true;
  }

  async hasState(): Promise<boolean> {
    return this.#guard(
      async () => (await this.#dialect.schema.describe('_sluice_runs')) !== undefined,
    );
  }

  async lock(name: string, options: LockOptions): Promise<Lock> {
    await this.ensureState(); // the lease lives in the state tables
    const held = await this.#guard(() => this.#dialect.connection.lock(name, options));
    return this.#lease.take(name, options, held);
  }

  prepareReads(): void {
    this.#dialect.writer.prepareReads?.();
  }

  physicalName(table: string): string {
    return this.naming.table(table);
  }

  /** The name of an index sluice keeps on a (physical) table. */
  indexName(table: string, purpose: 'key' | 'parent'): string {
    return this.naming.fit(`${table}__sluice_${purpose}`);
  }

  describeTable(table: string, stagedBy?: string): Promise<Column[] | undefined> {
    return this.#guard(() => this.#dialect.schema.describe(this.physical(table, stagedBy)));
  }

  async prepareTables(
    tables: readonly TableDef[],
    stagedBy?: string,
    contract?: TableContract,
  ): Promise<void> {
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
          ...(contract === undefined ? {} : { contract }),
        };
        await tx.shapes.ensure(target, def.columns);
      }
    });
  }

  async claimTables(
    decide: (owners: readonly TableOwnerRow[]) => TableOwnerChanges,
  ): Promise<void> {
    await this.ensureState();
    const holdings = this.#store.holdings;
    await this.#guard(() =>
      this.#lease.transaction(async (conn, db) => {
        // Two pipelines claiming at once (a destination with several writers; elsewhere one
        // writer): one after the other, so that neither misses what the other records.
        await this.#dialect.schema.lockTable(conn, '_sluice_tables');
        const { add, drop } = decide(await holdings.tableOwners(db));
        for (const row of drop) await holdings.dropTableOwner(row, db);
        for (const row of add) await holdings.addTableOwner(row, db);
      }),
    );
  }

  async dropStaging(tables: readonly string[], stagedBy: string): Promise<void> {
    await this.#transaction(async (tx) => {
      for (const table of tables) await tx.shapes.drop(this.naming.staging(table, stagedBy));
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
      await this.#transaction((tx) => tx.shapes.indexParent(index));
    }
    await this.#transaction(async (tx) => {
      if (finish.swap) {
        for (const table of finish.swap.tables) {
          await tx.shapes.swapIn(table, finish.swap.stagedBy);
        }
      }
      // A swapped-in table is indexed under its live name: a dialect that cannot rename an
      // index would make a staging table's index again at the swap.
      for (const index of indexes.filter((i) => swapped.has(i.table))) {
        await tx.shapes.indexParent(index);
      }
      await this.#recordJobEnd(finish, tx.db);
      await finish.beforeCommit?.();
    });
  }

  /** The state rows of a job's end (attempt, job, cursor), in its transaction (`db`). */
  async #recordJobEnd(finish: JobFinish, db: Kysely<StateDatabase>): Promise<void> {
    const { runs, downloads, holdings } = this.#store;
    if (finish.attempt) {
      await downloads.updateAttempt(finish.attempt.attemptId, finish.attempt.changes, db);
    }
    if (finish.job) await runs.saveJob(finish.job, db);
    if (finish.clearCursor) {
      await holdings.clearCursor(finish.clearCursor.pipeline, finish.clearCursor.job, db);
    }
    if (finish.cursor) await holdings.saveCursor(finish.cursor, db);
  }

  readPairs(
    table: string,
    columns: [string, string],
    filter?: PairFilter,
  ): Promise<[unknown, unknown][]> {
    return this.#guard(async () => {
      const physical = this.naming.table(table);
      // The columns the rows were written to, as the table's columns say (see ColumnNames).
      const described = await this.#dialect.schema.describe(physical);
      const names = new ColumnNames(this.naming, described?.map((c) => c.name) ?? []);
      const [a, b] = columns.map((c) => names.physical(c)) as [string, string];
      return this.#dialect.writer.readPairs(physical, [a, b], filter);
    });
  }

  async close(): Promise<void> {
    await this.#dialect.connection.close();
  }

  // --- internals shared with transactions ---------------------------------------------------

  get dialect(): Dialect<C> {
    return this.#dialect;
  }

  get store(): StateStore {
    return this.#store;
  }

  committedColumns(table: string): Map<string, ColumnType> | undefined {
    return this.#committed.columns(table);
  }

  madeHere(table: string): boolean {
    return this.#committed.madeHere(table);
  }

  physical(table: string, stagedBy?: string): string {
    return stagedBy === undefined ? this.naming.table(table) : this.naming.staging(table, stagedBy);
  }

  /**
   * Runs `work` in a transaction fenced by the lease; once it commits, what it saw of the
   * tables is learnt (see `CommittedTables`).
   */
  async #transaction<T>(
    work: (tx: LoaderTransaction<C>) => Promise<T>,
    besideOthers?: () => boolean,
  ): Promise<T> {
    return this.#guard(async () => {
      let done: LoaderTransaction<C> | undefined;
      const result = await this.#lease.transaction(async (conn, db) => {
        const tx = new LoaderTransaction(this, conn, db, besideOthers);
        const value = await work(tx);
        done = tx;
        return value;
      });
      if (done) this.#committed.learn(done.shapes);
      return result;
    });
  }

  #guard<T>(work: () => Promise<T>): Promise<T> {
    return translating(this.#dialect, work);
  }
}
