import type { DownloadInfo } from '../../client/types.js';
import { ApiError, SluiceError } from '../../errors.js';
import type { Attempt } from '../../load/destination.js';
import type { RunContext } from '../context.js';
import { ensureDownload } from '../extract/extract.js';
import { waitForDownload } from '../extract/poll-download.js';
import { recordsAsked } from '../guard/figures.js';
import { breachError, contractBreaches } from '../load/contract.js';
import {
  countCredits,
  dropStaging,
  finishJob,
  type JobLoad,
  loadFiles,
  prepareTables,
} from '../load/load.js';
import { errorInfo, inStage, type JobOutcome, markCommitted } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import { inSpan } from '../trace.js';

/** A job that downloads: its own, or one part of an owner lookup. */
export async function runDownloadJob(load: JobLoad): Promise<void> {
  const { ctx, job, tables, outcome, log } = load;
  // A frozen table the job's declared columns would change fails it before anything is bought.
  const breaches = await contractBreaches(ctx.destination, job, tables);
  if (breaches.length > 0) throw breachError(job, breaches);
  outcome.stage = 'extract';
  const ensure = () =>
    inStage('extract', () => ensureDownload(load, () => inStage('load', () => dropStaging(load))));
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
  const at = { 'sluice.download_id': download.attempt.download_id ?? undefined };
  const polled = await inSpan('poll', at, () =>
    inStage('extract', () => waitForDownload(load, download.attempt)),
  );
  countCredits(ctx, job, download.attempt, polled.info, outcome);
  // The download is ready: the job waits for its turn at the destination's writers.
  ctx.progress.phase(job.name, 'queued', undefined);
  const cancelled = await ctx.loads(async () => {
    outcome.stage = 'load';
    await loadFiles(load, download.attempt, polled.info);
    outcome.stage = 'finish';
    const cancelled =
      polled.info.state === 'cancelled' && !polled.timedOut
        ? cancelledOnService(job, download.attempt, polled.info, outcome)
        : undefined;
    const ended = polled.timedOut ? 'timed_out' : cancelled ? 'cancelled' : undefined;
    await inStage('finish', () => finishJob(load, download.attempt, polled.info, ended));
    return cancelled;
  });
  markCommitted(outcome);
  if (polled.timedOut) {
    outcome.status = 'timed_out';
    outcome.message = polled.timedOut;
    outcome.error = errorInfo(
      new SluiceError(polled.timedOut, { code: 'SLUICE_TIMEOUT' }),
      'extract',
    );
  } else if (cancelled) {
    outcome.status = 'cancelled';
    outcome.message = cancelled.message;
    outcome.error = errorInfo(cancelled, 'extract');
    log.warn(cancelled.message);
  }
}

/**
 * A download someone else cancelled (in the portal, another program): the records it holds are
 * paid for and loaded, and the job says it got fewer than it asked for.
 */
function cancelledOnService(
  job: JobSpec,
  attempt: Attempt,
  info: DownloadInfo,
  outcome: JobOutcome,
): SluiceError {
  const asked = recordsAsked(job, attempt);
  const of = asked === undefined ? '' : ` of the ${asked} asked for`;
  return new SluiceError(
    `download ${attempt.download_id} was cancelled on the service, not by this run: loaded the ${outcome.loaded + outcome.rejected} records it holds${of} (${info.numRecords} paid for); run again to buy the job anew`,
    { code: 'SLUICE_DOWNLOAD_CANCELLED' },
  );
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
