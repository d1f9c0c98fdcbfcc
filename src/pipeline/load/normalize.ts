import { availableParallelism } from 'node:os';
import type { ResultFileRef, ServiceClient } from '../../client/types.js';
import { SluiceError } from '../../errors.js';
import {
  BLOCK_BYTES,
  MAX_RECORD_BYTES,
  type ParseJob,
  ParserPool,
  packedBatches,
  type SpareWorkers,
} from '../../records/index.js';
import { JobTables, type ShapePlan } from '../../records/tables.js';
import type { FileFormat } from '../../records/types.js';
import type { RowEncoding } from '../../schema/copy-text.js';
import type { RunContext } from '../context.js';

/**
 * The normalize stage: a result file's bytes to shaped batches (rows of the job's table and
 * of its related tables, and rejected lines), in parse workers for large downloads so that
 * parsing runs on other cores than the main thread, which writes to the database.
 */

/** Rows per batch: a transaction's statements are written this many rows at a time. */
export const BATCH_ROWS = 500;

/**
 * Blocks of a file the workers may run ahead of the batches taken (besides one each): about
 * 640 KB of it, and at least three, so the main thread does not wait for a block while a worker
 * sits idle: ten 64 KB blocks, three of a destination's larger ones (docs/speed.md has the
 * figures).
 */
function blocksAhead(blockBytes: number | undefined): number {
  const bytes = blockBytes !== undefined && blockBytes > 0 ? blockBytes : BLOCK_BYTES;
  return Math.max(3, Math.floor((640 << 10) / bytes));
}

/**
 * Downloads smaller than this are parsed in the main thread unless a worker is kept from an
 * earlier load of the run: a new worker's start costs more.
 */
const PARSE_WORKERS_FROM = 5000;

/**
 * Parse workers for a download: `SLUICE_PARSE_WORKERS` (0 parses in the main thread, at most
 * 8), else two, where there are two cores, for large ones, and for small ones only those an
 * earlier load of the run left `warm` (SpareWorkers: no start to pay). Two workers parse a file
 * on two cores at once (ParserPool): parsing costs more than writing, and a second worker uses
 * the core the main thread leaves; more gained nothing on two cores (docs/speed.md,
 * test/bench/load.ts --scaling 1,2,4).
 */
export function parseWorkers(env: NodeJS.ProcessEnv, records: number, warm = 0): number {
  const set = env.SLUICE_PARSE_WORKERS;
  if (set !== undefined && set !== '') {
    const n = Number(set);
    return Number.isInteger(n) && n >= 0 ? Math.min(n, 8) : 0;
  }
  const workers = Math.min(2, Math.max(1, availableParallelism()));
  return records < PARSE_WORKERS_FROM ? Math.min(warm, workers) : workers;
}

/**
 * Starts the parse workers a job's load will take (SpareWorkers.warm) while its download is
 * prepared, so that its first file is not parsed by workers just started (or, for a small
 * download, in the main thread): for a download large enough to be given workers, and for every
 * download of a pipeline of several jobs, whose loads follow one another and keep the workers
 * (docs/speed.md, "Jobs at once"). Not for a job whose files the destination reads itself
 * (the caller asks `readsItself`), whose loads seldom parse.
 */
export function warmParsers(
  ctx: Pick<RunContext, 'env' | 'parsers' | 'spec'>,
  records: number | undefined,
): void {
  if (ctx.spec.jobs.length < 2 && (records ?? 0) < PARSE_WORKERS_FROM) return;
  ctx.parsers.warm(parseWorkers(ctx.env, Number.POSITIVE_INFINITY));
}

/**
 * The size beyond which a record is rejected (records/record-size.ts): `SLUICE_MAX_RECORD_BYTES`
 * (a whole number of bytes), else 4 MiB.
 */
export function maxRecordBytes(env: NodeJS.ProcessEnv): number {
  const set = env.SLUICE_MAX_RECORD_BYTES;
  if (set === undefined || set === '') return MAX_RECORD_BYTES;
  const n = Number(set);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new SluiceError(`SLUICE_MAX_RECORD_BYTES must be a whole number of bytes, not '${set}'`, {
      code: 'SLUICE_USAGE',
    });
  }
  return n;
}

/** Opens the result files of one download as batches, with the parse workers it needs. */
export class FileReader {
  /** Started with the first file parsed here: none while the destination reads the files. */
  #pool: ParserPool | undefined;
  readonly #tables: JobTables;

  constructor(
    /** Where the files come from: the service (a download's), or a scrape's saved answer. */
    readonly client: Pick<ServiceClient, 'openResultFile'>,
    readonly downloadId: string,
    readonly plan: ShapePlan,
    readonly format: FileFormat,
    /**
     * Parse workers (0: this thread), files opened at once (the workers share them), the bytes
     * of a block where workers share a file, the encoding they write the job's rows in, and
     * the size beyond which a record is rejected (see `ParseRequest`).
     */
    readonly parsing: {
      workers: number;
      files?: number;
      blockBytes?: number;
      encoding?: { name: RowEncoding; keep: string[] };
      maxRecordBytes?: number;
      /** The run's workers kept between its loads. */
      spares?: SpareWorkers;
    },
    readonly signal?: AbortSignal,
  ) {
    this.#tables = new JobTables(plan);
  }

  async open(file: ResultFileRef): Promise<ParseJob> {
    const stream = await this.client.openResultFile(this.downloadId, file, { signal: this.signal });
    const format = this.format;
    const { workers, files } = this.parsing;
    if (workers > 0) this.#pool ??= new ParserPool(workers, files ?? 1, this.parsing.spares);
    if (this.#pool) {
      return this.#pool.parse(stream, {
        format,
        plan: this.plan,
        batchSize: BATCH_ROWS,
        maxBuffered: this.#pool.streams ? 3 : blocksAhead(this.parsing.blockBytes),
        ...(this.parsing.blockBytes ? { blockBytes: this.parsing.blockBytes } : {}),
        ...(this.parsing.encoding ? { encoding: this.parsing.encoding } : {}),
        ...(this.parsing.maxRecordBytes ? { maxRecordBytes: this.parsing.maxRecordBytes } : {}),
      });
    }
    const { maxRecordBytes } = this.parsing;
    const batches = packedBatches(stream, format, this.#tables, BATCH_ROWS, maxRecordBytes);
    return { batches, cancel: () => stream.destroy() };
  }

  async close(): Promise<void> {
    await this.#pool?.close();
  }
}
