import type { Paged, RejectRow, RunFilter, RunRow } from '../load/destination.js';
import { creditChart, type Span, timeline } from './chart.js';
import {
  type CreditSeries,
  type Overview,
  PAGE_SIZE,
  type RunDetail,
  type TableInfo,
} from './data.js';
import { credits, type Html, html, link, num, pager, status, table, time } from './html.js';

/** The bodies of the dashboard's pages, from what data.ts read. */

type Params = Record<string, string | number | undefined>;

export function overviewBody(o: Overview, runHref: (id: string) => string | undefined): Html {
  const runs = o.pipelines.map((p) => {
    const href = p.last && runHref(p.last.run_id);
    return [
      p.pipeline,
      p.last ? (href ? html`<a href="${href}">${p.last.run_id}</a>` : p.last.run_id) : '-',
      p.last ? status(p.last.status) : 'never run',
      time(p.last?.started_at),
      time(p.last?.finished_at),
      credits(p.last?.credits_paid),
      p.last?.error_message ?? '',
    ];
  });
  const budgets = o.pipelines.flatMap((p) =>
    p.budgets.map((b) => [
      p.pipeline,
      b.type,
      `${num(b.limit)}/${b.period}`,
      html`${time(b.from)} to ${time(b.until)}`,
      num(b.spent),
      num(b.limit - b.spent),
      b.spent >= b.limit ? 'spent' : `${Math.round((100 * b.spent) / b.limit)}% used`,
    ]),
  );
  const unknown = o.pipelines.filter((p) => !p.known).map((p) => p.pipeline);
  const cursors = o.pipelines.flatMap((p) =>
    p.cursors.map((c) => [p.pipeline, c.job, c.field, c.value, time(c.updated_at)]),
  );
  return html`<section aria-labelledby="h-runs"><h2 id="h-runs">Last run of each pipeline</h2>
${table('Last runs', ['pipeline', 'run', 'status', 'started', 'finished', 'credits paid', 'error'], runs, { id: 'last-runs' })}</section>
<section aria-labelledby="h-budgets"><h2 id="h-budgets">Credits this period against budgets</h2>
${table('Budgets (calendar periods in UTC)', ['pipeline', 'credits', 'budget', 'period', 'spent', 'left', 'standing'], budgets, { numeric: [4, 5], id: 'budgets', empty: 'No budget: a pipeline file sets them (budget:).' })}
${unknown.length > 0 ? html`<p class="note">Budgets live in pipeline files; not named here: ${unknown.join(', ')}.</p>` : ''}</section>
<section aria-labelledby="h-fresh"><h2 id="h-fresh">Freshness of each table</h2>
${table(
  'Tables by last load',
  ['table', 'last load', 'rows loaded (all runs)'],
  o.freshness.map((f) => [f.table_name, time(f.last_loaded_at), num(f.rows_loaded)]),
  { numeric: [2], id: 'freshness', empty: 'Nothing loaded yet.' },
)}
${table('Cursors of incremental jobs (the next run downloads from here, less the lookback)', ['pipeline', 'job', 'field', 'cursor', 'moved at'], cursors, { id: 'cursors', empty: 'No incremental job has a cursor.' })}</section>
<section aria-labelledby="h-alerts"><h2 id="h-alerts">Alerts sent</h2>
${table(
  'Latest alerts',
  ['sent', 'pipeline', 'run', 'event', 'to', 'outcome'],
  o.alerts.map((a) => [
    time(a.sent_at),
    a.pipeline,
    a.run_id,
    a.event,
    a.target_kind,
    a.ok === 'true' ? 'sent' : `failed: ${a.error ?? ''}`,
  ]),
  { id: 'alerts', empty: 'No alert recorded.' },
)}</section>`;
}

