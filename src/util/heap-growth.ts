import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets its heap grow past what a full collection left, while a DuckDB destination
 * that reads result files itself is open for writing: 4x (`--heap-growing-percent=300`), V8's
 * own factor for large heaps, in every thread of the process (each worker's heap stays within
 * its own cap: util/worker.ts). A `--heap-growing-percent` given to Node is replaced meanwhile,
 * and V8's default (0) set back after.
 *
 * bin/sluice.js caps the old generation at 192 MB so that a SQLite or PostgreSQL run stays under
 * 200 MB, and under a cap that small V8 grows the heap by about 1.35x only. A DuckDB run's heap
 * is small (some 24 MB live) but it moves hundreds of megabytes through buffers (each result file
 * fetched and spooled for DuckDB to read), which V8 counts towards its next full collection: at
 * 1.35x the process collected fully 14-15 times in 100,000 NDJSON records, at 4x 4 times, and
 * the run took 4.5-4.7 s against 5.0-5.3 (docs/speed.md). The cap stays: the heap grows freer
 * within it. A DuckDB run's peak is DuckDB's buffer pool (its `memory_limit`), and was the same
 * (479-534 MB against 488-528).
 */
const GROWING_PERCENT = 300;

let allowed = false;
let holders = 0;

/**
 * Lets `growHeap` change V8's flag: the CLI's process, whose heap bin/sluice.js sizes, does; a
 * program that uses sluice as a library keeps V8's flags as it set them.
 */
export function allowHeapGrowth(): void {
  allowed = true;
}

/** The heap grows by GROWING_PERCENT until every release returned is called (once each). */
export function growHeap(): () => void {
  if (!allowed) return () => {};
  if (holders++ === 0) setFlagsFromString(`--heap-growing-percent=${GROWING_PERCENT}`);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    // 0 is V8's default: its own factor again.
    if (--holders === 0) setFlagsFromString('--heap-growing-percent=0');
  };
}
