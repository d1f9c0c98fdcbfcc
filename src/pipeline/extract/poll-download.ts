import type { DownloadInfo } from '../../client/types.js';
import { SluiceError } from '../../errors.js';
import type { Attempt } from '../../load/destination.js';
import { checkpoint } from '../checkpoints.js';
import { isoAt } from '../clock.js';
import type { RunContext } from '../context.js';
import { recordsAsked } from '../guard/figures.js';
import type { JobRun } from '../job-run.js';
import { plannedTables } from '../load/job-columns.js';
import { readsItself } from '../load/native-file.js';
import { warmParsers } from '../load/normalize.js';

/** The end of the extract stage: polling a download until it is done. */

export interface Polled {
  info: DownloadInfo;
  /** Set when the poll timed out and the download was cancelled: what to report. */
  timedOut?: string;
}

/** Polls the download with backoff until it completes, fails or the poll timeout passes. */
export async function waitForDownload(run: JobRun, attempt: Attempt): Promise<Polled> {
  const { ctx, job, log } = run;
  const { client, clock, signal, progress } = ctx;
  const state = ctx.destination.state;
  const id = attempt.download_id!;
  const deadline = clock.now() + job.poll.timeout;
  let interval = job.poll.interval;
  const target = recordsAsked(job, attempt);
  progress.phase(job.name, 'download', target);
  if (readsItself(ctx, plannedTables(ctx.spec, job))) ctx.destination.prepareReads();
  else warmParsers(ctx, target);
  let lastState = '';
  let unlistedSaid = false;
  for (let polls = 1; ; polls++) {
    // A service asking to wait (429) is waited for, up to what is left of the poll timeout.
    const info = await client.getDownload(id, {
      signal,
      maxWaitMs: Math.max(0, deadline - clock.now()),
    });
    if (polls === 1) await checkpoint(ctx, 'polling', job.name);
    progress.update(job.name, info.numRecords, target);
    if (info.numRecords !== attempt.num_records) {
      attempt.num_records = info.numRecords;
      await state.updateAttempt(attempt.attempt_id, {
        num_records: info.numRecords,
        updated_at: isoAt(clock),
      });
    }
    if (info.unlistedStatus !== undefined && !unlistedSaid) {
      // Said once: every poll may repeat it, and one line tells all there is to tell.
      unlistedSaid = true;
      log.warn(
        { download_id: id, status: info.unlistedStatus },
        `download ${id} has status '${info.unlistedStatus}', which sluice does not know: it is taken as still in progress, and polled until it says more or the job's poll timeout passes`,
      );
    }
    if (info.state !== lastState) {
      log.info(
        { download_id: id, state: info.state, records: info.numRecords },
        `download ${id} is ${info.state}`,
      );
      lastState = info.state;
    }
    if (info.state === 'completed' || info.state === 'cancelled') return { info };
    if (info.state === 'failed') {
      await state.updateAttempt(attempt.attempt_id, {
        status: 'failed',
        message: info.error ?? 'the service reported a failure',
        updated_at: isoAt(clock),
      });
      throw new SluiceError(
        `download ${id} failed: ${info.error ?? 'the service gave no reason'}`,
        {
          code: 'SLUICE_DOWNLOAD_FAILED',
        },
      );
    }
    if (clock.now() >= deadline) {
      if (job.poll.on_timeout === 'cancel') {
        await client.cancelDownload(id, { signal });
        const message = `download ${id} did not finish within the poll timeout; cancelled it and loaded the records delivered so far`;
        log.warn(message);
        // Records delivered before the cancellation are paid for: load them.
        return { info: await waitForCancelled(ctx, id), timedOut: message };
      }
      throw new SluiceError(
        `download ${id} did not finish within the poll timeout; left it running, a later run will re-attach to it`,
        { code: 'SLUICE_TIMEOUT' },
      );
    }
    await clock.sleep(Math.min(interval, Math.max(0, deadline - clock.now())), signal);
    interval = Math.round(Math.min(interval * 1.5, job.poll.max_interval));
  }
}

async function waitForCancelled(ctx: RunContext, id: string): Promise<DownloadInfo> {
  for (let i = 0; ; i++) {
    const info = await ctx.client.getDownload(id, { signal: ctx.signal });
    if (info.state !== 'running' && info.state !== 'queued') return info;
    if (i > 20) {
      throw new SluiceError(`download ${id} did not stop after it was cancelled`, {
        code: 'SLUICE_TIMEOUT',
      });
    }
    await ctx.clock.sleep(500, ctx.signal);
  }
}
