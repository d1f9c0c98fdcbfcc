import { periodBounds } from '../pipeline/guard/budget.js';
import type { BudgetPeriod } from '../pipeline/spec/spec.js';
import type { CreditSeries } from './data.js';
import { esc, type Html, html, num, raw, table } from './html.js';

/**
 * The dashboard's two figures, drawn as inline SVG (no chart library: a few hundred bytes each,
 * and they work offline, in a static report too). Each comes with the table of its values, for
 * a screen reader, and marks that say what a colour would.
 */

const W = 640;
const H = 200;
const M = { left: 56, right: 110, top: 12, bottom: 28 };
const DAY = 86_400_000;

/**
 * Credits of one pipeline and credit type, day by day: what was spent in the budget's period up
 * to each day (it starts again at each period), against the budget's line.
 */
export function creditChart(series: CreditSeries, since: string, now: number): Html {
  const period: BudgetPeriod = (series.budgets[0]?.period as BudgetPeriod | undefined) ?? 'year';
  const perDay = new Map(series.points);
  const days: { day: string; spent: number; total: number }[] = [];
  let start = -1;
  let spent = 0;
  for (let t = Date.parse(since); t <= now; t += DAY) {
    const day = new Date(t).toISOString().slice(0, 10);
    const from = series.budgets.length > 0 ? periodBounds(period, t).from : 0;
    if (from !== start) {
      start = from;
      spent = 0;
    }
    spent += perDay.get(day) ?? 0;
    days.push({ day, spent, total: perDay.get(day) ?? 0 });
  }
  const top = Math.max(1, ...days.map((d) => d.spent), ...series.budgets.map((b) => b.limit)) * 1.1;
  const x = (i: number) => M.left + (i * (W - M.left - M.right)) / Math.max(1, days.length - 1);
  const y = (v: number) => H - M.bottom - (v * (H - M.top - M.bottom)) / top;
  const line = days.map((d, i) => `${x(i).toFixed(1)},${y(d.spent).toFixed(1)}`).join(' ');
  const name = `${series.pipeline}: ${series.type} credits`;
  const budgets = series.budgets.map(
    (
      b,
    ) => html`<line class="budget" x1="${M.left}" x2="${W - M.right}" y1="${y(b.limit)}" y2="${y(b.limit)}" stroke="#991b1b" stroke-dasharray="6 4"/>
<text x="${W - M.right + 4}" y="${y(b.limit) + 4}">budget ${num(b.limit)}/${b.period}</text>`,
  );
  const points = days.map(
    (d, i) =>
      html`<circle class="point" cx="${x(i).toFixed(1)}" cy="${y(d.spent).toFixed(1)}" r="3" data-day="${d.day}" data-value="${d.spent}"><title>${d.day}: ${num(d.spent)} this ${period === 'year' && series.budgets.length === 0 ? 'window' : period}</title></circle>`,
  );
  return html`<figure class="chart" data-pipeline="${series.pipeline}" data-type="${series.type}">
<figcaption>${name}, spent this ${series.budgets.length > 0 ? period : 'window'} day by day${series.budgets.length > 0 ? ', against the budget (dashed line)' : ''}</figcaption>
<svg role="img" aria-label="${esc(name)}" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">
<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}" stroke="#555"/>
<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#555"/>
<text x="${M.left - 6}" y="${y(0) + 4}" text-anchor="end">0</text>
<text x="${M.left - 6}" y="${y(top / 1.1) + 4}" text-anchor="end">${num(Math.round(top / 1.1))}</text>
<text x="${M.left}" y="${H - 8}">${days[0]?.day ?? ''}</text>
<text x="${W - M.right}" y="${H - 8}" text-anchor="end">${days.at(-1)?.day ?? ''}</text>
${budgets}<polyline fill="none" stroke="#1e40af" stroke-width="2" points="${line}"/>${points}
</svg>
<details><summary>Values</summary>${table(
    'Credits by day',
    ['day', 'bought', `spent this ${period}`],
    days.filter((d) => d.total > 0).map((d) => [d.day, num(d.total), num(d.spent)]),
    { numeric: [1, 2], empty: 'Nothing bought in this window.' },
  )}</details></figure>`;
}

export interface Span {
  job: string;
  phase: string;
  label: string;
  /** A word for its bar. */
  short: string;
  from: number;
  to: number;
}

/** A run's jobs on a timeline: one row per job, one bar per phase, each bar named. */
export function timeline(spans: readonly Span[], start: number, end: number): Html {
  if (spans.length === 0) return raw('');
  const jobs = [...new Set(spans.map((s) => s.job))];
  const rowH = 26;
  const left = 150;
  const width = W + 120;
  const height = jobs.length * rowH + 30;
  const span = Math.max(1, end - start);
  const x = (t: number) => left + ((t - start) * (width - left - 10)) / span;
  const FILL: Record<string, string> = {
    waiting: '#d1d5db',
    download: '#93c5fd',
    queued: '#fde68a',
    load: '#86efac',
  };
  const bars = spans.map((s) => {
    const row = jobs.indexOf(s.job);
    const x1 = x(s.from);
    const w = Math.max(2, x(s.to) - x1);
    const text = `${s.job}: ${s.label}, ${((s.to - s.from) / 1000).toFixed(1)} s`;
    return html`<g class="bar" data-job="${s.job}" data-phase="${s.phase}"><rect x="${x1.toFixed(1)}" y="${row * rowH + 4}" width="${w.toFixed(1)}" height="${rowH - 8}" fill="${FILL[s.phase] ?? '#e5e7eb'}" stroke="#333"><title>${text}</title></rect>${
      w > 8 * s.short.length
        ? html`<text x="${(x1 + 4).toFixed(1)}" y="${row * rowH + rowH / 2 + 4}">${s.short}</text>`
        : ''
    }</g>`;
  });
  return html`<figure><figcaption>Jobs on a timeline (${((end - start) / 1000).toFixed(1)} s; each bar names its phase on hover, and the table below lists them)</figcaption>
<svg role="img" aria-label="Jobs of the run on a timeline" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">
${jobs.map((j, i) => html`<text x="4" y="${i * rowH + rowH / 2 + 4}">${j}</text>`)}
${bars}
<text x="${left}" y="${height - 6}">0 s</text><text x="${width - 10}" y="${height - 6}" text-anchor="end">${((end - start) / 1000).toFixed(1)} s</text>
</svg></figure>`;
}
