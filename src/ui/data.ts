import { codeInfo, EXIT } from '../error-codes.js';
import type {
  AlertRow,
  Attempt,
  Column,
  CursorRow,
  Destination,
  FileRow,
  JobRow,
  Paged,
  PhaseRow,
  RejectFilter,
  RejectRow,
  RunFilter,
  RunRow,
} from '../load/destination.js';
import { type BudgetStanding, budgetStandings, periodBounds } from '../pipeline/guard/budget.js';
import { creditsPaid } from '../pipeline/report/status-report.js';
import type { PipelineSpec } from '../pipeline/spec/spec.js';
import type { Source } from './sources.js';

/** What each page shows, read from one destination's state tables (never written). */

export interface PipelineOverview {
  pipeline: string;
  last: (RunRow & { credits_paid: Record<string, number> }) | undefined;
  budgets: BudgetStanding[];
  /** Whether its pipeline file was named (budgets live there). */
  known: boolean;
  cursors: CursorRow[];
}

export interface Overview {
  destination: string;
  pipelines: PipelineOverview[];
  freshness: { table_name: string; last_loaded_at: string | null; rows_loaded: number }[];
  alerts: AlertRow[];
}

export async function overview(source: Source, d: Destination, now: number): Promise<Overview> {
  const reads = d.reads();
  if (!(await d.hasState())) {
    return { destination: d.description, pipelines: [], freshness: [], alerts: [] };
  }
  const names = new Set([...(await reads.pipelines()), ...source.specs.keys()]);
  const pipelines: PipelineOverview[] = [];
  for (const pipeline of [...names].sort()) {
    const last = await reads.latestRun(pipeline);
    const spec = source.specs.get(pipeline);
    const paid = last ? creditsPaid(await d.state.attemptsOfRuns([last.run_id])) : new Map();
    pipelines.push({
      pipeline,
      last: last && { ...last, credits_paid: paid.get(last.run_id) ?? {} },
      budgets: spec ? await budgetStandings(spec, d.state, now) : [],
      known: spec !== undefined,
      cursors: await d.state.cursors(pipeline),
    });
  }
  return {
    destination: d.description,
    pipelines,
    freshness: await reads.freshness(),
    alerts: await reads.alerts(20),
  };
}

export const PAGE_SIZE = 50;

export async function runsPage(
  d: Destination,
  filter: RunFilter,
  page: number,
): Promise<Paged<RunRow & { credits_paid: Record<string, number> }> & { pipelines: string[] }> {
  const reads = d.reads();
  const { rows, total } = await reads.runs(filter, PAGE_SIZE, page * PAGE_SIZE);
  const paid = creditsPaid(await d.state.attemptsOfRuns(rows.map((r) => r.run_id)));
  return {
    rows: rows.map((r) => ({ ...r, credits_paid: paid.get(r.run_id) ?? {} })),
    total,
    pipelines: await reads.pipelines(),
  };
}

export interface RunDetail {
  run: RunRow & { credits_paid: Record<string, number> };
  jobs: JobRow[];
  phases: PhaseRow[];
  attempts: Omit<Attempt, 'payload'>[];
  files: FileRow[];
  rejects: Paged<RejectRow>;
  /** What to do about its error, from the error code's meaning and exit code. */
  advice: string | undefined;
}

export async function runDetail(
  d: Destination,
  runId: string,
  page: number,
): Promise<RunDetail | undefined> {
  const reads = d.reads();
  const run = await reads.run(runId);
  if (run === undefined) return undefined;
  const attempts = await reads.attempts(runId);
  const paid = creditsPaid(attempts);
  const ids = attempts.flatMap((a) => (a.download_id ? [a.download_id] : []));
  return {
    run: { ...run, credits_paid: paid.get(runId) ?? {} },
    jobs: await reads.jobs(runId),
    phases: await reads.phases(runId),
    // A scrape's saved answer is records, not status.
    attempts: attempts.map(({ payload: _payload, ...a }) => a),
    files: await reads.files(ids),
    rejects: await reads.rejects({ runId }, PAGE_SIZE, page * PAGE_SIZE),
    advice: adviceFor(run.error_code),
  };
}

export function adviceFor(code: string | null): string | undefined {
  if (!code) return undefined;
  const info = codeInfo(code);
  const what: Record<number, string> = {
    [EXIT.failed]: 'Worth a retry: run the pipeline again; it resumes where this run stopped.',
    [EXIT.invalidInput]:
      'A mistake to fix in the pipeline file, the command or the credentials: running again unchanged fails the same way.',
    [EXIT.creditGuard]:
      'Refused before anything was spent: raise the budget or the credit guard, or ask for fewer records.',
    [EXIT.incomplete]: 'Done with less than asked: a download was cancelled on the service.',
    [EXIT.interrupted]: 'Interrupted: run again to pick up where it stopped.',
  };
  return `${code}: ${info.meaning}. ${what[info.exit] ?? ''}`.trim();
}

