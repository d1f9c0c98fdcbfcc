import type { FieldMap } from '../catalog.js';
import { foldCase } from '../schema/naming.js';
import { META_COLUMNS, packRows } from '../schema/plan.js';
import { newRow, type Row } from '../schema/types.js';
import { toColumnValue } from './decode.js';
import type { PackedBatch, ParsedRow, RecordBatch } from './types.js';

/**
 * A record decoded by the catalogue: plain values, arrays and objects. A null-prototype object:
 * field names come from the service, and `__proto__` or `constructor` are just names.
 */
export type DecodedRecord = Record<string, unknown>;

/** Turns a decoded record into the row the load stage writes, and rows of related tables. */
export interface RecordShape {
  (record: DecodedRecord): Omit<ParsedRow, 'line'>;
  /**
   * Fields the shape takes as the file sends them, never decoded by the catalogue: those pinned
   * `text` (`columns:`), whose text is kept as sent (`2022.0` stays `2022.0`, not the number).
   */
  readonly asSent?: ReadonlySet<string>;
}

const UNDERSCORE = 0x5f;

/**
 * The columns sluice writes itself in a table, beside the data's fields, which a field's column
 * never takes. A field whose name is one of them, case aside, followed by no or more underscores
 * gets one more underscore (`_position` -> `_position_`, a field really named `_position_` ->
 * `_position__`); other names are kept. So no two fields meet in one column (the escape is one
 * to one), and sluice's own columns always hold their own values. Done where records are shaped,
 * before the row holds both: the load's constants, child rows' positions and parent links.
 */
export class OwnNames {
  /** Sluice's names, case folded (each begins with an underscore: see `column`). */
  readonly #folded: ReadonlySet<string>;

  constructor(names: Iterable<string>) {
    const folded = new Set<string>();
    for (const name of names) {
      if (name.charCodeAt(0) !== UNDERSCORE) throw new Error(`not an own column name: ${name}`);
      folded.add(foldCase(name));
    }
    this.#folded = folded;
  }

  /** The column of a data field named `name`. */
  column(name: string): string {
    // Every value of a row passes here: most names are told apart by their first character.
    if (name.charCodeAt(0) !== UNDERSCORE) return name;
    const folded = foldCase(name);
    for (let end = folded.length; ; end--) {
      if (this.#folded.has(end === folded.length ? folded : folded.slice(0, end))) {
        return `${name}_`;
      }
      if (end === 0 || folded.charCodeAt(end - 1) !== UNDERSCORE) return name;
    }
  }
}

/** What sluice writes in every table of a job: the load's own columns. */
export const LOAD_NAMES = new OwnNames(META_COLUMNS.map((c) => c.name));

/** `nested: json`: every nested value is stored as JSON text in its column. */
export function jsonRow(record: DecodedRecord): Row {
  const row = newRow();
  for (const key in record) row[LOAD_NAMES.column(key)] = toColumnValue(record[key]);
  return row;
}

export const jsonColumns: RecordShape = (record) => ({ row: jsonRow(record) });

const RAW_LIMIT = 10_000;

export function cutRaw(raw: string): string {
  const text = raw.endsWith('\n') ? raw.slice(0, raw.endsWith('\r\n') ? -2 : -1) : raw;
  return text.length > RAW_LIMIT ? text.slice(0, RAW_LIMIT) : text;
}

/** What packing needs of a job's tables (JobTables): each table's catalogue fields. */
export interface TableHints {
  readonly main: string;
  hintsOf(table: string): FieldMap;
}

/**
 * A batch packed for the thread that writes it: the job table's rows, and each related table's
 * rows with the record they came from, with the column types their values and hints ask for.
 */
export function packBatch(batch: RecordBatch, tables: TableHints): PackedBatch {
  const { packed, columns } = packRows(
    batch.rows.map((p) => p.row),
    tables.hintsOf(tables.main),
  );
  const packedBatch: PackedBatch = {
    rows: packed,
    columns,
    lines: batch.rows.map((p) => p.line),
    rejects: batch.rejects,
    ...(batch.warnings ? { warnings: batch.warnings } : {}),
    bytesRead: batch.bytesRead,
  };
  // Each related table's rows, record after record, as the writer takes them.
  const byTable = new Map<string, { rows: Row[]; parents: number[] }>();
  batch.rows.forEach(({ related }, parent) => {
    if (related === undefined) return;
    for (const [table, rows] of related) {
      let group = byTable.get(table);
      if (group === undefined) {
        group = { rows: [], parents: [] };
        byTable.set(table, group);
      }
      for (const row of rows) {
        group.rows.push(row);
        group.parents.push(parent);
      }
    }
  });
  if (byTable.size > 0) {
    packedBatch.related = [...byTable].map(([table, group]) => {
      const { packed: rows, columns: types } = packRows(group.rows, tables.hintsOf(table));
      return { table, rows, columns: types, parents: group.parents };
    });
  }
  return packedBatch;
}
