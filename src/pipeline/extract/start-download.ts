import { randomUUID } from 'node:crypto';
import type { SearchRequest } from '../../client/types.js';
import { ApiError } from '../../errors.js';
import type { Attempt } from '../../load/destination.js';
import type { Logger } from '../../log.js';
import { checkpoint } from '../checkpoints.js';
import { isoAt } from '../clock.js';
import type { RunContext } from '../context.js';
import { type CreditEstimate, capsOf } from '../guard/estimate.js';
import type { JobRun } from '../job-run.js';
import type { IncrementalRange } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import { verifyDownload } from './adopt.js';

/**
 * Starts (and pays for) a new download of the job, its attempt recorded before the request
 * that pays, so that a crash from then on is found by the next run.
 */
export async function startNewDownload(
  run: JobRun,
  request: SearchRequest,
  estimate: CreditEstimate,
  range: IncrementalRange | undefined,
): Promise<Attempt> {
  const { ctx, job, outcome, log } = run;
  const { destination, client, signal } = ctx;
  const state = destination.state;
  const now = isoAt(ctx.clock);
  const fresh = requestedAttempt(ctx, job, estimate, now, {
    query: request.query,
    cursor_from: range?.from ?? null,
  });
  // Where anything caps the purchase, the start asks for what the guard approved, never more:
  // records that appear after its count are not bought past the cap. Where nothing does, no
  // number (every match; the v4 client, whose service wants one, asks for the count then).
  const caps = capsOf(job, estimate, ctx.spec.budgets);
  const numRecords = caps.length > 0 ? estimate.records : undefined;
  // Written BEFORE the request that pays: a crash from here on is found by the next run.
  await state.insertAttempt(fresh);
  await checkpoint(ctx, 'request-recorded', job.name);
  const start = await client
    .startDownload(
      { ...request, ...(numRecords === undefined ? {} : { numRecords }) },
      {
        ...(signal ? { signal } : {}),
        // After an ambiguous failure, a download that appeared is adopted only if it is ours.
        verify: async (candidate) =>
          (
            await verifyDownload(
              ctx,
              job,
              {
                query: request.query,
                requestedAt: now,
                ...(numRecords === undefined ? {} : { records: numRecords }),
              },
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
  logStart(log, start, estimate, numRecords, caps);
  await checkpoint(ctx, 'download-started', job.name);
  return fresh;
}

/**
 * Says what was asked for; and when the query matched more at the start than the guard counted
 * (records that appeared meanwhile), that the download holds only what the guard approved.
 */
function logStart(
  log: Logger,
  start: { id: string; numFound?: number },
  estimate: CreditEstimate,
  numRecords: number | undefined,
  caps: string[],
): void {
  log.info(
    { download_id: start.id },
    numRecords === undefined
      ? `started download ${start.id} for every matching record (${estimate.found} when counted)`
      : `started download ${start.id} for ${numRecords} records`,
  );
  if (numRecords !== undefined && start.numFound !== undefined && start.numFound > estimate.found) {
    log.warn(
      `the query matched ${start.numFound} records when download ${start.id} started, ${start.numFound - estimate.found} more than the credit guard counted: it asks for the ${numRecords} the guard approved (capped by ${caps.join(', ')}); the rest are not bought`,
    );
  }
}

/**
 * The attempt row of a purchase about to be asked for (`now`: when): a download's, or (with
 * `own` overriding what differs) a scrape's or a targeted update's.
 */
export function requestedAttempt(
  ctx: RunContext,
  job: JobSpec,
  estimate: CreditEstimate,
  now: string,
  own: Partial<Attempt> = {},
): Attempt {
  return {
    attempt_id: randomUUID(),
    pipeline: ctx.spec.name,
    job: job.name,
    spec_hash: job.downloadHash,
    api: ctx.client.api,
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
    load_hash: job.loadHash,
    load_settings: JSON.stringify(job.loadSettings),
    write_mode: job.write,
    data_type: job.type,
    query: job.query,
    format: job.format,
    num_requested: estimate.records,
    cursor_from: null,
    credits: null,
    stage: 'extract',
    ...own,
  };
}
