import type { FileTransaction } from '../../load/destination.js';
import type { RelatedTable } from '../../records/tables.js';
import type { PackedBatch, PackedRelated, RejectedLine } from '../../records/types.js';
import type { PackedRows, RowValue } from '../../schema/types.js';
import { type JobLoad, targetOf } from './job-load.js';
import { keyReader, reading, writeRows } from './write-rows.js';

/**
 * Writes a batch's related rows: those of its written records. Rows that belong to a parent
 * loaded in this batch are deleted first (child rows of a re-loaded property, a person's phones,
 * a property's owner links), so that no stale row survives a merge. Within a batch, the last row
 * of an identity wins (see `lastOfEachIdentity`).
 */
export async function writeRelated(
  load: JobLoad,
  tx: FileTransaction,
  batch: PackedBatch,
  parents: readonly number[],
  constants: Readonly<Record<string, RowValue>>,
): Promise<RejectedLine[]> {
  const { tables } = load;
  const written = new Uint8Array(batch.lines.length);
  for (const parent of parents) written[parent] = 1;
  /** Each related table's rows to write, by their place among its rows in the batch. */
  const related = new Map<string, { group: PackedRelated; rows: number[] }>();
  for (const group of batch.related ?? []) {
    const table = tables.related(group.table);
    const rows: number[] = [];
    for (let i = 0; i < group.rows.count; i++) if (written[group.parents[i]!]) rows.push(i);
    related.set(group.table, { group, rows: lastOfEachIdentity(table, group, rows) });
  }
  const refused: RejectedLine[] = [];
  // Parents first: the people table before its phones, so keys are read from written rows.
  const ordered = tables
    .relatedTables()
    .sort((a, b) => Number(!!a.replaceBy) - Number(!!b.replaceBy));
  for (const table of ordered) {
    const entry = related.get(table.name);
    const target = targetOf(load, table.name, table);
    if (table.replaceBy && tables.replacesByParent(table)) {
      const { column, parentTable, parentKey } = table.replaceBy;
      const parentRows = related.get(parentTable);
      const parentValues =
        parentTable === tables.main
          ? columnOf(batch.rows, parentKey, parents)
          : parentRows
            ? columnOf(parentRows.group.rows, parentKey, parentRows.rows)
            : [];
      const keys = new Set<string | number>();
      for (const value of parentValues) {
        if (typeof value === 'string' || typeof value === 'number') keys.add(value);
        // A key past 2^53 as its digits: both databases compare them to an integer exactly.
        else if (typeof value === 'bigint') keys.add(value.toString());
      }
      if (keys.size > 0) await tx.deleteWhereIn(target, column, [...keys]);
    }
    if (entry === undefined || entry.rows.length === 0) continue;
    const { group, rows } = entry;
    const lineOf = (i: number) => batch.lines[group.parents[i]!]!;
    const failed = await writeRows(tx, target, group.rows, group.columns, rows, constants, lineOf);
    refused.push(...failed.map((f) => f.reject));
  }
  return refused;
}

/**
 * Rows `indexes` of a related table less those an identity's later row replaces, each identity
 * in the place of its first row. A keyed table (people) is keyed by its key. A child table
 * takes the rows of the last record of each parent: a record that comes twice in a batch is the
 * last one, children and all (items of different parent items keep their own rows, whatever
 * their positions). Other rows (owner links) are identified by all their values.
 */
function lastOfEachIdentity(
  table: RelatedTable,
  group: PackedRelated,
  indexes: number[],
): number[] {
  const { names, values } = group.rows;
  const width = names.length;
  const parentColumn = table.replaceBy?.column;
  if (table.key.length === 0 && parentColumn !== undefined && names.includes('_position')) {
    // The last record of each parent value; most batches have each parent once.
    const at = names.indexOf(parentColumn);
    const parentOf = (i: number) => (at < 0 ? null : (values[i * width + at] ?? null));
    const lastRecord = new Map<RowValue, number>();
    let repeated = false;
    for (const i of indexes) {
      const value = parentOf(i);
      const record = group.parents[i]!;
      const before = lastRecord.get(value);
      if (before !== record) {
        if (before !== undefined) repeated = true;
        lastRecord.set(value, record);
      }
    }
    return repeated
      ? indexes.filter((i) => lastRecord.get(parentOf(i)) === group.parents[i])
      : indexes;
  }
  const identityOf = keyReader(
    group.rows,
    table.key.length > 0
      ? table.key.map((k) => names.indexOf(k))
      : names.flatMap((name, c) => (name.startsWith('_sluice_') ? [] : [c])),
  );
  const slots = new Map<string, number>();
  const out: number[] = [];
  for (const i of indexes) {
    const identity = identityOf(i);
    const slot = slots.get(identity);
    if (slot === undefined) {
      slots.set(identity, out.length);
      out.push(i);
    } else out[slot] = i;
  }
  return out;
}

/** The values of `column` in rows `indexes` of `packed`. */
function columnOf(rows: PackedRows, column: string, indexes: readonly number[]): RowValue[] {
  const packed = reading(rows, [column]);
  const at = packed.names.indexOf(column);
  const width = packed.names.length;
  return at < 0 ? [] : indexes.map((i) => packed.values[i * width + at] ?? null);
}
