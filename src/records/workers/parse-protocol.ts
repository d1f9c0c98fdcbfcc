import type { RowEncoding } from '../../schema/copy-text.js';
import type { ShapePlan } from '../tables.js';
import type { FileFormat, PackedBatch } from '../types.js';
import type { PostedBatch } from './posted-batch.js';

/**
 * Parsing in worker threads. Parsing and decoding cost several times what writing a row costs:
 * each result file is parsed in a worker while the main thread writes the previous batch.
 * Batches come back in file order; workers never run more than a bounded number of batches
 * ahead, so memory stays bounded whatever the file size.
 *
 * Protocol, a file streamed to one worker (a pool of one): main -> worker `start`, then `chunk`s
 * (bytes, transferred, not copied) and `end`; worker -> main `consumed` per chunk (flow control
 * of the input), `batch`es, then `done` or `error`. Main sends `ack` as it takes each batch.
 * A file shared by several workers (see ParserPool): main -> each worker `blocks` with the
 * file's job number, then `block`s of whole records (transferred) with the job number and their
 * first line number, and `drop` when the file is done with (read to its end or given up);
 * worker -> main `parsed` per block (or `error`), with the job number, where its block's use
 * ended if not at its end (`usedLines`) and, for CSV, the header it read. A worker may hold
 * blocks of several files at once (files loaded at once, each over its own connection): the
 * job number tells them apart, and keeps a dropped block's late answer away from other files.
 */
export interface ParseRequest {
  format: FileFormat;
  /** How records become rows: plain data, cloned into the worker. */
  plan: ShapePlan;
  batchSize: number;
  /**
   * How far a worker may run ahead of the batches taken: batches of `batchSize` rows for a file
   * streamed to it; blocks for a file cut into blocks, besides one per worker.
   */
  maxBuffered: number;
  /**
   * A file parsed by several workers: bytes a block holds at least (tests make them small, to
   * cut a small file often).
   */
  blockBytes?: number;
  /**
   * Records longer than this are rejected, never gathered whole (record-size.ts); CSV text this
   * long with no record end is read as one record (an unclosed quote, see csv.ts).
   */
  maxRecordBytes?: number;
  /**
   * The job's rows in the destination's encoding (see schema/copy-text.ts) where it has one,
   * with only the columns `keep` names also as values (those the writing thread reads: keys).
   */
  encoding?: { name: RowEncoding; keep: string[] };
}

export type ToWorker =
  | { type: 'start'; request: ParseRequest }
  | { type: 'chunk'; data: Uint8Array }
  | { type: 'end' }
  | { type: 'ack' }
  | { type: 'blocks'; request: ParseRequest; job: number }
  | { type: 'drop'; job: number }
  | {
      type: 'block';
      job: number;
      seq: number;
      firstLine: number;
      data: Uint8Array;
      /**
       * The file's last block, or the last before a line beyond the limit: its last record ends
       * with it, closed or not.
       */
      final: boolean;
      /** A CSV block with no record end in it (an unclosed quote), read as one record. */
      forced: boolean;
      /**
       * Set for a line longer than the limit, skipped unread: its size in bytes. The block is
       * its first bytes, to be kept as a reject.
       */
      tooLong?: number;
      /** The CSV file's header, once a block has read it. */
      columns: string[] | undefined;
    };

/** A block's rows, in a message of its own (see `ToMain`). */
export interface ParsedBlock {
  type: 'parsed';
  job: number;
  seq: number;
  batch: PostedBatch;
  /**
   * Set when the block's end was not used: a broken CSV record moved where the records after it
   * end, so they are cut again, with the blocks that follow, from just past this many newlines
   * of the block (a line boundary: counted in bytes, whatever the text's encoding errors).
   */
  usedLines?: number;
  /** The CSV header, when this block read it (it was sent none). */
  columns?: string[];
}

export type ToMain =
  | { type: 'consumed' }
  | { type: 'batch'; batch: PostedBatch }
  | ParsedBlock
  | { type: 'done' }
  | { type: 'error'; message: string; name: string; job?: number };

/** A block of a file, as handed to a worker (the job number is the lane's). */
export type BlockToSend = Omit<Extract<ToWorker, { type: 'block' }>, 'type' | 'job'>;

/** A file being parsed: its batches, in order, and a way to stop early. */
export interface ParseJob {
  batches: AsyncGenerator<PackedBatch>;
  /**
   * Stops reading the file. A worker it was streamed to is terminated (it was left mid-file);
   * workers given it in blocks are told to drop it, and go on with other files.
   */
  cancel(): void;
}

/** The error a worker reported, rebuilt on the main thread. */
export function workerError(message: { message: string; name: string }): Error {
  const error = new Error(message.message);
  error.name = message.name;
  return error;
}
