import type { Logger } from '../log.js';
import type { JobTables } from '../records/tables.js';
import { checkpoint } from './checkpoints.js';
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
import { inStage, type JobOutcome } from './outcome.js';
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
  const download = await inStage('extract', () =>
    ensureDownload(ctx, job, outcome, log, () => inStage('load', () => dropStaging(load))),
  );
  outcome.stage = 'load';
  await inStage('load', () => prepareTables(load));
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
  await checkpoint(ctx, 'job-finished', job.name);
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
