import { type ResourceLimits, Worker } from 'node:worker_threads';

/**
 * A worker thread running the module at `url` (a sibling module's URL, `.js` in built code). Built
 * code runs the worker file directly. Run from source (tests, `npm run demo`), the `.ts` file is
 * taken instead, and the worker first registers tsx's loader in its own thread, as loaders are
 * per thread.
 */
export function startWorker(url: URL, resourceLimits: ResourceLimits): Worker {
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { resourceLimits });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(url.href)}); });`;
  return new Worker(code, { eval: true, resourceLimits });
}

/** The URL of the worker module `name` (without extension) beside the module at `from`. */
export function workerUrl(from: string, name: string): URL {
  return new URL(`./${name}${from.endsWith('.ts') ? '.ts' : '.js'}`, from);
}
