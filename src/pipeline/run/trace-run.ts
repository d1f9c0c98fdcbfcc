import type { JobOutcome, RunSummary } from '../outcome.js';
import { creditAttributes, type Span } from '../trace.js';

/** The run's span, once it ended: its id, status and figures, its failure's code. */
export function traceRun(span: Span, summary: RunSummary): void {
  span.setAttributes({
    'sluice.run_id': summary.run_id,
    'sluice.status': summary.status,
    'sluice.replayed': summary.replayed,
    'sluice.jobs': summary.jobs.length,
    ...creditAttributes(summary.credits),
  });
  const failure = summary.error ?? summary.jobs.find((j) => j.error)?.error;
  if (summary.status !== 'succeeded' && failure) span.fail(failure.code);
}

/** A job's span, once it ended: what it bought and loaded, and its failure's code. */
export function traceJob(span: Span, outcome: JobOutcome): void {
  span.setAttributes({
    'sluice.status': outcome.status,
    'sluice.download_id': outcome.download_id ?? undefined,
    'sluice.records': outcome.loaded,
    'sluice.records.found': outcome.found ?? undefined,
    'sluice.records.downloaded': outcome.downloaded,
    'sluice.records.rejected': outcome.rejected,
    'sluice.files': outcome.files_loaded,
    'sluice.reattached': outcome.reattached,
    ...creditAttributes(outcome.credits),
  });
  if (outcome.error) span.fail(outcome.error.code);
}
