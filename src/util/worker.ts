import { type ResourceLimits, Worker } from 'node:worker_threads';

/**
 * The heap of sluice's workers (parse workers, the DuckDB line check), each of which holds a few
 * batches or lines at a time: a small heap keeps its garbage collected early, so the process
 * stays small whatever the download's size. (A process started with V8's
 * `--max-semi-space-size`, as bin/sluice.js is, has that bound on every young generation.)
 */
const WORKER_HEAP: ResourceLimits = {
  maxOldGenerationSizeMb: 48,
  maxYoungGenerationSizeMb: 16,
};

/**
 * A worker thread, its heap WORKER_HEAP, running the module at `url` (a sibling module's URL,
 * `.js` in built code). Built code runs the worker file directly. Run from source (tests, `npm
 * run demo`), the `.ts` file is taken instead, and the worker first registers tsx's loader in its
 * own thread, as loaders are per thread.
 */
export function startWorker(url: URL): Worker {
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { resourceLimits: WORKER_HEAP });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(url.href)}); });`;
  return new Worker(code, { eval: true, resourceLimits: WORKER_HEAP });
}

/** The URL of the worker module `name` (without extension) beside the module at `from`. */
export function workerUrl(from: string, name: string): URL {
  return new URL(`./${name}${from.endsWith('.ts') ? '.ts' : '.js'}`, from);
}
