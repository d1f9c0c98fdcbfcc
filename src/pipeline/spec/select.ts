import { UsageError } from '../../errors.js';
import type { JobSpec, PipelineSpec } from './spec.js';

/**
 * `--job` patterns: job names, or simple globs (`*` any run of characters, `?` one), as `run`,
 * `plan` and `status` take them. Jobs keep the pipeline file's order, whatever the patterns'.
 */
export function jobMatcher(patterns: readonly string[]): (name: string) => boolean {
  const exps = patterns.map(
    (p) =>
      new RegExp(
        `^${p
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replaceAll('*', '.*')
          .replaceAll('?', '.')}$`,
      ),
  );
  return (name) => exps.some((e) => e.test(name));
}

/** The patterns that name no job of any of these pipelines. */
export function unmatchedPatterns(
  specs: readonly PipelineSpec[],
  patterns: readonly string[],
): string[] {
  return patterns.filter(
    (p) => !specs.some((spec) => spec.jobs.some((job) => jobMatcher([p])(job.name))),
  );
}

/**
 * The jobs of `spec` the patterns name (all when there are none). A pattern that names no job
 * is a mistake, unless `lenient` (several pipelines: it need name a job of one of them). A job
 * brings its refresh step (`refresh:`) along: its records are refreshed before it downloads them.
 */
export function selectJobs(
  spec: PipelineSpec,
  patterns: readonly string[] | undefined,
  lenient = false,
): JobSpec[] {
  if (!patterns || patterns.length === 0) return spec.jobs;
  const missing = lenient ? [] : unmatchedPatterns([spec], patterns);
  if (missing.length > 0) {
    throw new UsageError(
      `no job ${missing.map((m) => `'${m}'`).join(', ')} in ${spec.file}; jobs: ${spec.jobs.map((j) => j.name).join(', ')}`,
      'SLUICE_UNKNOWN_JOB',
    );
  }
  const wanted = jobMatcher(patterns);
  return spec.jobs.filter(
    (job) => wanted(job.name) || (job.refreshes !== undefined && wanted(job.refreshes)),
  );
}
