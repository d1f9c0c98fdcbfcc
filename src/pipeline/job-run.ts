import type { Logger } from '../log.js';
import type { RunContext } from './context.js';
import type { JobOutcome } from './outcome.js';
import type { JobSpec } from './spec/spec.js';

/**
 * One job in one run: the object every stage of it takes (extract: guard, start or re-attach,
 * poll; load: normalize, write, finish), the same way, instead of the same few values passed
 * one by one. A job whose records land in tables (a download or a scrape) carries them too, as
 * a JobLoad (load/job-load.ts: its tables, from its shape plan).
 */
export interface JobRun {
  /** The run it is part of: its client, destination, clock, guard, progress. */
  readonly ctx: RunContext;
  /** The job as the pipeline file says (for an owner lookup's part: that part). */
  readonly job: JobSpec;
  /** What became of it so far, filled in stage by stage. */
  readonly outcome: JobOutcome;
  /** Its logger, the job named in every line. */
  readonly log: Logger;
}
