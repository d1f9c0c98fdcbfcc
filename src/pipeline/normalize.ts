import type { ResultFileRef, ServiceClient } from '../client/types.js';
import { type ParseJob, ParserPool, recordBatches } from '../records/index.js';
import { JobTables, type ShapePlan } from '../records/tables.js';
import type { FileFormat } from '../records/types.js';

/**
 * The normalize stage: a result file's bytes to shaped batches (rows of the job's table and
 * of its related tables, and rejected lines), in a parse worker for large downloads so that
 * parsing runs on one core while the database is written on another.
 */

/** Rows per batch: a transaction's statements are written this many rows at a time. */
export const BATCH_ROWS = 500;

/** Downloads smaller than this are parsed in the main thread: a worker's start costs more. */
const PARSE_WORKERS_FROM = 5000;

/**
 * Parse workers for a download: `SLUICE_PARSE_WORKERS` (0 parses in the main thread, at most
 * 8), else none for small downloads and one for large ones. More workers parse an NDJSON file
 * on more cores at once (a CSV file is parsed by one worker), which pays only where parsing is
 * the bound: on two cores the writing thread is, and one worker loads as fast as two or four
 * with the least memory (test/bench/load.ts --scaling 1,2,4).
 */
export function parseWorkers(env: NodeJS.ProcessEnv, records: number): number {
  const set = env.SLUICE_PARSE_WORKERS;
  if (set !== undefined && set !== '') {
    const n = Number(set);
    return Number.isInteger(n) && n >= 0 ? Math.min(n, 8) : 0;
  }
  return records >= PARSE_WORKERS_FROM ? 1 : 0;
}

/** Opens the result files of one download as batches, with the parse workers it needs. */
export class FileReader {
  readonly #pool: ParserPool | undefined;
  readonly #tables: JobTables;

  constructor(
    readonly client: ServiceClient,
    readonly downloadId: string,
    readonly plan: ShapePlan,
    readonly format: FileFormat,
    workers: number,
    readonly signal?: AbortSignal,
  ) {
    this.#pool = workers > 0 ? new ParserPool(workers) : undefined;
    this.#tables = new JobTables(plan);
  }

  async open(file: ResultFileRef): Promise<ParseJob> {
    const stream = await this.client.openResultFile(this.downloadId, file, { signal: this.signal });
    if (this.#pool) {
      return this.#pool.parse(stream, {
        format: this.format,
        plan: this.plan,
        batchSize: BATCH_ROWS,
        maxBuffered: 3,
      });
    }
    const batches = recordBatches(stream, this.format, this.plan.type, {
      batchSize: BATCH_ROWS,
      shape: this.#tables.shape,
    });
    return { batches, cancel: () => stream.destroy() };
  }

  async close(): Promise<void> {
    await this.#pool?.close();
  }
}
