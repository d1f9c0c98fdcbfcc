import { ColumnNames, type Naming } from '../../schema/naming.js';
import { hasChanges, planChanges, type TableChanges } from '../../schema/plan.js';
import type { Column, ColumnType } from '../../schema/types.js';
import type { DestinationCapabilities, WriteTarget } from '../destination.js';
import type { BoundColumn, Dialect, IndexRename } from '../dialect.js';
import { DestinationError } from '../errors.js';
import type { SeenTables } from './committed-tables.js';
import { changesUnderContract } from './schema-contract.js';

/** What the table shape work of a transaction needs of its loader. */
export interface ShapeInternals<C> {
  readonly capabilities: DestinationCapabilities;
  readonly dialect: Dialect<C>;
  readonly naming: Naming;
  committedColumns(table: string): Map<string, ColumnType> | undefined;
  /** Whether the loader made the (physical) table, in a transaction that committed. */
  madeHere(table: string): boolean;
  physical(table: string, stagedBy?: string): string;
  indexName(table: string, purpose: 'key' | 'parent'): string;
}

/**
 * The shape of the tables one transaction touches, with one job: that each table has the
 * columns and indexes its rows need, as far as its schema contract lets them. It makes tables,
 * adds and widens columns, makes key and parent-link indexes, drops tables and swaps staging
 * tables in, and keeps the columns it saw (what the loader learns when the transaction
 * commits: `SeenTables`) and the physical column of each row key (`namesOf`). The rows
 * themselves are the transaction's (`LoaderTransaction`).
 */
export class TableShapes<C> implements SeenTables {
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
  /** Each table's columns for the row keys written to it, as of the columns seen (`columns`). */
  readonly #names = new Map<string, ColumnNames>();

  constructor(
    readonly loader: ShapeInternals<C>,
    readonly conn: C,
    /** Whether other files are loaded beside this transaction's (see `FileOptions`). */
    readonly besideOthers: () => boolean,
  ) {}

  get #dialect(): Dialect<C> {
    return this.loader.dialect;
  }

  /**
   * A (physical) table's columns as this transaction sees them, or undefined when there is no
   * such table: its own copy of the committed ones, or described (always, when `fresh`).
   */
  async columns(table: string, fresh = false): Promise<Map<string, ColumnType> | undefined> {
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
  namesOf(table: string): ColumnNames {
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
      const names = this.namesOf(table);
      return logical.map((c) => ({ name: names.physical(c.name), type: c.type }));
    };
    // The changes the rows ask for, as far as the target's schema contract lets them.
    const plan = async () => {
      const changes = planChanges(existing && toColumns(existing), bind());
      if (!hasChanges(changes) || target.contract === undefined) return changes;
      return this.#underContract(target, changes, existing, (c) => this.namesOf(table).logical(c));
    };
    let existing = await this.columns(table);
    let changes = await plan();
    if (hasChanges(changes) && this.besideOthers()) {
      // Another file of the run may have made the change already: looked at again, as committed.
      existing = await this.columns(table, true);
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
      existing = await this.columns(table, true);
      this.known.add(table);
      changes = await plan();
    }
    if (!hasChanges(changes)) {
      await this.#ensureIndexes(table, target);
      return existing!;
    }
    const columns = await this.#change(table, existing, changes);
    await this.#ensureIndexes(table, target);
    return columns;
  }

  /** Makes a table, or adds and widens its columns, as `changes` say; its columns after. */
  async #change(
    table: string,
    existing: Map<string, ColumnType> | undefined,
    changes: TableChanges,
  ): Promise<Map<string, ColumnType>> {
    const limit = this.loader.capabilities.maxColumns;
    const count = (existing?.size ?? 0) + changes.add.length;
    if (count > limit) {
      throw new DestinationError(
        `table ${table} would need ${count} columns, more than the ${limit} ${this.#dialect.displayName} allows: use a view with fewer fields, or nested: tables`,
        'SLUICE_DESTINATION_LIMIT',
      );
    }
    const schema = this.#dialect.schema;
    const columns = new Map(existing);
    if (changes.create) {
      this.made.add(table);
      await schema.createTable(this.conn, table, this.#withSource(table, changes.add));
      for (const c of changes.add) columns.set(c.name, c.type);
    } else {
      if (changes.add.length > 0) {
        await schema.addColumns(this.conn, table, this.#withSource(table, changes.add));
        for (const c of changes.add) columns.set(c.name, c.type);
      }
      for (const change of changes.widen) {
        await schema.widenColumn(this.conn, table, change);
        columns.set(change.name, change.to);
      }
    }
    this.tables.set(table, columns);
    this.known.add(table);
    return columns;
  }

  /**
   * The changes a target's contract allows (see `changesUnderContract`). The contract binds the
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
    const base = staged ? await this.columns(live) : existing;
    if (base === undefined) return changes; // a new table: its data's columns
    return changesUnderContract({ contract, changes, base, staged, live, logical });
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
    const names = this.namesOf(table);
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
      columns: [this.namesOf(table).physical(column)],
      unique: false,
    });
    this.#indexes.set(table, Promise.resolve([...existing, { name }]));
  }

  /** Indexes a (logical) table's parent link at the job's end, if the table is there. */
  async indexParent(index: { table: string; column: string }): Promise<void> {
    const table = this.loader.physical(index.table);
    if ((await this.columns(table)) === undefined) return;
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

  /** Drops a (physical) table. */
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
    const names = this.namesOf(table);
    return columns.map((c) => ({ ...c, source: names.logical(c.name) }));
  }

  /** Swaps this pipeline's staging table of `logical` in for the live one. */
  async swapIn(logical: string, stagedBy: string): Promise<void> {
    const target = this.loader.physical(logical);
    const staging = this.loader.physical(logical, stagedBy);
    const columns = await this.columns(staging, true);
    if (columns === undefined) {
      // Nothing was staged (an older run's table): the new table is an empty one.
      if ((await this.columns(target)) !== undefined)
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

function toColumns(map: Map<string, ColumnType>): Column[] {
  return [...map].map(([name, type]) => ({ name, type }));
}
