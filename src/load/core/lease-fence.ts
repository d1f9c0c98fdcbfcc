import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import { SluiceError } from '../../errors.js';
import type { Lock, LockOptions, State } from '../destination.js';
import type { Dialect } from '../dialect.js';
import { translating } from '../errors.js';
import type { StateStore } from '../state-store.js';
import type { StateDatabase } from '../state-tables.js';
import type { LeaseRow } from './pipeline-holdings.js';

/** How long taking a lease waits for a holder's transaction that has it locked. */
const LEASE_WAIT_MS = 5000;

/**
 * The lease behind a handle's lock, with one job: a handle that lost its lock commits nothing
 * more. A lock can be lost while its holder lives (its server session ends, its lock file is
 * deleted) and another run take it; so taking a lock also makes the handle the holder of the
 * name's lease in the state tables (`take`), and every transaction of the handle (`transaction`)
 * and every write of a run's work to the state (`guardedState`) first checks that it still is,
 * or fails with SLUICE_LOCK_LOST.
 */
export class LeaseFence<C> {
  readonly #dialect: Dialect<C>;
  readonly #store: StateStore;
  /** The lease this handle holds (see `take`): checked before anything is written. */
  #fence: { name: string; holder: string } | undefined;

  constructor(dialect: Dialect<C>, store: StateStore) {
    this.#dialect = dialect;
    this.#store = store;
  }

  /**
   * Makes this handle the holder of `name`'s lease, once its lock (`held`) is taken; the lock
   * handed back ends the fence when it is released. Fails with SLUICE_LOCKED (the lock released)
   * when the run that held the lease is still committing.
   */
  async take(name: string, options: LockOptions, held: Lock): Promise<Lock> {
    const holder = randomUUID();
    const by = `${options.holder ? `run ${options.holder}, ` : ''}process ${process.pid} on ${hostname()}`;
    const connection = this.#dialect.connection;
    try {
      await translating(this.#dialect, () =>
        connection.transaction(async (conn, db) => {
          // A holder that lost its lock may be committing a file, the lease locked against a
          // takeover until it ends: it is alive and writing, so this run does not take over.
          await connection.waitAtMost(conn, LEASE_WAIT_MS);
          await this.#store.holdings.takeLease(
            { name, holder, taken_at: new Date().toISOString(), by },
            db,
          );
        }),
      );
    } catch (error) {
      await held.release();
      if ((error as { code?: unknown }).code !== 'SLUICE_DESTINATION_BUSY') throw error;
      throw new SluiceError(
        `${held.where} was free, but the run that held it before is still committing to ${this.#dialect.description}`,
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
   * `take`); where the dialect holds the lease row until the transaction ends (`leaseHold`), no
   * run can take the lease over while one of this handle's transactions is under way.
   */
  async transaction<T>(work: (conn: C, db: Kysely<StateDatabase>) => Promise<T>): Promise<T> {
    const connection = this.#dialect.connection;
    return connection.transaction(async (conn, db) => {
      const fence = this.#fence;
      if (fence !== undefined) {
        const lease = await this.#store.holdings.lease(fence.name, db, connection.leaseHold);
        if (lease?.holder !== fence.holder) {
          throw lockLost(fence.name, this.#dialect.description, lease);
        }
      }
      return work(conn, db);
    });
  }

  /**
   * The state store with every call's driver errors translated, and its writes of a run's work
   * (downloads asked for and their progress, jobs) checked against the lease, in a transaction
   * of their own: a run that lost its lock neither buys nor records anything more.
   */
  guardedState(): State {
    const store = this.#store;
    const fenced: Partial<State> = {
      insertAttempt: (attempt) =>
        this.transaction((_, db) => store.downloads.insertAttempt(attempt, db)),
      updateAttempt: (id, changes) =>
        this.transaction((_, db) => store.downloads.updateAttempt(id, changes, db)),
      saveJob: (row) => this.transaction((_, db) => store.runs.saveJob(row, db)),
    };
    const reads: Partial<State> = {
      // Read-only looks at the state of an older sluice (before version 4) find none.
      tableOwners: async () =>
        (await this.#dialect.schema.describe('_sluice_tables')) === undefined
          ? []
          : store.tableOwners(),
    };
    const guard = <T>(work: () => Promise<T>) => translating(this.#dialect, work);
    return new Proxy(store, {
      get: (target, property, receiver) => {
        const write = fenced[property as keyof State] ?? reads[property as keyof State];
        if (write !== undefined) {
          return (...args: unknown[]) =>
            guard(() => (write as (...a: unknown[]) => Promise<unknown>)(...args));
        }
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) =>
          guard(() => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
      },
    }) as State;
  }
}

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
