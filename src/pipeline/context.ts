import type { LimitFunction } from 'p-limit';
import type { ServiceClient } from '../client/types.js';
import type { Destination, JobRow } from '../load/destination.js';
import type { Logger } from '../log.js';
import type { SpareWorkers } from '../records/index.js';
import type { ShapePlan } from '../records/tables.js';
import { type Clock, isoAt } from './clock.js';
import type { ViewSync } from './extract/views.js';
import type { RunGuard } from './guard/guard.js';
import type { JobOutcome } from './outcome.js';
import type { Progress } from './progress.js';
import type { LoadedBefore } from './run/resume.js';
import type { JobSpec, PipelineSpec } from './spec/spec.js';

/** What every stage of a run works with. */
export interface RunContext {
  spec: PipelineSpec;
  runId: string;
  client: ServiceClient;
  destination: Destination;
  clock: Clock;
  logger: Logger;
  progress: Progress;
  env: NodeJS.ProcessEnv;
  /** Start new downloads instead of re-attaching to unfinished ones. */
  fresh: boolean;
  /** Incremental jobs ignore their cursors, and reset them once loaded. */
  fullRefresh: boolean;
  /** The orchestrator's key for the run (`--run-key`). */
  runKey?: string;
  /**
   * Jobs earlier runs loaded that this run does not buy again: those of the run it resumes, of
   * its run key's runs, of the runs it waited for (see prior-work.ts).
   */
  resume?: LoadedBefore;
  /** The credit guard of the run, and the order in which its jobs start downloads. */
  guard: RunGuard;
  /** The declared views, synced by the first job that downloads with each (views.ts). */
  views: ViewSync;
  /**
   * Jobs loading at once: each takes a turn here once its download is complete, so a destination
   * with one writer loads them one after another, in the order their downloads end.
   */
  loads: LimitFunction;
  /** Parse workers a load gives back for the next to take, warm (records/workers/parallel.ts). */
  parsers: SpareWorkers;
  signal?: AbortSignal;
}

/** How a job's records become rows: the plan parse workers receive. */
export function shapePlanOf(job: JobSpec, spec: PipelineSpec): ShapePlan {
  const view = job.view === undefined ? undefined : spec.views[job.view];
  const fields = view && [...new Set(view.fields.map((f) => f.replace(/:\*$/, '').split('.')[0]!))];
  return {
    type: job.type,
    table: job.table,
    key: job.key,
    write: job.write,
    nested: job.nested,
    ...(fields === undefined ? {} : { fields }),
    ...(job.auto_trace ? { autotrace: { peopleTable: job.people_table ?? 'people' } } : {}),
    ...(Object.keys(job.columns).length > 0 ? { columns: job.columns } : {}),
  };
}

/**
 * A job's row in `_sluice_jobs`. Written in the transaction that finishes the job (so a run
 * killed right after cannot forget that the job is loaded), and again when the run moves on.
 */
export function jobRow(
  ctx: RunContext,
  job: JobSpec,
  outcome: JobOutcome,
  startedAt: string,
): JobRow {
  return {
    run_id: ctx.runId,
    pipeline: ctx.spec.name,
    job: job.name,
    spec_hash: job.downloadHash,
    load_hash: job.loadHash,
    status: outcome.status,
    stage: outcome.stage,
    started_at: startedAt,
    finished_at: isoAt(ctx.clock),
    download_ids: outcome.download_id,
    error_code: outcome.error?.code ?? null,
    error_message: outcome.error?.message ?? null,
    summary: JSON.stringify(outcome),
  };
}