export function runsBody(
  data: Paged<RunRow & { credits_paid: Record<string, number> }> & { pipelines: string[] },
  filter: RunFilter,
  page: number,
  params: Params,
): Html {
  const statuses = ['running', 'succeeded', 'partial', 'failed', 'interrupted', 'refused'];
  const option = (value: string, current: string | undefined) =>
    html`<option value="${value}"${value === (current ?? '') ? html` selected` : ''}>${value || 'any'}</option>`;
  return html`<form class="filter" method="get" action="/runs" role="search" aria-label="Filter runs">
${params.d !== undefined ? html`<input type="hidden" name="d" value="${params.d}">` : ''}
<label>Pipeline <select name="pipeline">${['', ...data.pipelines].map((p) => option(p, filter.pipeline))}</select></label>
<label>Status <select name="status">${['', ...statuses].map((s) => option(s, filter.status))}</select></label>
<label>Started from (UTC date) <input type="date" name="from" value="${filter.from?.slice(0, 10) ?? ''}"></label>
<label>until (UTC date, inclusive) <input type="date" name="until" value="${params.until ?? ''}"></label>
<button type="submit">Show</button></form>
${table(
  'Runs, newest first',
  ['run', 'pipeline', 'status', 'stage', 'started', 'finished', 'credits paid', 'error'],
  data.rows.map((r) => [
    html`<a href="${link('/run', { d: params.d, id: r.run_id })}">${r.run_id}</a>`,
    r.pipeline,
    status(r.status),
    r.stage ?? '-',
    time(r.started_at),
    time(r.finished_at),
    credits(r.credits_paid),
    r.error_message ?? '',
  ]),
  { id: 'runs', empty: 'No run matches.' },
)}
${pager('/runs', params, page, PAGE_SIZE, data.total)}`;
}

/** Each phase's short name (on its bar) and what it is (in the table). */
const SHORT: Record<string, string> = {
  waiting: 'queued',
  download: 'polling',
  queued: 'fetched',
  load: 'loading',
};

const PHASES: Record<string, string> = {
  waiting: 'queued (waiting for its turn)',
  download: 'polling (the service prepares it)',
  queued: 'fetched (waiting for the writer)',
  load: 'loading',
};

export function runBody(r: RunDetail, page: number, params: Params, now: number): Html {
  const run = r.run;
  const end = Date.parse(run.finished_at ?? '') || now;
  const spans = phaseSpans(r, end);
  const start = Math.min(Date.parse(run.started_at), ...spans.map((s) => s.from));
  return html`${runFacts(r, params)}
<h2>Jobs</h2>
${timeline(spans, start, end)}
${jobsTables(r, spans)}
<h2>Downloads</h2>
${downloadsTables(r)}
<h2>Rejects</h2>${rejectsTable(r.rejects)}${pager('/run', { d: params.d, id: run.run_id }, page, PAGE_SIZE, r.rejects.total)}`;
}

/** Each job's phases as spans of the timeline: one not ended yet lasts until the run's end. */
function phaseSpans(r: RunDetail, end: number): Span[] {
  return r.phases.map((p) => ({
    job: p.job,
    phase: p.phase,
    label: PHASES[p.phase] ?? p.phase,
    short: SHORT[p.phase] ?? p.phase,
    from: Date.parse(p.started_at),
    to: Date.parse(p.ended_at ?? '') || end,
  }));
}

/** The run's facts, then its error and what to do about it, when it failed. */
function runFacts(r: RunDetail, params: Params): Html {
  const run = r.run;
  return html`<dl><dt>Pipeline</dt><dd>${run.pipeline}</dd><dt>Status</dt><dd id="run-status">${status(run.status)}${run.stage ? ` at stage ${run.stage}` : ''}</dd>
<dt>Started</dt><dd>${time(run.started_at)}</dd><dt>Finished</dt><dd>${time(run.finished_at)}</dd>
<dt>Credits paid</dt><dd id="run-credits">${credits(run.credits_paid)}</dd>
${run.resumes ? html`<dt>Resumes</dt><dd><a href="${link('/run', { d: params.d, id: run.resumes })}">${run.resumes}</a></dd>` : ''}</dl>
${run.error_message ? html`<section aria-labelledby="h-error"><h2 id="h-error">Error and what to do</h2><p class="error">${run.error_message}</p>${r.advice ? html`<p id="advice">${r.advice}</p>` : ''}</section>` : ''}`;
}

/** The jobs' table and the table of each job's phases (the timeline's figures). */
function jobsTables(r: RunDetail, spans: Span[]): Html {
  return html`${table(
    'Jobs',
    ['job', 'status', 'stage', 'started', 'finished', 'error'],
    r.jobs.map((j) => [
      j.job,
      status(j.status),
      j.stage ?? '-',
      time(j.started_at),
      time(j.finished_at),
      j.error_message ?? '',
    ]),
    { id: 'jobs', empty: 'No job ended yet.' },
  )}
${table(
  'Phases of each job',
  ['job', 'phase', 'from', 'to', 'seconds'],
  spans.map((s) => [
    s.job,
    s.label,
    time(new Date(s.from).toISOString()),
    time(new Date(s.to).toISOString()),
    ((s.to - s.from) / 1000).toFixed(1),
  ]),
  { numeric: [4], id: 'phases', empty: 'No phase recorded (runs before state version 5).' },
)}`;
}