export async function rejectsPage(
  d: Destination,
  filter: RejectFilter,
  page: number,
): Promise<Paged<RejectRow>> {
  return d.reads().rejects(filter, PAGE_SIZE, page * PAGE_SIZE);
}

/** Credits bought per day, per pipeline and credit type, and the budget lines of each. */
export interface CreditSeries {
  pipeline: string;
  type: string;
  /** Day (YYYY-MM-DD, UTC) and credits bought that day. */
  points: [string, number][];
  /** Budgets of the pipeline on this credit type, per their period. */
  budgets: { limit: number; period: string }[];
}

export async function creditSeries(
  source: Source,
  d: Destination,
  now: number,
  days: number,
): Promise<{ since: string; series: CreditSeries[] }> {
  const since = new Date(periodBounds('day', now - days * 86_400_000).from).toISOString();
  const byKey = new Map<string, Map<string, number>>();
  for (const row of await d.reads().credits(since)) {
    const day = row.requested_at.slice(0, 10);
    for (const [type, n] of Object.entries(JSON.parse(row.credits) as Record<string, number>)) {
      const key = `${row.pipeline}\u0000${type}`;
      const days = byKey.get(key) ?? new Map<string, number>();
      days.set(day, (days.get(day) ?? 0) + n);
      byKey.set(key, days);
    }
  }
  const budgetsOf = (spec: PipelineSpec | undefined, type: string) =>
    (spec?.budgets ?? [])
      .filter((b) => b.type === type)
      .map((b) => ({ limit: b.limit, period: b.period }));
  const series: CreditSeries[] = [...byKey].map(([key, perDay]) => {
    const [pipeline, type] = key.split('\u0000') as [string, string];
    return {
      pipeline,
      type,
      points: [...perDay].sort(([a], [b]) => a.localeCompare(b)),
      budgets: budgetsOf(source.specs.get(pipeline), type),
    };
  });
  // A budget with nothing bought yet still has its line.
  for (const spec of source.specs.values()) {
    for (const b of spec.budgets) {
      if (!series.some((s) => s.pipeline === spec.name && s.type === b.type)) {
        series.push({
          pipeline: spec.name,
          type: b.type,
          points: [],
          budgets: budgetsOf(spec, b.type),
        });
      }
    }
  }
  series.sort((a, b) => `${a.pipeline} ${a.type}`.localeCompare(`${b.pipeline} ${b.type}`));
  return { since, series };
}

export interface TableInfo {
  table: string;
  physical: string;
  pipeline: string;
  job: string;
  role: string;
  rows: number;
  columns: (Column & { pinned: boolean })[];
  children: { name: string; rows: number }[];
  contract: Record<string, string> | undefined;
  lastLoadedAt: string | null;
}

export async function tablesPage(source: Source, d: Destination): Promise<TableInfo[]> {
  const reads = d.reads();
  const owners = await d.state.tableOwners();
  const names = await reads.tableNames();
  const fresh = new Map((await reads.freshness()).map((f) => [f.table_name, f.last_loaded_at]));
  const tables: TableInfo[] = [];
  for (const owner of owners) {
    const physical = d.physicalName(owner.table_name);
    const job = source.specs.get(owner.pipeline)?.jobs.find((j) => j.name === owner.job);
    const pinned = new Set(Object.keys(job?.columns ?? {}).map(squash));
    const columns = names.includes(physical)
      ? ((await d.describeTable(owner.table_name)) ?? [])
      : [];
    const children = names.filter(
      (n) => n.startsWith(`${physical}__`) && !n.slice(physical.length).startsWith('__sluice_'),
    );
    tables.push({
      table: owner.table_name,
      physical,
      pipeline: owner.pipeline,
      job: owner.job,
      role: owner.role,
      rows: names.includes(physical) ? await reads.rowCount(physical) : 0,
      columns: columns.map((c) => ({ ...c, pinned: pinned.has(squash(c.name)) })),
      children: await Promise.all(
        children.map(async (name) => ({ name, rows: await reads.rowCount(name) })),
      ),
      contract: job
        ? { new_columns: job.schema.newColumns, type_changes: job.schema.typeChanges }
        : undefined,
      lastLoadedAt: fresh.get(owner.table_name) ?? fresh.get(physical) ?? null,
    });
  }
  return tables;
}

/** A field's name as a column may spell it (`firstName`, `first_name`). */
function squash(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}
