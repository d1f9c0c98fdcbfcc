import { randomUUID } from 'node:crypto';
import type { DownloadInfo } from '../client/types.js';
import { ApiError, CreditGuardError, SluiceError } from '../errors.js';
import type { Attempt } from '../load/destination.js';
import type { Logger } from '../log.js';
import { verifyDownload } from './adopt.js';
import { budgetStandings } from './budget.js';
import { checkpoint } from './checkpoints.js';
import { isoAt } from './clock.js';
import type { RunContext } from './context.js';
import { searchRequestOf } from './estimate.js';
import { describeRange, rangeOf, rangeQuery, reattachedRange } from './incremental.js';
import { inStage, type JobOutcome } from './outcome.js';
import type { JobSpec } from './spec.js';

/**
 * The extract stage: the credit guard, then a download to load: re-attached (an earlier run
 * started it), adopted (an earlier run asked for it and died before hearing its id), or started
 * (and paid for) now; then polling it until it is done.
 */

export interface DownloadToLoad {
  attempt: Attempt;
  /** False when an earlier run started it: its tables may hold some of its files already. */
  startedNow: boolean;
}

/**
 * The download the job loads, or undefined when its query matches nothing (nothing is
 * started, nothing spent).
 */
export async function ensureDownload(
  ctx: RunContext,
  job: JobSpec,
  outcome: JobOutcome,
  log: Logger,
  /** Runs once the guard has passed, before a new download is asked for (or none is needed). */
  beforeNew: () => Promise<void>,
): Promise<DownloadToLoad | undefined> {
  // The jobs of a run start their downloads in the file's order, one after another (RunGuard).
  await ctx.guard.turn(job.name);
  try {
    return await ensureDownloadInTurn(ctx, job, outcome, log, beforeNew);
  } finally {
    ctx.guard.end(job.name);
  }
}

