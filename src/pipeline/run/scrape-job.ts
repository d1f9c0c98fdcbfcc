import { Readable } from 'node:stream';
import { CREDIT_TYPE_OF } from '../../catalog.js';
import type { DownloadInfo, ServiceClient } from '../../client/types.js';
import { SluiceError } from '../../errors.js';
import type { Attempt } from '../../load/destination.js';
import type { Logger } from '../../log.js';
import type { RunContext } from '../context.js';
import { passGuard } from '../extract/extract.js';
import { buyRealTime, closeAttempt, earlierRealTime } from '../extract/real-time.js';
import { creditsOfAttempt } from '../guard/budget.js';
import type { JobRun } from '../job-run.js';
import { breachError, contractBreaches } from '../load/contract.js';
import { dropStaging, finishJob, type JobLoad, loadFiles, prepareTables } from '../load/load.js';
import { inStage, markCommitted } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';

/**
 * A job with `scrape: true`: its records come in the answer of POST /scrape, fetched from their
 * sources in real time, and load into its tables as a download's result file does (write modes,
 * rejects, max_rejects, schema contracts, one transaction with its `_sluice_files` row). The
 * answer is saved with the attempt the moment it comes (`payload`) and loaded from there, so a
 * load that fails (too many rejects, say) or a crash after the answer loads it on the next run
 * without buying it again.
 */
export async function runScrapeJob(load: JobLoad): Promise<void> {
  const { ctx, job, tables, outcome } = load;
  // A frozen table the job's declared columns would change fails it before anything is bought.
  const breaches = await contractBreaches(ctx.destination, job, tables);
  if (breaches.length > 0) throw breachError(job, breaches);
  outcome.stage = 'extract';
  const attempt = await inStage('extract', () =>
    ensureScrape(load, () => inStage('load', () => dropStaging(load))),
  );
  outcome.stage = 'load';
  await inStage('load', () => prepareTables(load));
  if (!attempt) {
    outcome.stage = 'finish';
    await inStage('finish', () => finishJob(load, undefined, undefined));
    outcome.status = 'empty';
    return;
  }
  const records = Number(attempt.num_records ?? 0);
  const info: DownloadInfo = {
    id: attempt.download_id!,
    state: 'completed',
    numRecords: records,
    files: records > 0 ? [{ index: 0, url: '', name: `${attempt.download_id}.json` }] : [],
  };
  outcome.downloaded = records;
  outcome.download_credits = creditsOfAttempt(attempt.credits);
  outcome.credits = attempt.run_id === ctx.runId ? { ...outcome.download_credits } : {};
  ctx.progress.phase(job.name, 'queued', undefined);
  await ctx.loads(async () => {
    outcome.stage = 'load';
    await loadFiles(load, attempt, info, savedAnswer(attempt));
    outcome.stage = 'finish';
    await inStage('finish', () => finishJob(load, attempt, info));
  });
  markCommitted(outcome);
}

/** The scrape to load: the one an earlier run bought and saved, or a new one bought now. */
async function ensureScrape(
  run: JobRun,
  beforeNew: () => Promise<void>,
): Promise<Attempt | undefined> {
  const { ctx, job, outcome, log } = run;
  await ctx.guard.turn(job.name);
  try {
    const earlier = await earlierRealTime(run, (a) => unanswered(ctx, job, a, log));
    if (earlier) {
      outcome.reattached = true;
      outcome.found = earlier.num_found;
      outcome.download_id = earlier.download_id;
      log.info(
        `loading scrape ${earlier.download_id} of ${earlier.requested_at}, saved with its answer: not bought again`,
      );
      return earlier;
    }
    const { estimate } = await passGuard(run, undefined);
    outcome.stage = 'extract';
    await beforeNew();
    if (estimate.found === 0) {
      log.info('no records match the query; nothing to scrape');
      return undefined;
    }
    const usedBefore = await creditsUsed(ctx, job);
    return await buyRealTime(
      run,
      estimate,
      async (records) => {
        const result = await ctx.client.scrape(
          { query: job.query, numRecords: records, type: job.type },
          { signal: ctx.signal },
        );
        return {
          id: result.id,
          records: result.records.length,
          credits: { [CREDIT_TYPE_OF[job.type]]: result.totalCost ?? result.numRecords },
          payload: result.records.map((r) => `${JSON.stringify(r)}\n`).join(''),
        };
      },
      usedBefore,
    );
  } finally {
    ctx.guard.end(job.name);
  }
}

/**
 * An earlier run asked for a scrape and stopped before its answer was saved. The service keeps
 * no list of scrapes, so what became of the request is told by the account: with no credit of
 * the type used since it was asked for, the service charged nothing and it is asked for again;
 * otherwise it may have been charged, and its records cannot be fetched again: the job stops,
 * and `--fresh` (which may pay twice) is the user's call.
 */
async function unanswered(
  ctx: RunContext,
  job: JobSpec,
  attempt: Attempt,
  log: Logger,
): Promise<Attempt | undefined> {
  const used = await creditsUsed(ctx, job);
  const before =
    attempt.used_before === null || attempt.used_before === undefined
      ? undefined
      : Number(attempt.used_before);
  const type = CREDIT_TYPE_OF[job.type];
  if (before !== undefined && used === before) {
    log.warn(
      `an earlier run asked for a scrape at ${attempt.requested_at} and stopped before it heard the answer; the account has used no ${type} credit since, so it was not charged: asking again`,
    );
    await closeAttempt(
      ctx,
      attempt,
      'abandoned',
      'not charged: no credit used since it was asked for',
    );
    return undefined;
  }
  const since =
    before === undefined
      ? 'whether the service charged it cannot be told'
      : `the account has used ${used - before} more ${type} credits since, so the service may have charged it`;
  throw new SluiceError(
    `an earlier run asked for a scrape of ${attempt.num_requested} records at ${attempt.requested_at} and stopped before its answer was saved; ${since}, and a scrape's records cannot be fetched again: run with --fresh to scrape anew (which may pay for them twice)`,
    { code: 'SLUICE_SCRAPE_UNANSWERED' },
  );
}

/** The account's credits used of the job's type (a legacy plan: the total). */
async function creditsUsed(ctx: RunContext, job: JobSpec): Promise<number> {
  const account = await ctx.client.account({ signal: ctx.signal });
  if (account.plan === 'legacy') return account.totalUsed ?? 0;
  return account.credits[CREDIT_TYPE_OF[job.type]].used;
}

/** The scrape's saved answer, read as the result file of a download. */
function savedAnswer(attempt: Attempt): Pick<ServiceClient, 'openResultFile'> {
  return {
    openResultFile: async () => Readable.from([Buffer.from(attempt.payload ?? '', 'utf8')]),
  };
}
