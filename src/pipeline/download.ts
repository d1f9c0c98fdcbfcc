import { ApiError } from '../errors.js';
import type { Attempt } from '../load/destination.js';
import type { Logger } from '../log.js';
import type { JobTables } from '../records/tables.js';
import type { RunContext } from './context.js';
import { ensureDownload, waitForDownload } from './extract.js';
import {
  countCredits,
  dropStaging,
  finishJob,
  type JobLoad,
  loadFiles,
  prepareTables,
} from './load.js';
import { inStage, type JobOutcome, markCommitted } from './outcome.js';
import type { JobSpec } from './spec.js';

/** A job that downloads: its own, or one part of an owner lookup. */
export async function runDownloadJob(
  ctx: RunContext,
  job: JobSpec,
  tables: JobTables,
  outcome: JobOutcome,
  log: Logger,
): Promise<void> {
  const load: JobLoad = { ctx, job, tables, outcome, log };
  outcome.stage = 'extract';
  const ensure = () =>
    inStage('extract', () =>
      ensureDownload(ctx, job, outcome, log, () => inStage('load', () => dropStaging(load))),
    );
  let download = await ensure();
  outcome.stage = 'load';
  await inStage('load', () => prepareTables(load));
  if (download && !download.startedNow && (await gone(ctx, download.attempt))) {
    // The service no longer has the download an earlier run started (expired, deleted): it
    // cannot be loaded, however often it is asked for. Left behind, and a new one started.
    const id = download.attempt.download_id;
    log.warn(
      `download ${id}, started by an earlier run, is no longer on the service: starting a new one`,
    );
    await ctx.destination.state.updateAttempt(download.attempt.attempt_id, {
      status: 'abandoned',
      message: 'the service no longer has this download (404)',
    });
    outcome.reattached = false;
    download = await ensure();
  }
  if (!download) {
    outcome.stage = 'finish';
    await inStage('finish', () => finishJob(load, undefined, undefined));
    outcome.status = 'empty';
    return;
  }
  outcome.stage = 'extract';
  const polled = await inStage('extract', () => waitForDownload(ctx, job, download.attempt, log));
  countCredits(ctx, job, download.attempt, polled.info, outcome);
  outcome.stage = 'load';
  await loadFiles(load, download.attempt, polled.info);
  outcome.stage = 'finish';
  await inStage('finish', () => finishJob(load, download.attempt, polled.info));
  markCommitted(outcome);
  if (polled.timedOut) {
    outcome.status = 'timed_out';
    outcome.message = polled.timedOut;
    outcome.error = {
      code: 'SLUICE_TIMEOUT',
      message: polled.timedOut,
      retryable: true,
      stage: 'extract',
    };
  }
}

/** Whether the service answers 404 for an attempt's download. */
async function gone(ctx: RunContext, attempt: Attempt): Promise<boolean> {
  if (attempt.download_id === null) return false;
  try {
    await ctx.client.getDownload(attempt.download_id, { signal: ctx.signal });
    return false;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return true;
    throw error;
  }
}
