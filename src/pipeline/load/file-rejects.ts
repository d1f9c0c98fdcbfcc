import { SluiceError } from '../../errors.js';
import { jsonText } from '../../records/numbers.js';
import type { RejectedLine, Row } from '../../records/types.js';
import { isoAt } from '../clock.js';
import type { RunContext } from '../context.js';
import type { FilesInFlight } from './files-in-flight.js';
import type { JobLoad } from './job-load.js';

/** Rejected lines of a file: kept in `_sluice_rejects`, and counted against `max_rejects`. */

/** max_rejects was crossed in a file: its transaction rolls back, its rejects are kept. */
export class TooManyRejects extends Error {
  constructor(
    readonly error: SluiceError,
    readonly rejects: ReturnType<typeof rejectRows>,
  ) {
    super(error.message);
  }
}

/**
 * Throws TooManyRejects when the job's rejects cross `max_rejects`: those of the files
 * committed, of this one (`kept`) and of those written beside it.
 */
export function checkMaxRejects(
  load: JobLoad,
  inFlight: FilesInFlight,
  downloadId: string,
  fileName: string,
  kept: readonly RejectedLine[],
): void {
  const { ctx, job, outcome } = load;
  const rejected = outcome.rejected + inFlight.rejects;
  if (job.max_rejects !== undefined && rejected > job.max_rejects) {
    throw new TooManyRejects(
      new SluiceError(
        `job '${job.name}': more rows rejected (${rejected} so far) than max_rejects (${job.max_rejects}); ${fileName} was not loaded and the download is kept: raise max_rejects (or fix the data) and run again to load the rest without buying it again; the reasons are in _sluice_rejects`,
        { code: 'SLUICE_TOO_MANY_REJECTS' },
      ),
      rejectRows(job.name, downloadId, fileName, kept, ctx),
    );
  }
}

export function rejectOf(line: number, row: Row, reason: string): RejectedLine {
  return { line, raw: jsonText(row).slice(0, 10_000), reason };
}

export function rejectRows(
  job: string,
  downloadId: string,
  fileName: string,
  rejects: readonly RejectedLine[],
  ctx: RunContext,
) {
  const createdAt = isoAt(ctx.clock);
  return rejects.map((r) => ({
    download_id: downloadId,
    job,
    file_name: fileName,
    line: r.line,
    raw: r.raw,
    reason: r.reason,
    created_at: createdAt,
  }));
}
