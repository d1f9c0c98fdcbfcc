import { createHash } from 'node:crypto';
import type { ServiceClient } from '../client/types.js';
import type { Destination } from '../load/destination.js';
import type { Logger } from '../log.js';
import type { ShapePlan } from '../records/tables.js';
import type { Clock } from './clock.js';
import type { Progress } from './progress.js';
import type { JobSpec, PipelineSpec } from './spec.js';

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
  };
}

/**
 * Hash of what decides where and how a download's rows land (table, write mode, nesting, key).
 * A download half loaded under one must not be finished under another.
 */
export function loadHashOf(job: JobSpec): string {
  const value = {
    table: job.table,
    write: job.write,
    nested: job.nested,
    key: job.key,
    people_table: job.people_table ?? null,
  };
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);
}
