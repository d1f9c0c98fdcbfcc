import { randomUUID } from 'node:crypto';
import pLimit from 'p-limit';
import { createServiceClient } from '../../client/index.js';
import type { ServiceClient } from '../../client/types.js';
import { SluiceError, UsageError } from '../../errors.js';
import type { Destination, Lock } from '../../load/destination.js';
import { openDestination } from '../../load/index.js';
import type { Logger } from '../../log.js';
import { SpareWorkers } from '../../records/index.js';
import { type Clock, isoAt, systemClock } from '../clock.js';
import type { RunContext } from '../context.js';
import { ViewSync } from '../extract/views.js';
import { RunGuard } from '../guard/guard.js';
import { parseWorkers } from '../load/normalize.js';
import { claimJobTables } from '../load/table-claims.js';
import {
  addCredits,
  type ErrorInfo,
  errorInfo,
  inStage,
  markStage,
  type RunSummary,
  runStatus,
} from '../outcome.js';
import { PhaseRecorder, type Progress } from '../progress.js';
import { selectJobs } from '../spec/select.js';
import type { JobSpec, PipelineSpec } from '../spec/spec.js';
import { inSpan } from '../trace.js';
import { logClientEvent, logExchange } from './client-log.js';
import { type PriorWork, priorWork, priorWorkText } from './prior-work.js';
import { replaySummary, replayText, unitOf } from './replay.js';
import { loadsAtOnce, runJobs } from './schedule.js';
import { traceRun } from './trace-run.js';

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Run only the jobs these names or globs name (all when empty). */
  jobs?: string[];
  /** A pattern of `jobs` may name no job of this pipeline (several pipelines run together). */
  lenientJobs?: boolean;
  /** Start new downloads even where an unfinished one could be re-attached. */
  fresh?: boolean;
  /** Incremental jobs download everything (or since their start) and reset their cursors. */
  fullRefresh?: boolean;
  /** Wait for another run of the same pipeline to finish instead of exiting. */
  wait?: boolean;
  /** Jobs in flight at once, in place of the file's `max_parallel_jobs`. */
  parallel?: number;
  /**
   * The orchestrator's key for this run (a logical date, a partition): it names one unit of work,
   * the selected jobs. A run of the key asked for the same jobs that ended is replayed; else the
   * jobs the key's runs loaded are skipped and the others run (see prior-work.ts).
   */
  runKey?: string;
  /** The command of several pipeline files this run belongs to (see batch.ts). */
  batch?: { id: string; members: string };
  signal?: AbortSignal;
  logger: Logger;
  progress: Progress;
  /** Time as the run sees it; tests pass one they move themselves. */
  clock?: Clock;
  /** Injected by tests and tools; by default built from the pipeline's source. */
  client?: ServiceClient;
  destination?: Destination;
}

/** Where a pipeline's data goes: `SLUICE_DESTINATION` overrides the file. */
export function destinationOf(spec: PipelineSpec, env: NodeJS.ProcessEnv) {
  const override = env.SLUICE_DESTINATION;
  return override ? { ...spec.destination, url: override } : spec.destination;
}

/** Opens the pipeline's destination (relative paths of file destinations start at the pipeline file). */
export function openPipelineDestination(
  spec: PipelineSpec,
  env: NodeJS.ProcessEnv,
  options: {
    readOnly?: boolean;
    signal?: AbortSignal;
    logger?: Logger;
    wait?: boolean;
    onWait?: (where: string) => void;
  } = {},
): Promise<Destination> {
  const where = destinationOf(spec, env);
  return openDestination(where.url, {
    settings: where.settings,
    env,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
    ...(options.wait === undefined ? {} : { wait: options.wait }),
    ...(options.onWait ? { onWait: options.onWait } : {}),
    baseDir: spec.baseDir,
    naming: spec.naming,
  });
}

/**
 * The service client of a pipeline's source; what it does (retries, re-logins) is logged. Its
 * clock is the run's (`clock`), so that this machine's time is one time throughout.
 */
