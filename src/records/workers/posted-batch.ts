/**
 * A packed batch as it crosses from a parse worker to the writing thread. `postMessage` clones
 * an array of values one value at a time: for a batch of property records, 45 values a row, the
 * writing thread spent more time taking the clone apart than building its database rows from it.
 * Here each table's values travel as one string holding every text value end to end (copied
 * once, whole), and one buffer (moved between threads, not copied) with the numbers, where each
 * text value ends and what each value is. The writing thread takes the text values back as
 * slices of the one string.
 */
import type { PackedRows, RowValue } from '../../schema/types.js';
import type { PackedBatch, PackedRelated } from '../types.js';

/** Values as one string and one buffer (see `packValues`). */
export interface PostedValues {
  /** How many values. */
  readonly count: number;
  /** How many of them are numbers. */
  readonly numbers: number;
  /** How many of them are text. */
  readonly strings: number;
  /** The numbers, then where each text value ends in `text`, then each value's kind. */
  readonly buffer: ArrayBuffer;
  /** The text values end to end. */
  readonly text: string;
}

/** Packed rows with their values as `PostedValues`. */
export interface PostedRows extends Omit<PackedRows, 'values'> {
  readonly wire: PostedValues;
}

export interface PostedRelated extends Omit<PackedRelated, 'rows'> {
  rows: PostedRows;
}

/** A packed batch as it is posted to the writing thread (`toWire`). */
export interface PostedBatch extends Omit<PackedBatch, 'rows' | 'related'> {
  rows: PostedRows;
  related?: PostedRelated[];
}

// The kind of each value. An undefined slot (none is made: packers write null) stays undefined.
const UNDEFINED = 0;
const NULL = 1;
const TEXT = 2;
const NUMBER = 3;
const TRUE = 4;
const FALSE = 5;
/** A bigint (an integer past 2^53, rare): its digits travel with the text values. */
const BIGINT = 6;

/** The three views of a `PostedValues` buffer: numbers first, as they need 8-byte alignment. */
function views(count: number, numbers: number, strings: number, buffer: ArrayBuffer) {
  return {
    numberValues: new Float64Array(buffer, 0, numbers),
    ends: new Uint32Array(buffer, numbers * 8, strings),
    kinds: new Uint8Array(buffer, numbers * 8 + strings * 4, count),
  };
}

/** `values` as one string and one buffer; `unpackValues` gives them back as they were. */
export function packValues(values: readonly RowValue[]): PostedValues {
  const count = values.length;
  let numbers = 0;
  let strings = 0;
  for (let i = 0; i < count; i++) {
    const value = values[i];
    if (typeof value === 'string' || typeof value === 'bigint') strings++;
    else if (typeof value === 'number') numbers++;
  }
  const buffer = new ArrayBuffer(numbers * 8 + strings * 4 + count);
  const { numberValues, ends, kinds } = views(count, numbers, strings, buffer);
  let text = '';
  for (let i = 0, n = 0, s = 0; i < count; i++) {
    const value = values[i] as unknown;
    switch (typeof value) {
      case 'string':
        text += value;
        ends[s++] = text.length;
        kinds[i] = TEXT;
        break;
      case 'number':
        numberValues[n++] = value;
        kinds[i] = NUMBER;
        break;
      case 'boolean':
        kinds[i] = value ? TRUE : FALSE;
        break;
      case 'bigint':
        text += value.toString();
        ends[s++] = text.length;
        kinds[i] = BIGINT;
        break;
      case 'undefined':
        kinds[i] = UNDEFINED;
        break;
      default:
        // A value of no column type would otherwise arrive as nothing: never lose it quietly.
        if (value !== null) throw new TypeError(`a row value of type ${typeof value}`);
        kinds[i] = NULL;
    }
  }
  return { count, numbers, strings, buffer, text };
}

/** The values `packValues` was given, in a new array. */
export function unpackValues(wire: PostedValues): RowValue[] {
  const { count, numbers, strings, buffer, text } = wire;
  const { numberValues, ends, kinds } = views(count, numbers, strings, buffer);
  // Pushed in order: an array made at its full length is slow to fill past 16,000 slots or so.
  const values: (RowValue | undefined)[] = [];
  for (let i = 0, n = 0, s = 0, at = 0; i < count; i++) {
    switch (kinds[i]) {
      case TEXT: {
        const end = ends[s++]!;
        values.push(text.slice(at, end));
        at = end;
        break;
      }
      case NUMBER:
        values.push(numberValues[n++]!);
        break;
      case BIGINT: {
        const end = ends[s++]!;
        values.push(BigInt(text.slice(at, end)));
        at = end;
        break;
      }
      case TRUE:
        values.push(true);
        break;
      case FALSE:
        values.push(false);
        break;
      case NULL:
        values.push(null);
        break;
      default:
        values.push(undefined);
    }
  }
  return values as RowValue[];
}

function rowsToWire(rows: PackedRows, transfer: ArrayBuffer[]): PostedRows {
  const { values, ...rest } = rows;
  const wire = packValues(values);
  transfer.push(wire.buffer);
  return { ...rest, wire };
}

function rowsFromWire(rows: PostedRows): PackedRows {
  const { wire, ...rest } = rows;
  return { ...rest, values: unpackValues(wire) };
}

/**
 * `batch` as it is posted, and the buffers to move with it: its values', and its COPY text's
 * where it has one (copied first if it shares its memory, as a slice of Node's pool would: a
 * buffer moved is gone from every view of it in this thread).
 */
export function toWire(batch: PackedBatch): { batch: PostedBatch; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  const { rows: given, related, ...rest } = batch;
  let rows = given;
  if (rows.text) {
    let { bytes } = rows.text;
    if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) {
      bytes = new Uint8Array(bytes);
      rows = { ...rows, text: { ...rows.text, bytes } };
    }
    transfer.push(bytes.buffer as ArrayBuffer);
  }
  const wire: PostedBatch = { ...rest, rows: rowsToWire(rows, transfer) };
  if (related) wire.related = related.map((r) => ({ ...r, rows: rowsToWire(r.rows, transfer) }));
  return { batch: wire, transfer };
}

/** The batch `toWire` was given. */
export function fromWire(batch: PostedBatch): PackedBatch {
  const { rows, related, ...rest } = batch;
  const packed: PackedBatch = { ...rest, rows: rowsFromWire(rows) };
  if (related) packed.related = related.map((r) => ({ ...r, rows: rowsFromWire(r.rows) }));
  return packed;
}
