import type { DownloadInfo } from '../../client/types.js';
import type { Attempt, CursorRow, JobFinish } from '../../load/destination.js';
import { isoAt } from '../clock.js';
import type { IncrementalRange } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import type { JobLoad } from './job-load.js';

/**
 * Incremental jobs: a job with `incremental: { cursor, start, lookback }` downloads only the
 * records whose cursor field (a date, e.g. dateUpdated) is at or after the cursor its last
 * loaded download reached, less the lookback, and merges them. The cursor is the largest value
 * of the field among the rows a download loaded; it is saved in the transaction that finishes
 * the job, and only when the whole download is loaded, so that a run that stops anywhere leaves
 * the old cursor, and the next run downloads again whatever might be missing (merge keeps one
 * row per key).
 */

/**
 * The range of a new download of the job, from its saved cursor. With `serviceNow` (the
 * service's time as the guard is about to count, ServiceClient.serviceTime), a range with a
 * lower bound gets an upper one too: the last whole second before it. Records changed after that
 * are the next run's, so the count and the download see the same records: the download asks for
 * the number the guard counted (start-download.ts), and a record that changed in between, not
 * bought, is never passed by the cursor (the largest value loaded, at most the upper bound).
 */
export function rangeOf(
  job: Pick<JobSpec, 'incremental'>,
  saved: CursorRow | undefined,
  fullRefresh: boolean,
  serviceNow?: number,
): IncrementalRange | undefined {
  const spec = job.incremental;
  if (spec === undefined) return undefined;
  const last = fullRefresh ? null : (saved?.value ?? null);
  let from = last === null ? null : isoSeconds(Date.parse(last) - spec.lookback);
  if (spec.start !== undefined && (from === null || Date.parse(from) < Date.parse(spec.start))) {
    from = spec.start;
  }
  const range: IncrementalRange = { cursor: spec.cursor, from, last, full_refresh: fullRefresh };
  if (from !== null && serviceNow !== undefined) {
    range.to = isoSeconds(Math.floor(serviceNow / 1000) * 1000 - 1000);
  }
  return range;
}

/** The range of a download an earlier run started: the one it was started with. */
export function reattachedRange(
  job: Pick<JobSpec, 'incremental'>,
  attempt: Attempt,
  saved: CursorRow | undefined,
): IncrementalRange | undefined {
  if (job.incremental === undefined) return undefined;
  return {
    cursor: job.incremental.cursor,
    from: attempt.cursor_from,
    last: saved?.value ?? null,
    full_refresh: false,
  };
}

/** The job's query narrowed to the range: `(<query>) AND <cursor>:[<from> TO <to, or *>]`. */
export function rangeQuery(query: string, range: IncrementalRange | undefined): string {
  if (range === undefined || range.from === null) return query;
  const bound = `${range.cursor}:[${range.from} TO ${range.to ?? '*'}]`;
  const q = query.trim();
  return q === '' || q === '*' || q === '*:*' ? bound : `(${q}) AND ${bound}`;
}

/** Words for a log line: what the download covers. */
export function describeRange(range: IncrementalRange): string {
  if (range.full_refresh) {
    return `--full-refresh: ${range.from === null ? 'every record' : `records with ${range.cursor} since ${range.from} (start)`}; the cursor is reset once it is loaded`;
  }
  if (range.last === null) {
    return `first incremental run: ${range.from === null ? 'every record' : `records with ${range.cursor} since ${range.from} (start)`}`;
  }
  const until = range.to === undefined ? '' : ` until ${range.to}`;
  return `incremental: records with ${range.cursor} since ${range.from}${until} (cursor ${range.last})`;
}

/**
 * The cursor change that goes into the job's finishing transaction. The cursor moves only when
 * the download completed and delivered every record its range matched; otherwise the next run
 * reads the same range again rather than skip what this one did not load.
 */
export async function cursorChange(
  load: JobLoad,
  attempt: Attempt | undefined,
  info: DownloadInfo | undefined,
): Promise<Pick<JobFinish, 'cursor' | 'clearCursor'>> {
  const { ctx, job, outcome } = load;
  const range = outcome.incremental;
  if (range === undefined) return {};
  const pipeline = ctx.spec.name;
  const keep = (why: string) => {
    range.next = range.last;
    range.kept = why;
    return {};
  };
  if (attempt === undefined || info === undefined || attempt.download_id === null) {
    if (!range.full_refresh) return keep('nothing matched the range');
    range.next = null;
    return { clearCursor: { pipeline, job: job.name } };
  }
  if (info.state !== 'completed') return keep(`download ${attempt.download_id} did not complete`);
  const matched = attempt.num_found === null ? undefined : Number(attempt.num_found);
  if (matched !== undefined && info.numRecords < matched) {
    const cap =
      job.records !== undefined && info.numRecords >= job.records
        ? "the job's records limit: set records: all (or raise it) to let it move"
        : 'what the credit guard approved, or what the service delivered: the next run reads the range again';
    const why = `the range matched ${matched} records and download ${attempt.download_id} holds ${info.numRecords} (${cap}); the cursor stays so that the rest is not skipped`;
    load.log.warn(why);
    return keep(why);
  }
  const largest = await largestLoaded(load, attempt.download_id, range.cursor);
  if (largest === undefined) return keep('no loaded row has a value in the cursor field');
  const next =
    range.full_refresh || range.last === null || largest > Date.parse(range.last)
      ? isoSeconds(largest)
      : range.last;
  range.next = next;
  if (next === range.last && !range.full_refresh) return {};
  return {
    cursor: {
      pipeline,
      job: job.name,
      field: range.cursor,
      value: next,
      updated_at: isoAt(ctx.clock),
      run_id: ctx.runId,
      download_id: attempt.download_id,
    },
  };
}

/** The largest cursor value (ms) among the rows a download loaded into the job's table. */
async function largestLoaded(
  load: JobLoad,
  downloadId: string,
  cursor: string,
): Promise<number | undefined> {
  const { ctx, job } = load;
  const pairs = await ctx.destination.readPairs(job.table, [job.key[0]!, cursor], { downloadId });
  let largest: number | undefined;
  for (const [, value] of pairs) {
    const ms =
      value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : NaN;
    if (!Number.isNaN(ms) && (largest === undefined || ms > largest)) largest = ms;
  }
  return largest;
}

/** ISO 8601 in UTC, without milliseconds when there are none (as the service writes dates). */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}