async function ensureDownloadInTurn(
  ctx: RunContext,
  job: JobSpec,
  outcome: JobOutcome,
  log: Logger,
  beforeNew: () => Promise<void>,
): Promise<DownloadToLoad | undefined> {
  const { destination, client, signal } = ctx;
  const state = destination.state;
  const pipeline = ctx.spec.name;
  const loadHash = job.loadHash;
  let attempt = await state.openAttempt(pipeline, job.name);
  const end = async (status: string, message: string) => {
    await state.updateAttempt(attempt!.attempt_id, {
      status,
      message,
      updated_at: isoAt(ctx.clock),
    });
    attempt = undefined;
  };
  if (attempt && ctx.fresh) {
    log.warn(
      `--fresh: leaving download ${attempt.download_id ?? '(unknown id)'} of an earlier run`,
    );
    await end('abandoned', 'abandoned by --fresh');
  }
  if (attempt && attempt.spec_hash !== job.downloadHash) {
    log.warn(
      `the job changed since download ${attempt.download_id ?? '(unknown id)'} was started; starting a new one`,
    );
    await end('superseded', 'the job changed in the pipeline file');
  }
  if (attempt && (attempt.load_hash ?? loadHash) !== loadHash) {
    await retarget(ctx, job, attempt, loadHash, log);
  }
  if (attempt?.status === 'requested') {
    // An earlier run asked for a download and stopped before it heard the id.
    const found = await findUnrecordedDownload(ctx, attempt, job, log);
    if (found) {
      await state.updateAttempt(attempt.attempt_id, {
        download_id: found.id,
        status: 'started',
        started_at: isoAt(ctx.clock),
        updated_at: isoAt(ctx.clock),
      });
      attempt.download_id = found.id;
      attempt.status = 'started';
      log.info(`found download ${found.id}, started by an interrupted run; re-attaching`);
    } else {
      log.warn(
        'an earlier run asked for a download and stopped before it heard the id; no download on the service can be shown to be that one, so a new one is started',
      );
      await end('abandoned', 'no download found for this request');
    }
  }

  const saved = job.incremental ? await state.cursor(pipeline, job.name) : undefined;
  if (attempt) {
    outcome.reattached = true;
    outcome.found = attempt.num_found;
    outcome.download_id = attempt.download_id;
    outcome.incremental = reattachedRange(job, attempt, saved);
    log.info(`re-attaching to download ${attempt.download_id} started at ${attempt.started_at}`);
    if (ctx.fullRefresh && attempt.cursor_from !== null) {
      log.warn(
        `--full-refresh: download ${attempt.download_id} (records since ${attempt.cursor_from}) is paid for and is loaded first; the full refresh is the next new download (run with --fresh as well to leave this one)`,
      );
    }
    return { attempt, startedNow: false };
  }

  const range = rangeOf(job, saved, ctx.fullRefresh);
  outcome.incremental = range;
  if (range) log.info(describeRange(range));
  outcome.stage = 'guard';
  const request = searchRequestOf(job, rangeQuery(job.query, range));
  // What the jobs before this one bought is in the state tables already: it counts.
  const budgets = await inStage('guard', () => budgetStandings(ctx.spec, state, ctx.clock.now()));
  const estimate = await inStage('guard', () => ctx.guard.check(job, request, signal, budgets));
  outcome.found = estimate.found;
  const refusal = estimate.refusals[0];
  if (refusal) throw new CreditGuardError(refusal.message, refusal);
  if (estimate.legacy) {
    log.info(
      `the account is on a legacy plan (${estimate.legacy.total_used} credits used in all): the service does not say what is left, so the guard checked max_credits${ctx.spec.budgets.length > 0 ? ' and the budgets' : ''} only; the service refuses (402) a download the account cannot pay for`,
    );
  }
  outcome.stage = 'extract';
  await beforeNew();
  if (estimate.found === 0) {
    log.info('no records match the query; nothing to download');
    return undefined;
  }
  const now = isoAt(ctx.clock);
  const fresh: Attempt = {
    attempt_id: randomUUID(),
    pipeline,
    job: job.name,
    spec_hash: job.downloadHash,
    api: client.api,
    download_id: null,
    status: 'requested',
    target_table: job.table,
    load_table: job.table,
    num_found: estimate.found,
    num_records: null,
    requested_at: now,
    started_at: null,
    updated_at: now,
    finished_at: null,
    run_id: ctx.runId,
    message: null,
    load_hash: loadHash,
    write_mode: job.write,
    data_type: job.type,
    query: request.query,
    format: job.format,
    num_requested: estimate.records,
    cursor_from: range?.from ?? null,
    credits: null,
    stage: 'extract',
  };
  // Written BEFORE the request that pays: a crash from here on is found by the next run.
  await state.insertAttempt(fresh);
  const start = await client
    .startDownload(
      { ...request, ...(job.records === undefined ? {} : { numRecords: job.records }) },
      {
        ...(signal ? { signal } : {}),
        // After an ambiguous failure, a download that appeared is adopted only if it is ours.
        verify: async (candidate) =>
          (
            await verifyDownload(
              ctx,
              job,
              { query: request.query, requestedAt: now, records: estimate.records },
              candidate,
            )
          ).ours,
      },
    )
    .catch(async (error: unknown) => {
      // The service answered that it will not pay for it (402): no download was started, so
      // the request is closed here rather than left for the next run to look for (and for the
      // budgets to count as maybe bought).
      if (error instanceof ApiError && error.status === 402) {
        await state.updateAttempt(fresh.attempt_id, {
          status: 'abandoned',
          message: `the service refused to start it: ${error.message}`,
          updated_at: isoAt(ctx.clock),
        });
      }
      throw error;
    });
  fresh.download_id = start.id;
  fresh.status = 'started';
  fresh.started_at = isoAt(ctx.clock);
  fresh.num_found = start.numFound ?? estimate.found;
  await state.updateAttempt(fresh.attempt_id, {
    download_id: fresh.download_id,
    status: fresh.status,
    started_at: fresh.started_at,
    updated_at: fresh.started_at,
    num_found: fresh.num_found,
  });
  outcome.download_id = start.id;
  log.info(
    { download_id: start.id },
    `started download ${start.id} for ${estimate.records} records`,
  );
  await checkpoint(ctx, 'download-started', job.name);
  return { attempt: fresh, startedNow: true };
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
    const was = `${attempt.write_mode ?? 'its earlier write mode'} into ${attempt.target_table}`;
    throw new SluiceError(
      `job '${job.name}' changed how it loads (now ${job.write} into ${job.table}, was ${was}) while download ${attempt.download_id} is half loaded (${loaded} file${loaded === 1 ? '' : 's'}): run once more with the old table and write settings to finish it, or run with --fresh to leave it and buy a new download`,
      { code: 'SLUICE_JOB_CHANGED' },
    );
  }
  log.info(
    `the job now writes ${job.write} into ${job.table}; download ${attempt.download_id ?? '(being started)'} has no file loaded yet and will go there`,
  );
  const changes = {
    load_hash: loadHash,
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
  // Tolerate clocks that disagree by a few minutes between this machine and the service.
  const since = Date.parse(attempt.requested_at) - 5 * 60_000;
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

export interface Polled {
  info: DownloadInfo;
  /** Set when the poll timed out and the download was cancelled: what to report. */
  timedOut?: string;
}

/** Polls the download with backoff until it completes, fails or the poll timeout passes. */
export async function waitForDownload(
  ctx: RunContext,
  job: JobSpec,
  attempt: Attempt,
  log: Logger,
): Promise<Polled> {
  const { client, clock, signal, progress } = ctx;
  const state = ctx.destination.state;
  const id = attempt.download_id!;
  const deadline = clock.now() + job.poll.timeout;
  let interval = job.poll.interval;
  const target =
    job.records === undefined
      ? (attempt.num_found ?? undefined)
      : Math.min(job.records, attempt.num_found ?? job.records);
  progress.phase(job.name, 'download', target);
  let lastState = '';
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