/** What the run bought (downloads, targeted updates, scrapes), then the files it loaded. */
function downloadsTables(r: RunDetail): Html {
  const fileCount = new Map<string, number>();
  for (const f of r.files) fileCount.set(f.download_id, (fileCount.get(f.download_id) ?? 0) + 1);
  return html`${table(
    'Downloads, targeted updates and scrapes',
    [
      'job',
      'kind',
      'download',
      'status',
      'data type',
      'found',
      'records',
      'files',
      'credits',
      'table',
      'requested',
    ],
    r.attempts.map((a) => [
      a.job,
      a.kind === 'targeted_update' ? 'targeted update' : (a.kind ?? 'download'),
      a.download_id ?? '-',
      status(a.status),
      a.data_type ?? '-',
      num(a.num_found),
      num(a.num_records),
      num(a.download_id ? (fileCount.get(a.download_id) ?? 0) : 0),
      credits(a.credits ? (JSON.parse(a.credits) as Record<string, number>) : {}),
      a.target_table,
      time(a.requested_at),
    ]),
    { numeric: [5, 6, 7], id: 'downloads', empty: 'Nothing bought.' },
  )}
${table(
  'Files loaded',
  ['download', 'file', 'table', 'rows loaded', 'rows rejected', 'bytes', 'loaded at'],
  r.files.map((f) => [
    f.download_id,
    f.file_name,
    f.table_name,
    num(f.rows_loaded),
    num(f.rows_rejected),
    num(f.bytes),
    time(f.loaded_at),
  ]),
  { numeric: [3, 4, 5], id: 'files', empty: 'No file loaded.' },
)}`;
}

export function rejectsTable(rejects: Paged<RejectRow>): Html {
  return table(
    'Rejected lines, newest first',
    ['file', 'line', 'text', 'reason', 'download', 'job', 'at'],
    rejects.rows.map((x) => [
      x.file_name,
      num(x.line),
      html`<pre>${x.raw}</pre>`,
      x.reason,
      x.download_id,
      x.job,
      time(x.created_at),
    ]),
    { numeric: [1], id: 'rejects', empty: 'No line rejected.' },
  );
}

export function rejectsBody(
  rejects: Paged<RejectRow>,
  search: { q?: string | undefined; pipeline?: string | undefined },
  pipelines: string[],
  page: number,
  params: Params,
): Html {
  return html`<form class="filter" method="get" action="/rejects" role="search" aria-label="Search rejects">
${params.d !== undefined ? html`<input type="hidden" name="d" value="${params.d}">` : ''}
<label>Text, reason or file contains <input type="search" name="q" value="${search.q ?? ''}"></label>
<label>Pipeline <select name="pipeline">${['', ...pipelines].map((p) => html`<option value="${p}"${p === (search.pipeline ?? '') ? html` selected` : ''}>${p || 'any'}</option>`)}</select></label>
<button type="submit">Search</button></form>
${rejectsTable(rejects)}${pager('/rejects', params, page, PAGE_SIZE, rejects.total, rejects.more)}`;
}

export function creditsBody(data: { since: string; series: CreditSeries[] }, now: number): Html {
  if (data.series.length === 0)
    return html`<p class="empty">Nothing bought since ${time(data.since)}.</p>`;
  return html`<p>Since ${time(data.since)}, per pipeline and credit type.</p>${data.series.map((s) => creditChart(s, data.since, now))}`;
}

export function tablesBody(tables: TableInfo[]): Html {
  if (tables.length === 0)
    return html`<p class="empty">No table recorded in _sluice_tables yet.</p>`;
  return html`${tables.map(
    (
      t,
    ) => html`<section class="table-info" aria-labelledby="t-${t.physical}"><h2 id="t-${t.physical}">${t.physical}</h2>
<p>${num(t.rows)} rows · pipeline ${t.pipeline}, job ${t.job} (${t.role}) · last load ${time(t.lastLoadedAt)}${
      t.contract
        ? html` · schema contract: new columns ${t.contract.new_columns}, type changes ${t.contract.type_changes}`
        : ''
    }</p>
${table(
  `Columns of ${t.physical}`,
  ['column', 'type', 'pinned'],
  t.columns.map((c) => [c.name, c.type, c.pinned ? 'pinned (columns:)' : '']),
  { empty: 'The table is not there yet.' },
)}
${table(
  `Child tables of ${t.physical}`,
  ['table', 'rows'],
  t.children.map((c) => [c.name, num(c.rows)]),
  { numeric: [1], empty: 'No child table.' },
)}</section>`,
  )}`;
}
