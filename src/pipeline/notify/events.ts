import type { ErrorInfo, JobStatus, RunStatus, RunSummary } from '../outcome.js';
import type { NotifyEvent, NotifySpec, NotifyTarget, PipelineNotify } from '../spec/spec-notify.js';

/**
 * What a run alerts on, and where each alert goes. One run gives at most one alert of its
 * outcome (failed, refused, incomplete, interrupted; recovered or success when it succeeded)
 * and one per budget that passed its threshold in it.
 */

/** A budget after the run: its limit, and what the pipeline spent in its period before and after. */
export interface BudgetPassage {
  type: string;
  period: string;
  limit: number;
  before: number;
  after: number;
}

export interface Alert {
  event: NotifyEvent;
  /** The jobs the event is about (their own `notify:` takes it), none for the whole run. */
  jobs: string[];
  budget?: BudgetPassage;
}

/** How the command ended: a run's summary, or an error before any run (its login, its lock). */
export type RunEnd = { summary: RunSummary } | { error: ErrorInfo; exit: number };

/** The job statuses each outcome event is about. */
const JOBS_OF: Partial<Record<NotifyEvent, readonly JobStatus[]>> = {
  failed: ['failed', 'timed_out'],
  refused: ['refused'],
  incomplete: ['cancelled'],
  interrupted: ['interrupted'],
};

const EVENT_OF: Record<Exclude<RunStatus, 'succeeded'>, NotifyEvent> = {
  failed: 'failed',
  refused: 'refused',
  incomplete: 'incomplete',
  interrupted: 'interrupted',
};

/**
 * The alerts of a run's end. `previous`: the status of the pipeline's run before this one (a
 * success after anything else is `recovered`); `budgets`: its budgets as they stand after it.
 */
export function alertsOf(
  end: RunEnd,
  previous: string | undefined,
  budgets: readonly BudgetPassage[],
): Alert[] {
  if (!('summary' in end)) {
    const event: NotifyEvent =
      end.exit === 3 ? 'refused' : end.exit === 130 ? 'interrupted' : 'failed';
    return [{ event, jobs: [] }];
  }
  const { summary } = end;
  const alerts: Alert[] = [];
  if (summary.status === 'succeeded') {
    const recovered = previous !== undefined && previous !== 'succeeded' && previous !== 'running';
    alerts.push({ event: recovered ? 'recovered' : 'success', jobs: [] });
  } else {
    const event = EVENT_OF[summary.status];
    const statuses = summary.error ? [] : (JOBS_OF[event] ?? []);
    const jobs = summary.jobs.filter((j) => statuses.includes(j.status)).map((j) => jobOf(j.job));
    alerts.push({ event, jobs: [...new Set(jobs)] });
  }
  for (const budget of budgets) alerts.push({ event: 'budget', jobs: [], budget });
  return alerts;
}

/** A refresh step (`homes.refresh`) is its job's (`homes`) as far as alerts go. */
function jobOf(name: string): string {
  return name.endsWith('.refresh') ? name.slice(0, -'.refresh'.length) : name;
}

export interface Route {
  alert: Alert;
  target: NotifyTarget;
}

/**
 * Where each alert goes: to the `notify:` of the jobs it is about (a job without its own takes
 * the pipeline's), or the pipeline's when it is about the whole run; each block only for the
 * events its `on:` names, and budgets past its own threshold. A target named twice gets one.
 */
export function routesOf(notify: PipelineNotify, alerts: readonly Alert[]): Route[] {
  const routes: Route[] = [];
  for (const alert of alerts) {
    const blocks = new Set<NotifySpec>();
    if (alert.jobs.length === 0) {
      if (notify.pipeline) blocks.add(notify.pipeline);
    } else {
      for (const job of alert.jobs) {
        const block = notify.jobs[job] ?? notify.pipeline;
        if (block) blocks.add(block);
      }
    }
    const seen = new Set<string>();
    for (const block of blocks) {
      if (!block.on.includes(alert.event)) continue;
      if (alert.budget && !passes(alert.budget, block.budgetThreshold)) continue;
      for (const target of block.targets) {
        const key = targetKey(target);
        if (seen.has(key)) continue;
        seen.add(key);
        routes.push({ alert, target });
      }
    }
  }
  return routes;
}

/** Whether the run took the budget past `percent` of its limit (it was below before). */
export function passes(budget: BudgetPassage, percent: number): boolean {
  if (budget.limit <= 0) return false;
  const line = (budget.limit * percent) / 100;
  return budget.before < line && budget.after >= line;
}

function targetKey(target: NotifyTarget): string {
  return target.kind === 'email'
    ? `email ${target.smtp} ${target.to.join(',')}`
    : `${target.kind} ${target.url}`;
}
