import { CREDIT_TYPE_OF, isDataType } from '../../catalog.js';
import type { BudgetStanding, PipelineSpec, RunSummary } from '../../pipeline/index.js';

/**
 * A run's metrics, from its summary (the `--json` document), so that each figure is the one the
 * summary reports: sent once at the run's end as OTLP (otlp.ts) and written as node_exporter's
 * textfile (textfile.ts). Counts are sums of this run (delta); durations, budgets and the
 * run's status are gauges.
 */

export type Labels = Record<string, string>;

export interface Metric {
  /** OpenTelemetry's name (`sluice.records.loaded`). */
  name: string;
  /** Prometheus' name (`sluice_records_loaded`). */
  prom: string;
  help: string;
  unit: string;
  kind: 'sum' | 'gauge';
  points: { labels: Labels; value: number }[];
}

/** A run of the command, with what its pipeline's budgets have left after it (if any). */
export interface MeasuredRun {
  spec: PipelineSpec;
  summary: RunSummary;
  budgets: readonly BudgetStanding[];
}

const DEFINITIONS = {
  credits: ['sluice.credits.spent', 'sluice_credits_spent', 'Credits this run spent', '{credit}'],
  found: ['sluice.records.found', 'sluice_records_found', 'Records the query matched', '{record}'],
  downloaded: [
    'sluice.records.downloaded',
    'sluice_records_downloaded',
    'Records the download holds',
    '{record}',
  ],
  loaded: ['sluice.records.loaded', 'sluice_records_loaded', 'Rows loaded', '{record}'],
  rejected: ['sluice.records.rejected', 'sluice_records_rejected', 'Rows rejected', '{record}'],
  alerts: ['sluice.alerts.sent', 'sluice_alerts_sent', 'Alerts the run sent', '{alert}'],
  jobSeconds: ['sluice.job.duration', 'sluice_job_duration_seconds', 'Seconds a job took', 's'],
  runSeconds: ['sluice.run.duration', 'sluice_run_duration_seconds', 'Seconds the run took', 's'],
  succeeded: ['sluice.run.succeeded', 'sluice_run_succeeded', '1 if the run succeeded', '1'],
  ended: [
    'sluice.run.end_time',
    'sluice_run_end_time_seconds',
    'When the run ended (Unix seconds)',
    's',
  ],
  budget: [
    'sluice.budget.left',
    'sluice_budget_left_credits',
    'Credits a budget has left in its period',
    '{credit}',
  ],
} as const;

type Key = keyof typeof DEFINITIONS;
const SUMS = new Set<Key>(['credits', 'found', 'downloaded', 'loaded', 'rejected', 'alerts']);

export function runMetrics(runs: readonly MeasuredRun[], endedAt: number): Metric[] {
  const metrics = new Map<Key, Metric>();
  const add = (key: Key, labels: Labels, value: number) => {
    let metric = metrics.get(key);
    if (!metric) {
      const [name, prom, help, unit] = DEFINITIONS[key];
      metric = { name, prom, help, unit, kind: SUMS.has(key) ? 'sum' : 'gauge', points: [] };
      metrics.set(key, metric);
    }
    metric.points.push({ labels, value });
  };
  for (const { spec, summary, budgets } of runs) {
    const pipeline = { pipeline: summary.pipeline };
    add('runSeconds', pipeline, summary.seconds);
    add('succeeded', pipeline, summary.status === 'succeeded' ? 1 : 0);
    add('ended', pipeline, Math.round(endedAt / 1000));
    for (const job of summary.jobs) {
      const type = spec.jobs.find((j) => j.name === job.job)?.type ?? '';
      const labels = { ...pipeline, job: job.job, data_type: type };
      const credits = Object.entries(job.credits);
      // A job that spent nothing says 0 of its own type, so that its series exists.
      if (credits.length === 0 && isDataType(type)) credits.push([CREDIT_TYPE_OF[type], 0]);
      for (const [credit, n] of credits) add('credits', { ...labels, credit_type: credit }, n);
      if (job.found !== null) add('found', labels, job.found);
      add('downloaded', labels, job.downloaded);
      add('loaded', labels, job.loaded);
      add('rejected', labels, job.rejected);
      add('jobSeconds', labels, job.seconds);
    }
    for (const b of budgets) {
      add('budget', { ...pipeline, credit_type: b.type, period: b.period }, b.limit - b.spent);
    }
    const alerts = alertsSent(summary);
    if (alerts !== undefined) add('alerts', pipeline, alerts);
  }
  return [...metrics.values()];
}

/** The alerts a run sent, where its summary counts them (`alerts: N` or `alerts: {sent: N}`). */
function alertsSent(summary: RunSummary): number | undefined {
  const alerts = (summary as { alerts?: unknown }).alerts;
  if (typeof alerts === 'number') return alerts;
  const sent = (alerts as { sent?: unknown } | undefined)?.sent;
  return typeof sent === 'number' ? sent : undefined;
}