export function clientFor(spec: PipelineSpec, logger?: Logger, clock?: Clock): ServiceClient {
  const { api, url, email, password, token } = spec.source;
  if (!url) {
    throw new UsageError(
      `${spec.file}: source.url is not set: set the variable it names (e.g. SLUICE_API_URL)`,
      'SLUICE_CREDENTIALS',
    );
  }
  return createServiceClient(
    { api, url, email, password, token },
    {
      ...(logger ? { onEvent: logClientEvent(logger), onExchange: logExchange(logger) } : {}),
      ...(clock ? { now: () => clock.now() } : {}),
    },
  );
}

/**
 * Runs a pipeline: takes its lock, keeps its views in step, then runs each job (guard, start
 * or re-attach, poll, load every result file exactly once). The run's status comes from the
 * jobs' outcomes and from any failure outside them, and is recorded in `_sluice_runs`.
 */
export function runPipeline(spec: PipelineSpec, options: RunOptions): Promise<RunSummary> {
  return inSpan('sluice run', { 'sluice.pipeline': spec.name }, async (span) => {
    const summary = await runUntraced(spec, options);
    traceRun(span, summary);
    return summary;
  });
}

async function runUntraced(spec: PipelineSpec, options: RunOptions): Promise<RunSummary> {
  const env = options.env ?? process.env;
  const clock = options.clock ?? systemClock;
  const selected = selectJobs(spec, options.jobs, options.lenientJobs === true);
  const log = options.logger.child({ pipeline: spec.name });
  const client = options.client ?? clientFor(spec, log, clock);
  // With --wait, the runs that end while this one waits are what it finds done (prior-work.ts).
  const invoked = isoAt(clock);
  let waitedSince: string | undefined;
  const waiting = (message: string) => {
    waitedSince = invoked;
    log.info(message);
  };
  let destination: Destination | undefined;
  try {
    // Wrong credentials are found before the database is made or a failed run is recorded.
    await inStage('login', () => checkLogin(client, options.signal));
    destination =
      options.destination ??
      (await inStage('destination', () => openRunDestination(spec, env, options, log, waiting)));
    await inStage('destination', () => destination!.ensureState());
    const runId = randomUUID();
    const lock = await lockPipeline(spec, destination, runId, options, waiting);
    const ctx = runContext(spec, selected, options, {
      runId,
      client,
      destination,
      clock,
      log,
      env,
    });
    try {
      const parallel = options.parallel ?? spec.maxParallelJobs;
      return await runLocked(
        spec,
        selected,
        { waitedSince, ...(options.batch ? { batch: options.batch } : {}) },
        ctx,
        parallel,
      );
    } finally {
      await ctx.parsers.close();
      await lock.release();
    }
  } finally {
    if (!options.destination) await destination?.close();
    if (!options.client) await client.close();
  }
}

/** The pipeline's destination opened for a run; with --wait, for a database another holds. */
function openRunDestination(
  spec: PipelineSpec,
  env: NodeJS.ProcessEnv,
  options: RunOptions,
  log: Logger,
  waiting: (message: string) => void,
): Promise<Destination> {
  return openPipelineDestination(spec, env, {
    ...(options.signal ? { signal: options.signal } : {}),
    logger: log,
    wait: options.wait === true,
    onWait: (where) =>
      waiting(
        `another process has ${where} open, and its database lets one process at a time write to it; waiting for it to end`,
      ),
  });
}

/**
 * The pipeline's lock, held by this run: one run of a pipeline at a time. Without --wait, a run
 * that finds it held is refused (SLUICE_LOCKED); any failure is of the `lock` stage.
 */
