import type { DownloadInfo } from '../../client/types.js';
import { SluiceError } from '../../errors.js';
import type { Attempt } from '../../load/destination.js';
import type { Logger } from '../../log.js';
import { plural } from '../../util/words.js';
import { isoAt } from '../clock.js';
import type { RunContext } from '../context.js';
import type { JobRun } from '../job-run.js';
import { loadChanges } from '../spec/load-changes.js';
import type { JobSpec } from '../spec/spec.js';
import { verifyDownload } from './adopt.js';

/**
 * The job's open attempt from an earlier run, if it is still to be loaded: left by --fresh or
 * a changed job (closed here), moved to the job's new table or mode, and adopted when an earlier
 * run asked for it and stopped before it heard the download's id. Undefined when none is left.
 */
export async function earlierAttempt(run: JobRun): Promise<Attempt | undefined> {
  const { ctx, job, log } = run;
  const state = ctx.destination.state;
  const attempt = await state.openAttempt(ctx.spec.name, job.name);
  if (!attempt) return undefined;
  const end = async (status: string, message: string) => {
    await state.updateAttempt(attempt.attempt_id, {
      status,
      message,
      updated_at: isoAt(ctx.clock),
    });
    return undefined;
  };
  if (ctx.fresh) {
    log.warn(
      `--fresh: leaving download ${attempt.download_id ?? '(unknown id)'} of an earlier run`,
    );
    return end('abandoned', 'abandoned by --fresh');
  }
  if (attempt.spec_hash !== job.downloadHash) {
    log.warn(
      `the job changed since download ${attempt.download_id ?? '(unknown id)'} was started; starting a new one`,
    );
    return end('superseded', 'the job changed in the pipeline file');
  }
  if ((attempt.load_hash ?? job.loadHash) !== job.loadHash) {
    await retarget(ctx, job, attempt, job.loadHash, log);
  }
  if (attempt.status === 'requested' && !(await adoptRequested(ctx, job, attempt, log))) {
    log.warn(
      'an earlier run asked for a download and stopped before it heard the id; no download on the service can be shown to be that one, so a new one is started',
    );
    return end('abandoned', 'no download found for this request');
  }
  return attempt;
}

/**
 * An earlier run asked for a download and stopped before it heard the id: the download found
 * to be that one is recorded as started (true), or none is (false).
 */
async function adoptRequested(
  ctx: RunContext,
  job: JobSpec,
  attempt: Attempt,
  log: Logger,
): Promise<boolean> {
  const found = await findUnrecordedDownload(ctx, attempt, job, log);
  if (!found) return false;
  await ctx.destination.state.updateAttempt(attempt.attempt_id, {
    download_id: found.id,
    status: 'started',
    started_at: isoAt(ctx.clock),
    updated_at: isoAt(ctx.clock),
  });
  attempt.download_id = found.id;
  attempt.status = 'started';
  log.info(`found download ${found.id}, started by an interrupted run; re-attaching`);
  return true;
}

/**
 * The job now loads into another table, or in another mode, than when its open download was
 * started. Before any of its files is loaded that is free to follow; after, the download is
 * half in one place: refused, so that nothing is misplaced, wiped or bought again unasked.
 */
async function retarget(
  ctx: RunContext,
  job: JobSpec,
  attempt: Attempt,
  loadHash: string,
  log: Logger,
): Promise<void> {
  const state = ctx.destination.state;
  const loaded =
    attempt.download_id === null ? 0 : (await state.loadedFiles(attempt.download_id)).size;
  if (loaded > 0) {
    const changes = loadChanges(attempt, job);
    throw new SluiceError(
      `job '${job.name}' changed how it loads while download ${attempt.download_id} is half loaded (${plural(loaded, 'file')} of it in the tables): ${changes.join('; ')}. Set ${changes.length === 1 ? 'it' : 'them'} back as ${changes.length === 1 ? 'it was' : 'they were'} and run again to finish this download (then make the change), or run with --fresh to leave it and buy a new download`,
      { code: 'SLUICE_JOB_CHANGED' },
    );
  }
  log.info(
    `the job now writes ${job.write} into ${ctx.destination.naming.table(job.table)}; download ${attempt.download_id ?? '(being started)'} has no file loaded yet and will go there`,
  );
  const changes = {
    load_hash: loadHash,
    load_settings: JSON.stringify(job.loadSettings),
    target_table: job.table,
    load_table: job.table,
    write_mode: job.write,
    updated_at: isoAt(ctx.clock),
  };
  await state.updateAttempt(attempt.attempt_id, changes);
  Object.assign(attempt, changes);
}

/**
 * The download an interrupted run may have started: new since its request, known to no
 * attempt of this destination, and shown to be this job's by what it holds (see adopt.ts).
 */
async function findUnrecordedDownload(
  ctx: RunContext,
  attempt: Attempt,
  job: JobSpec,
  log: Logger,
): Promise<DownloadInfo | undefined> {
  const known = await ctx.destination.state.knownDownloadIds();
  // requested_at is this machine's time, createdAt the service's: on the service's clock as it
  // differs now, or as if the two agreed (the run that asked may have seen another difference),
  // whichever is earlier, with a few minutes' slack; adopt.ts then checks each candidate.
  const mine = Date.parse(attempt.requested_at);
  const since = Math.min(mine, ctx.client.serviceTime(mine)) - 5 * 60_000;
  const candidates = (await ctx.client.listDownloads({ signal: ctx.signal }))
    .filter((d) => !known.has(d.id))
    .filter((d) => d.createdAt === undefined || Date.parse(d.createdAt) >= since)
    .sort((a, b) => Date.parse(a.createdAt ?? '') - Date.parse(b.createdAt ?? ''));
  const request = {
    query: attempt.query ?? job.query,
    requestedAt: attempt.requested_at,
    ...(attempt.num_requested === null ? {} : { records: Number(attempt.num_requested) }),
  };
  for (const candidate of candidates) {
    const verdict = await verifyDownload(ctx, job, request, candidate);
    if (verdict.ours) return candidate;
    log.warn(
      `download ${candidate.id} is not the one this job asked for (${verdict.reason}): not adopted`,
    );
  }
  return undefined;
}
