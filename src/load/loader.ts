import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import { SluiceError } from '../errors.js';
import { ColumnNames, Naming, type NamingStyle } from '../schema/naming.js';
import type { TableDef } from '../schema/plan.js';
import type { Column, ColumnType } from '../schema/types.js';
import { DashboardReads } from './dashboard-reads.js';
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
import { DestinationError } from './errors.js';
import { type LoaderInternals, LoaderTransaction } from './loader-transaction.js';
import { type LeaseRow, StateStore } from './state-store.js';
import type { StateDatabase } from './state-tables.js';
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
  /** Tables this handle made (physical names): no schema contract binds them yet. */
  readonly #made = new Set<string>();
  /** The lease this handle holds (see `lock`): checked before anything is written. */
  #fence: { name: string; holder: string } | undefined;
  /** The state tables are known to be there, at this version. */
  #stateReady = false;

  constructor(dialect: Dialect<C>, naming: NamingStyle = 'keep') {
    this.#dialect = dialect;
    this.naming = new Naming(dialect.capabilities.maxIdentifierBytes, naming);
    this.#store = new StateStore(dialect.db);
    this.state = this.#guarded(this.#store);
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

  /** The dashboard's reads (PostgreSQL: in the destination's schema; DuckDB: `main`). */
  reads(): DashboardReads {
    const schema = (this.#dialect.schema as { session?: { schema?: string } }).session?.schema;
    return new DashboardReads(this.#dialect.db, this.#dialect.name, schema);
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
    const holder = randomUUID();
    const by = `${options.holder ? `run ${options.holder}, ` : ''}process ${process.pid} on ${hostname()}`;
    try {
      await this.#guard(() =>
        this.#dialect.connection.transaction(async (conn, db) => {
          // A holder that lost its lock may be committing a file, the lease locked against a
          // takeover until it ends: it is alive and writing, so this run does not take over.
          await this.#dialect.connection.waitAtMost(conn, LEASE_WAIT_MS);
          await this.#store.takeLease({ name, holder, taken_at: new Date().toISOString(), by }, db);
        }),
      );
    } catch (error) {
      await held.release();
      if ((error as { code?: unknown }).code !== 'SLUICE_DESTINATION_BUSY') throw error;
      throw new SluiceError(
        `${held.where} was free, but the run that held it before is still committing to ${this.description}`,
        { code: 'SLUICE_LOCKED', cause: error },
      );
    }
    this.#fence = { name, holder };
    return {
      where: held.where,
      release: async () => {
        if (this.#fence?.holder === holder) this.#fence = undefined;
        await held.release();
      },
    };
  }

  /**
   * Runs `work` in a transaction that first checks this handle still holds its lease (see
   * `lock`); on PostgreSQL the lease row stays locked until the transaction ends, so no run can
   * take the lease over while one of this handle's transactions is under way.
   */
  async #fenced<T>(work: (conn: C, db: Kysely<StateDatabase>) => Promise<T>): Promise<T> {
    return this.#dialect.connection.transaction(async (conn, db) => {
      const fence = this.#fence;
      if (fence !== undefined) {
        const lease = await this.#store.lease(fence.name, db, this.#dialect.connection.leaseHold);
        if (lease?.holder !== fence.holder) throw lockLost(fence.name, this.description, lease);
      }
      return work(conn, db);
    });
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
    return this.#guard(() => this.#dialect.schema.describe(this.#physical(table, stagedBy)));
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
        await tx.ensure(target, def.columns);
      }
    });
  }

  async claimTables(
    decide: (owners: readonly TableOwnerRow[]) => TableOwnerChanges,
  ): Promise<void> {
    await this.ensureState();
    await this.#guard(() =>
      this.#fenced(async (conn, db) => {
        // Two pipelines claiming at once (PostgreSQL; elsewhere one writer): one after the other,
        // so that neither misses what the other records.
        await this.#dialect.schema.lockTable(conn, '_sluice_tables');
        const { add, drop } = decide(await this.#store.tableOwners(db));
        for (const row of drop) await this.#store.dropTableOwner(row, db);
        for (const row of add) await this.#store.addTableOwner(row, db);
      }),
    );
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
    return this.#tables.get(table);
  }

  madeHere(table: string): boolean {
    return this.#made.has(table);
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
      const result = await this.#fenced(async (conn, db) => {
        const tx = new LoaderTransaction(this, conn, db, besideOthers);
        const value = await work(tx);
        done = tx;
        return value;
      });
      // Committed: the tables the transaction changed, or described under their lock, are now
      // as it saw them, for everyone. A table it only described is learnt if unknown, never
      // overwritten: another transaction may have changed it and committed since.
      if (done) {
        for (const table of done.made) this.#made.add(table);
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

  /**
   * The state store with every call's driver errors translated, and its writes of a run's work
   * (downloads asked for and their progress, jobs) checked against the lease, in a transaction
   * of their own: a run that lost its lock neither buys nor records anything more.
   */
  #guarded(store: StateStore): State {
    const fenced: Partial<State> = {
      insertAttempt: (attempt) => this.#fenced((_, db) => store.insertAttempt(attempt, db)),
      updateAttempt: (id, changes) => this.#fenced((_, db) => store.updateAttempt(id, changes, db)),
      saveJob: (row) => this.#fenced((_, db) => store.saveJob(row, db)),
    };
    const reads: Partial<State> = {
      // Read-only looks at the state of an older sluice (before version 4) find none.
      tableOwners: async () =>
        (await this.#dialect.schema.describe('_sluice_tables')) === undefined
          ? []
          : store.tableOwners(),
    };
    return new Proxy(store, {
      get: (target, property, receiver) => {
        const write = fenced[property as keyof State] ?? reads[property as keyof State];
        if (write !== undefined) {
          return (...args: unknown[]) =>
            this.#guard(() => (write as (...a: unknown[]) => Promise<unknown>)(...args));
        }
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) =>
          this.#guard(() => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
      },
    }) as State;
  }
}

/** How long taking a lease waits for a holder's transaction that has it locked (PostgreSQL). */
const LEASE_WAIT_MS = 5000;

function lockLost(name: string, where: string, lease: LeaseRow | undefined): SluiceError {
  const what = name.startsWith('pipeline:')
    ? `pipeline '${name.slice('pipeline:'.length)}'`
    : `the lock ${name}`;
  const who = lease
    ? `${lease.by ?? 'another run'} took it over at ${lease.taken_at}`
    : 'its lease is gone';
  return new SluiceError(
    `this run no longer holds ${what} on ${where} (its lock ended while it ran: a PostgreSQL session that was closed, a lock file that was deleted) and ${who}; it stopped before committing anything more, and what it committed stays. The run that holds it now goes on; if none does, run again`,
    { code: 'SLUICE_LOCK_LOST' },
  );
}
