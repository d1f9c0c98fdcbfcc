/**
 * What the records stage hands the load stage: rows of plain values, with the line they came
 * from, or a reject saying why a line could not become a row. Nothing is dropped silently.
 */

import type { ColumnType, PackedRows, Row } from '../schema/types.js';

export type { Row, RowValue } from '../schema/types.js';

export interface ParsedRow {
  /** 1-based line of the record in its file (for CSV, the line where the record starts). */
  line: number;
  row: Row;
  /** Rows of related tables from the same record (child tables, people, links), by table. */
  related?: Map<string, Row[]>;
}

export interface RejectedLine {
  line: number;
  /** The line's text as it was in the file (cut to 10 kB). */
  raw: string;
  reason: string;
}

/** One batch of a file: rows to write and lines to keep aside, in file order. */
export interface RecordBatch {
  rows: ParsedRow[];
  rejects: RejectedLine[];
  /** What reading the file changed and the run should say, once per file (a CSV header's). */
  warnings?: string[];
  /** Bytes of the file consumed so far (for progress). */
  bytesRead: number;
}

/**
 * A batch as the thread that writes takes it (`packBatch`): the rows of the job's table packed,
 * with their column types worked out by the thread that parsed them.
 */
export interface PackedBatch {
  rows: PackedRows;
  columns: Map<string, ColumnType>;
  /** The line of each row in its file. */
  lines: number[];
  /** Rows of related tables (child tables, people, links), packed per table; absent if none. */
  related?: PackedRelated[];
  rejects: RejectedLine[];
  /** As in RecordBatch. */
  warnings?: string[];
  bytesRead: number;
}

export type FileFormat = 'csv' | 'json';

/** The rows one related table gets from a batch's records, packed, with the record of each. */
export interface PackedRelated {
  table: string;
  rows: PackedRows;
  columns: Map<string, ColumnType>;
  /** For each row, the place in the batch of the record it came from, in ascending order. */
  parents: number[];
}
