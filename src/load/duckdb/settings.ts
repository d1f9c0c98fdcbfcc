import { availableParallelism } from 'node:os';
import { SluiceError } from '../../errors.js';

/**
 * DuckDB's own budget in a run: its buffer pool (`memory_limit`) and its threads. DuckDB takes
 * 80% of the machine's memory and every core by default; in a sluice run the parse workers
 * already take the cores, and the run promises to stay near 200 MB, so the defaults are what
 * the run may use beside them (docs/speed.md has the figures):
 *
 * - `threads`: the cores the parse workers leave, at least one (one on two cores).
 * - `memory_limit`: 256 MB. Beyond it DuckDB spills to its temporary folder (beside the
 *   database file) rather than failing.
 *
 * `SLUICE_DUCKDB_MEMORY_LIMIT` (a size as DuckDB reads it: `512MB`, `2GiB`) and
 * `SLUICE_DUCKDB_THREADS` (a whole number, 1 or more) set them instead.
 */
export interface DuckDbBudget {
  memoryLimit: string;
  threads: number;
}

export const DEFAULT_MEMORY_LIMIT = '256MB';

const SIZE = /^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i;

export function duckDbBudget(
  env: NodeJS.ProcessEnv = process.env,
  cores = availableParallelism(),
): DuckDbBudget {
  const memory = env.SLUICE_DUCKDB_MEMORY_LIMIT?.trim();
  if (memory !== undefined && memory !== '' && !SIZE.test(memory)) {
    throw new SluiceError(
      `SLUICE_DUCKDB_MEMORY_LIMIT=${JSON.stringify(memory)} is not a size: write it as DuckDB does, e.g. 512MB or 2GiB`,
      { code: 'SLUICE_USAGE' },
    );
  }
  const threadsSet = env.SLUICE_DUCKDB_THREADS?.trim();
  let threads = Math.max(1, cores - 1);
  if (threadsSet !== undefined && threadsSet !== '') {
    const n = Number(threadsSet);
    if (!Number.isInteger(n) || n < 1) {
      throw new SluiceError(
        `SLUICE_DUCKDB_THREADS=${JSON.stringify(threadsSet)} is not a whole number of 1 or more`,
        { code: 'SLUICE_USAGE' },
      );
    }
    threads = n;
  }
  return { memoryLimit: memory || DEFAULT_MEMORY_LIMIT, threads };
}