function lockPipeline(
  spec: PipelineSpec,
  destination: Destination,
  runId: string,
  options: RunOptions,
  waiting: (message: string) => void,
): Promise<Lock> {
  return destination
    .lock(`pipeline:${spec.name}`, {
      wait: options.wait === true,
      holder: runId,
      ...(options.signal ? { signal: options.signal } : {}),
      onWait: (where) =>
        waiting(
          `another run of pipeline '${spec.name}' is in progress (it holds ${where}); waiting for it to end`,
        ),
    })
    .catch((error: unknown) => {
      if ((error as { code?: unknown }).code !== 'SLUICE_LOCKED') throw markStage(error, 'lock');
      throw new SluiceError(
        `another run of pipeline '${spec.name}' is in progress on ${destination.description} (${(error as Error).message}); wait for it, or run with --wait`,
        { code: 'SLUICE_LOCKED' },
      );
    })
    .catch((error: unknown) => {
      throw markStage(error, 'lock');
    });
}

/** What the run's jobs share: its client, destination, clock, guard, views and load slots. */
function runContext(
  spec: PipelineSpec,
  selected: JobSpec[],
  options: RunOptions,
  run: {
    runId: string;
    client: ServiceClient;
    destination: Destination;
    clock: Clock;
    log: Logger;
    env: NodeJS.ProcessEnv;
  },
): RunContext {
  const { runId, client, destination, clock, log, env } = run;
  return {
    spec,
    runId,
    client,
    destination,
    clock,
    logger: log.child({ run_id: runId }),
    progress: options.progress,
    env,
    fresh: options.fresh === true,
    fullRefresh: options.fullRefresh === true,
    ...(options.runKey === undefined ? {} : { runKey: options.runKey }),
    views: new ViewSync(client, spec, log, options.signal),
    guard: new RunGuard(
      client,
      // Jobs that wait for another (an owner lookup, a refreshed job) take no turn.
      selected.filter((j) => !j.people_keys_from && !j.refreshedBy).map((j) => j.name),
    ),
    loads: pLimit(loadsAtOnce(env, destination.capabilities.concurrentWriters)),
    parsers: new SpareWorkers(parseWorkers(env, Number.POSITIVE_INFINITY)),
    ...(options.signal ? { signal: options.signal } : {}),
  };
}

/**
 * The cheapest call that needs the credentials: v4's account (a login first, with an email and
 * a password), v3's list of requests (its health check, which takes the token).
 */
async function checkLogin(client: ServiceClient, signal?: AbortSignal): Promise<void> {
  const options = signal ? { signal } : {};
  if (client.api === 'v3') await client.health(options);
  else await client.account(options);
}

/** This run holds the lock: any other run still marked running died without finishing. */
async function markDeadRuns(ctx: RunContext): Promise<void> {
  const state = ctx.destination.state;
  for (const dead of await state.runsLeftRunning(ctx.spec.name)) {
    await state.finishRun(dead.run_id, {
      finished_at: null,
      status: 'interrupted',
      stage: dead.stage,
      error_code: 'SLUICE_INTERRUPTED',
      error_message: `the run ended without finishing (killed, or its machine stopped); found by run ${ctx.runId}`,
      summary: dead.summary,
      credits: dead.credits,
    });
    ctx.logger.info(
      `run ${dead.run_id} of ${dead.started_at} ended without finishing; marked interrupted`,
    );
  }
}

/** What a run was asked for beyond its jobs, and what happened before it took the lock. */
interface RunRequest {
  /** It waited for the pipeline (its lock, its database) since this time. */
  waitedSince: string | undefined;
  batch?: { id: string; members: string };
}

async function runLocked(
  spec: PipelineSpec,
  selected: JobSpec[],
  request: RunRequest,
  ctx: RunContext,
  parallel: number,
): Promise<RunSummary> {
  const { destination, clock, logger: log } = ctx;
  const started = clock.now();
  const startedAt = isoAt(clock);
  await markDeadRuns(ctx);
  const prior = await priorWork(destination.state, spec, selected, {
    runKey: ctx.runKey,
    fresh: ctx.fresh,
    waitedSince: request.waitedSince,
    now: clock.now(),
  });
  if (prior.replay) {
    const { run, reason } = prior.replay;
    const summary = replaySummary(run, reason, {
      destination: destination.description,
      startedAt,
      seconds: Math.round((clock.now() - started) / 10) / 100,
    });
    log.info(replayText(summary));
    return summary;
  }
  if (prior.loaded) ctx.resume = prior.loaded;
  const continued = priorWorkText(prior, ctx.runKey);
  if (continued) log.info(continued);
  const summary = await startRun(spec, selected, request, ctx, {
    startedAt,
    resume: prior.resumes,
  });
  let runError = await claimTables(ctx, selected);
  if (runError === undefined) await runSelected(ctx, selected, parallel, summary);
  if (ctx.views.failure !== undefined) {
    runError = errorInfo(ctx.views.failure, 'views');
    if (!ctx.signal?.aborted) log.error(`views: ${runError.message}`);
  }
  return finishRun(ctx, summary, runError, started);
}

