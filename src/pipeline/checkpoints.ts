import type { RunContext } from './context.js';

/**
 * Named places of a run where a test can stop it, so that crash recovery is checked at exact
 * points rather than at whatever moment a timer hits. `SLUICE_CHECKPOINT=<point>:<job>[@<file>]`
 * makes the run print `sluice-checkpoint <point> <job>` on stderr when it gets there and wait
 * until it is interrupted (SIGINT, SIGTERM) or killed; with `SLUICE_CHECKPOINT_WAIT=<ms>` it
 * goes on after that long instead (a test breaks something meanwhile). Unset, a checkpoint costs
 * nothing.
 *
 * - `request-recorded`: the attempt is recorded, the request that pays is not sent yet
 * - `download-started`: the id is recorded, before the first poll (for a targeted update, its
 *   id; for a scrape, its answer, records and all)
 * - `polling`: after the first poll
 * - `file-batch`: inside a file's transaction, after its first batch is written (`@<index>`)
 * - `file-committed`: a file's transaction committed (`@<index>`)
 * - `swap`: inside the job's last transaction, replace swap done, before it commits
 * - `job-finished`: the job is loaded and recorded, before the next job
 *
 * While a run waits at `file-batch` or `file-committed`, the other files of an append loaded at
 * once (see `filesAtOnce` in load.ts) go on, and may commit.
 */
export type Checkpoint =
  | 'request-recorded'
  | 'download-started'
  | 'polling'
  | 'file-batch'
  | 'file-committed'
  | 'swap'
  | 'job-finished';

export async function checkpoint(
  ctx: RunContext,
  point: Checkpoint,
  job: string,
  file?: number,
): Promise<void> {
  const wanted = ctx.env.SLUICE_CHECKPOINT;
  if (!wanted) return;
  const here = `${point}:${job}`;
  if (wanted !== here && wanted !== `${here}@${file}`) return;
  process.stderr.write(
    `sluice-checkpoint ${point} ${job}${file === undefined ? '' : `@${file}`}\n`,
  );
  const signal = ctx.signal;
  const wait = Number(ctx.env.SLUICE_CHECKPOINT_WAIT);
  if (Number.isFinite(wait) && wait > 0) {
    await ctx.clock.sleep(wait, signal);
    return;
  }
  // Nothing else may keep the process alive while it waits here: an interval does.
  const alive = setInterval(() => {}, 60_000);
  try {
    await new Promise<void>((resolve) => {
      if (signal?.aborted) resolve();
      signal?.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    clearInterval(alive);
  }
  throw signal?.reason ?? new Error('interrupted at a checkpoint');
}
