import { type BudgetStanding, budgetStandings } from '../guard/budget.js';
import { findResumable, skippable } from '../run/resume.js';
import { destinationOf, openPipelineDestination } from '../run/run.js';
import { selectJobs } from '../spec/select.js';
import type { PipelineSpec } from '../spec/spec.js';

/**
 * What `sluice status` reports: recent runs, jobs, downloads and files of a pipeline, read from
 * its state tables. Read-only: it opens the destination for reading, creates nothing, and needs
 * no service credentials.
 */
export async function statusReport(
  spec: PipelineSpec,
  env: NodeJS.ProcessEnv,
  now: number,
  options: { limit: number; jobs?: string[] | undefined },
) {
  // The jobs asked for (`--job`): an owner lookup's parts (`owners#2`) go with their job.
  const jobs = new Set(selectJobs(spec, options.jobs).map((j) => j.name));
  const shown = (job: string) => jobs.has(job.replace(/#\d+$/, ''));
  // Read-only: a monitoring role can use it, and a mistyped path creates nothing.
  const destination = await openPipelineDestination(spec, env, { readOnly: true }).catch(
    (error: unknown) => {
      if ((error as { code?: unknown }).code === 'SLUICE_NO_STATE') return undefined;
      throw error;
    },
  );
  try {
    if (destination === undefined || !(await destination.hasState())) {
      return {
        state: 'none' as const,
        // Where it looked: SLUICE_DESTINATION's, when set, not the file's.
        destination: destination?.description ?? destinationOf(spec, env).url,
        budgets: await budgetStandings(spec, undefined, now),
      };
    }
    const all = await destination.state.recent(spec.name, options.limit);
    const downloads = all.downloads.filter((d) => shown(d.job));
    const ids = new Set(downloads.map((d) => d.download_id));
    const recent = {
      ...all,
      jobs: all.jobs.filter((j) => shown(j.job)),
      downloads,
      files: all.files.filter((f) => ids.has(f.download_id)),
      rejects: all.rejects.filter((r) => ids.has(r.download_id)),
      cursors: all.cursors.filter((c) => shown(c.job)),
    };
    const resumable = await findResumable(destination.state, spec, now);
    const budgets: BudgetStanding[] = await budgetStandings(spec, destination.state, now);
    const resume = resumable && {
      run_id: resumable.run.run_id,
      status: resumable.run.status,
      ended_at: resumable.endedAt,
      until: new Date(Date.parse(resumable.endedAt) + spec.resumeWindow).toISOString(),
      skip: spec.jobs.filter((j) => skippable(resumable, j)).map((j) => j.name),
    };
    const paid = creditsPaid(
      await destination.state.attemptsOfRuns(recent.runs.map((r) => r.run_id)),
    );
    return {
      state: 'found' as const,
      destination: destination.description,
      resume,
      recent,
      paid,
      budgets,
    };
  } finally {
    await destination?.close();
  }
}

/**
 * Credits each run paid for: a download is paid for by the run that started it, whichever run
 * loads it, so an interrupted run's purchase is counted once, against it.
 */
export function creditsPaid(attempts: { run_id: string; credits: string | null }[]) {
  const paid = new Map<string, Record<string, number>>();
  for (const attempt of attempts) {
    if (!attempt.credits) continue;
    const into = paid.get(attempt.run_id) ?? {};
    for (const [type, n] of Object.entries(JSON.parse(attempt.credits) as Record<string, number>)) {
      into[type] = (into[type] ?? 0) + n;
    }
    paid.set(attempt.run_id, into);
  }
  return paid;
}