/** The run recorded in `_sluice_runs` as running, and its summary before any job ran. */
async function startRun(
  spec: PipelineSpec,
  selected: JobSpec[],
  request: RunRequest,
  ctx: RunContext,
  at: { startedAt: string; resume: PriorWork['resumes'] },
): Promise<RunSummary> {
  const { startedAt, resume } = at;
  await ctx.destination.state.startRun({
    runId: ctx.runId,
    pipeline: spec.name,
    startedAt,
    resumes: resume?.root ?? null,
    runKey: ctx.runKey ?? null,
    selectedJobs: unitOf(selected),
    batch: request.batch ?? null,
  });
  return {
    pipeline: spec.name,
    run_id: ctx.runId,
    resumed_from: resume?.run.run_id ?? null,
    status: 'succeeded',
    replayed: false,
    destination: ctx.destination.description,
    started_at: startedAt,
    seconds: 0,
    credits: {},
    views: { created: [], updated: [], unchanged: [] },
    jobs: [],
  };
}

/**
 * Before anything is bought: a table of another pipeline, or role, refuses the run. Gives the
 * run's error then (logged unless the run was stopped).
 */
async function claimTables(ctx: RunContext, selected: JobSpec[]): Promise<ErrorInfo | undefined> {
  try {
    await claimJobTables(ctx, selected);
    return undefined;
  } catch (error) {
    const runError = errorInfo(error, 'tables');
    if (!ctx.signal?.aborted) ctx.logger.error(`tables: ${runError.message}`);
    return runError;
  }
}

/** The selected jobs run, their outcomes, views and credits put in the run's summary. */
async function runSelected(
  ctx: RunContext,
  selected: JobSpec[],
  parallel: number,
  summary: RunSummary,
): Promise<void> {
  // Views are synced by the jobs that need them, each once its guard and contract passed.
  summary.views = ctx.views.done;
  // Each job's phases go to _sluice_phases too, for the dashboard's timeline.
  const shown = ctx.progress;
  const phases = new PhaseRecorder(
    shown,
    ctx.destination.state,
    { runId: ctx.runId, pipeline: ctx.spec.name },
    () => isoAt(ctx.clock),
    ctx.logger,
  );
  ctx.progress = phases;
  try {
    summary.jobs = await runJobs(ctx, selected, parallel);
  } finally {
    ctx.progress = shown;
    await phases.flush();
  }
  for (const outcome of summary.jobs) addCredits(summary.credits, outcome.credits);
}

/** The run's status from its jobs and its own error, recorded in `_sluice_runs`. */
async function finishRun(
  ctx: RunContext,
  summary: RunSummary,
  runError: ErrorInfo | undefined,
  started: number,
): Promise<RunSummary> {
  const { clock } = ctx;
  const aborted = ctx.signal?.aborted === true;
  summary.status = runStatus(summary.jobs, aborted ? undefined : runError, aborted);
  if (runError && !aborted) summary.error = runError;
  summary.seconds = Math.round((clock.now() - started) / 10) / 100;
  const failure = summary.error ?? summary.jobs.find((j) => j.error)?.error;
  await ctx.destination.state.finishRun(ctx.runId, {
    finished_at: isoAt(clock),
    status: summary.status,
    stage: failure?.stage ?? null,
    error_code: failure?.code ?? null,
    error_message: failure?.message ?? null,
    summary: JSON.stringify(summary),
    credits: JSON.stringify(summary.credits),
  });
  return summary;
}
