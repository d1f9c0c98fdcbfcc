import { type Kysely, sql } from 'kysely';
import type { StateDatabase } from '../state-tables.js';

export type CursorRow = StateDatabase['_sluice_cursors'];
export type LeaseRow = StateDatabase['_sluice_leases'];
export type TableOwnerRow = StateDatabase['_sluice_tables'];

/** How a transaction holds its run's lease (see `DialectConnection.leaseHold`). */
export type LeaseHold = 'share' | 'write' | 'none';

type Db = Kysely<StateDatabase>;

/**
 * What pipelines hold from one run to the next: one job, the rows of the jobs' incremental
 * cursors, of the leases behind their locks and of the tables each owns (`_sluice_cursors`,
 * `_sluice_leases`, `_sluice_tables`). Statements that must commit with a transaction of the
 * handle take its executor (`db`).
 */
export class PipelineHoldings {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  // --- cursors ----------------------------------------------------------------------------

  async cursor(pipeline: string, job: string): Promise<CursorRow | undefined> {
    return this.#db
      .selectFrom('_sluice_cursors')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .where('job', '=', job)
      .executeTakeFirst();
  }

  async cursors(pipeline: string): Promise<CursorRow[]> {
    return this.#db
      .selectFrom('_sluice_cursors')
      .selectAll()
      .where('pipeline', '=', pipeline)
      .orderBy('job')
      .execute();
  }

  async saveCursor(row: CursorRow, db: Db = this.#db): Promise<void> {
    const { pipeline, job, ...rest } = row;
    await db
      .insertInto('_sluice_cursors')
      .values(row)
      .onConflict((oc) => oc.columns(['pipeline', 'job']).doUpdateSet(rest))
      .execute();
  }

  async clearCursor(pipeline: string, job: string, db: Db = this.#db): Promise<void> {
    await db
      .deleteFrom('_sluice_cursors')
      .where('pipeline', '=', pipeline)
      .where('job', '=', job)
      .execute();
  }

  // --- leases -----------------------------------------------------------------------------

  /**
   * Makes `lease` the holder of its name, whoever held it before. An UPDATE where the row is
   * there (on a dialect that checks write conflicts, an upsert's update escapes the check); the
   * caller holds the pipeline's lock, so no other run inserts it meanwhile.
   */
  async takeLease(lease: LeaseRow, db: Db = this.#db): Promise<void> {
    const { name, ...rest } = lease;
    const updated = await db
      .updateTable('_sluice_leases')
      .set(rest)
      .where('name', '=', name)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) {
      await db.insertInto('_sluice_leases').values(lease).execute();
    }
  }

  /**
   * The holder of a lease, held against a takeover until the transaction ends as `hold` says
   * (see `DialectConnection.leaseHold`).
   */
  async lease(name: string, db: Db, hold: LeaseHold): Promise<LeaseRow | undefined> {
    if (hold === 'write') {
      // A write a dialect that checks write conflicts counts: such a check may let an update
      // that changes nothing pass as no conflict. So the holder is changed and changed back;
      // the row stays as it was.
      for (const holder of [sql<string>`holder || '~'`, sql<string>`left(holder, -1)`]) {
        await db.updateTable('_sluice_leases').set({ holder }).where('name', '=', name).execute();
      }
    }
    const query = db.selectFrom('_sluice_leases').selectAll().where('name', '=', name);
    return (hold === 'share' ? query.forShare() : query).executeTakeFirst();
  }

  // --- table owners -----------------------------------------------------------------------

  /** Who owns each table sluice made here (see `Destination.claimTables`). */
  async tableOwners(db: Db = this.#db): Promise<TableOwnerRow[]> {
    return db
      .selectFrom('_sluice_tables')
      .selectAll()
      .orderBy('table_name')
      .orderBy('pipeline')
      .orderBy('job')
      .execute();
  }

  async addTableOwner(row: TableOwnerRow, db: Db = this.#db): Promise<void> {
    await db.insertInto('_sluice_tables').values(row).execute();
  }

  async dropTableOwner(
    row: Pick<TableOwnerRow, 'table_name' | 'pipeline' | 'job'>,
    db: Db = this.#db,
  ): Promise<void> {
    await db
      .deleteFrom('_sluice_tables')
      .where('table_name', '=', row.table_name)
      .where('pipeline', '=', row.pipeline)
      .where('job', '=', row.job)
      .execute();
  }
}
