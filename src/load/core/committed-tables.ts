import type { ColumnType } from '../../schema/types.js';

/** What a committed transaction saw of tables (see `TableShapes`). */
export interface SeenTables {
  /** Tables it described or changed (undefined: dropped), by physical name. */
  readonly tables: ReadonlyMap<string, Map<string, ColumnType> | undefined>;
  /** Tables whose columns it knew as they were when it committed. */
  readonly known: ReadonlySet<string>;
  /** Tables it made. */
  readonly made: Iterable<string>;
}

/**
 * What a destination handle knows of its tables as committed, with one job: to spare each
 * transaction describing them again. Column types are cached per physical table once
 * described; a transaction works on its own copy and hands back, only when it commits, what it
 * saw (`learn`), so a rolled-back file leaves no column the table lacks.
 */
export class CommittedTables {
  /** Committed column types per physical table. */
  readonly #columns = new Map<string, Map<string, ColumnType>>();
  /** Tables this handle made (physical names): no schema contract binds them yet. */
  readonly #made = new Set<string>();

  columns(table: string): Map<string, ColumnType> | undefined {
    return this.#columns.get(table);
  }

  /** Whether this handle made the (physical) table, in a transaction that committed. */
  madeHere(table: string): boolean {
    return this.#made.has(table);
  }

  /**
   * Learns what a transaction that committed saw: the tables it changed, or described under
   * their lock, are now as it saw them, for everyone. A table it only described is learnt if
   * unknown, never overwritten: another transaction may have changed it and committed since.
   */
  learn(seen: SeenTables): void {
    for (const table of seen.made) this.#made.add(table);
    for (const [table, columns] of seen.tables) {
      if (seen.known.has(table)) {
        if (columns === undefined) this.#columns.delete(table);
        else this.#columns.set(table, columns);
      } else if (columns !== undefined && !this.#columns.has(table)) {
        this.#columns.set(table, columns);
      }
    }
  }
}
