import { SluiceError } from '../../errors.js';
import type { TableChanges, Widening } from '../../schema/plan.js';
import { type ColumnType, widen } from '../../schema/types.js';
import type { TableContract } from '../destination.js';

/** A table's changes to weigh against its schema contract (see `changesUnderContract`). */
export interface ContractCase {
  contract: TableContract;
  /** The changes the rows ask for (physical names). */
  changes: TableChanges;
  /** The columns the contract binds: the table's as it was before, or the live table's. */
  base: ReadonlyMap<string, ColumnType>;
  /** The rows go to a staging table that stands in for the live one. */
  staged: boolean;
  /** The live table's physical name, for messages and `onDiscard`. */
  live: string;
  /** A physical column's logical name, for messages. */
  logical: (physical: string) => string;
}

/**
 * The changes a table's contract allows (see `TableContract`), with one job, to weigh them:
 * new columns left out (`discard`), or the job failed (`freeze`) naming the fields and why.
 * A frozen type of a staging table's column is the live table's where that holds the values,
 * so that the swap changes no frozen type.
 */
export function changesUnderContract(weighed: ContractCase): TableChanges {
  const { contract, base, staged, live, logical } = weighed;
  let { changes } = weighed;
  let { add, widen: widened } = changes;
  if (staged && contract.typeChanges === 'freeze') {
    const held = (name: string, type: ColumnType) => {
      const from = base.get(name);
      return from !== undefined && widen(from, type) === from ? from : type;
    };
    add = add.map((c) => ({ ...c, type: held(c.name, c.type) }));
    widened = widened.map((w) => ({ ...w, to: held(w.name, w.to) })).filter((w) => w.to !== w.from);
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

function contractError(message: string): SluiceError {
  return new SluiceError(message, { code: 'SLUICE_SCHEMA_CONTRACT' });
}
