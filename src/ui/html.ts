/**
 * Plain HTML for the dashboard: escaped text, tables, times and numbers. Every page reads
 * without colour (a status is a word), without script (times in UTC, then the viewer's time zone
 * once the page's script runs) and by keyboard (links, forms, a skip link).
 */

/** Text made safe for HTML content and attribute values. */
export function esc(value: unknown): string {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** Markup, as opposed to text (which `html` escapes). */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export const raw = (text: string) => new Html(text);

type Part = Html | string | number | null | undefined | false | readonly Part[];

function part(value: Part): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(part).join('');
  return esc(value);
}

/** A template whose values are escaped unless they are `Html`. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    out += part(v) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/** A number with thousands separators, as the CLI prints them. */
export function num(n: number | string | null | undefined): string {
  if (n === null || n === undefined || n === '') return '-';
  const value = Number(n);
  return Number.isFinite(value) ? value.toLocaleString('en-US') : String(n);
}

/** A time: UTC in the text and title, the viewer's own zone once the script runs. */
export function time(iso: string | null | undefined): Html {
  if (!iso) return raw('-');
  const utc = iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
  return html`<time datetime="${iso}" title="${utc}">${utc}</time>`;
}

/** A status as a word, and a class that colours it where colour shows. */
export function status(word: string | null | undefined): Html {
  const w = word ?? 'unknown';
  return html`<span class="status s-${w.replace(/[^a-z_]/gi, '')}">${w}</span>`;
}

export function credits(paid: Record<string, number> | undefined): string {
  const parts = Object.entries(paid ?? {});
  return parts.length === 0 ? '-' : parts.map(([t, n]) => `${num(n)} ${t}`).join(', ');
}

/** A table with a caption; `numeric` columns align right. */
export function table(
  caption: string,
  headers: readonly string[],
  rows: readonly Part[][],
  options: { numeric?: readonly number[]; empty?: string; id?: string } = {},
): Html {
  if (rows.length === 0)
    return html`<p class="empty">${options.empty ?? `No ${caption.toLowerCase()}.`}</p>`;
  const right = new Set(options.numeric ?? []);
  const cls = (i: number) => (right.has(i) ? raw(' class="n"') : '');
  return html`<table${options.id ? raw(` id="${esc(options.id)}"`) : ''}><caption>${caption}</caption>
<thead><tr>${headers.map((h, i) => html`<th scope="col"${cls(i)}>${h}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr>${r.map((c, i) => html`<td${cls(i)}>${c}</td>`)}</tr>\n`)}</tbody></table>`;
}

/** A link, its query kept from `params` (empty values dropped). */
export function link(path: string, params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== '') query.set(k, String(v));
  }
  const q = query.toString();
  return q ? `${path}?${q}` : path;
}

/** Previous and next links of a paged list, and where it is. */
export function pager(
  path: string,
  params: Record<string, string | number | undefined>,
  page: number,
  size: number,
  total: number,
  more = false,
): Html {
  const last = more ? Number.POSITIVE_INFINITY : Math.max(0, Math.ceil(total / size) - 1);
  const from = total === 0 ? 0 : page * size + 1;
  const to = more ? (page + 1) * size : Math.min(total, (page + 1) * size);
  return html`<nav class="pager" aria-label="Pages of the list">
${page > 0 ? html`<a href="${link(path, { ...params, page: page - 1 })}" rel="prev">Previous</a>` : ''}
<span>${num(from)} to ${num(to)} of ${more ? 'more than ' : ''}${num(total)}</span>
${page < last ? html`<a href="${link(path, { ...params, page: page + 1 })}" rel="next">Next</a>` : ''}
</nav>`;
}

const STYLE = `
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#111;background:#fff}
header{background:#f3f4f6;border-bottom:1px solid #ccc;padding:.5rem 1rem}
header p{margin:.25rem 0;color:#333}
nav.pages a{margin-right:1rem;font-weight:600}
nav.pages a[aria-current=page]{text-decoration:none;border-bottom:3px solid #111}
main{padding:0 1rem 2rem;max-width:80rem}
a{color:#0645ad} a:focus,button:focus,input:focus,select:focus{outline:3px solid #f59e0b;outline-offset:2px}
table{border-collapse:collapse;margin:.5rem 0 1.25rem;min-width:30rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid #bbb;padding:.2rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f4f6} td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.status{font-weight:600;padding:0 .3rem;border:1px solid currentColor;border-radius:3px}
.s-succeeded,.s-loaded,.s-refreshed{color:#065f46} .s-failed,.s-interrupted,.s-refused{color:#991b1b}
.s-running,.s-loading,.s-started,.s-requested{color:#1e40af} .s-partial,.s-incomplete,.s-cancelled{color:#92400e}
.skip{position:absolute;left:-999px} .skip:focus{position:static;display:inline-block;margin:.25rem 1rem;padding:.25rem}
.error{border-left:4px solid #991b1b;padding:.25rem .75rem;background:#fef2f2;white-space:pre-wrap}
.empty{color:#444;font-style:italic} .pager a{margin:0 .5rem} .note{color:#444}
form.filter{display:flex;gap:.75rem;flex-wrap:wrap;align-items:end;margin:.75rem 0}
form.filter label{display:flex;flex-direction:column;font-size:.85rem}
svg text{font:12px system-ui,sans-serif} pre{white-space:pre-wrap;word-break:break-all;margin:0}
`;

/** Times in the viewer's zone; while live, the page's main part refreshed when the state moves. */
const SCRIPT = `
function localTimes(root){for(const t of root.querySelectorAll('time[datetime]')){const d=new Date(t.getAttribute('datetime'));if(!isNaN(d))t.textContent=d.toLocaleString();}}
localTimes(document);
const main=document.getElementById('main');const live=main&&main.dataset.live;
if(live){let seen=main.dataset.version||null;const say=document.getElementById('live');
setInterval(async()=>{try{const r=await fetch(live,{credentials:'same-origin'});const v=(await r.json()).version;
if(seen!==null&&v!==seen){const page=await fetch(location.href,{credentials:'same-origin'});const doc=new DOMParser().parseFromString(await page.text(),'text/html');
const next=doc.getElementById('main');if(next){main.innerHTML=next.innerHTML;localTimes(main);}
if(say)say.textContent='Updated '+new Date().toLocaleTimeString();}seen=v;}catch(e){}},${'${POLL_MS}'});}
`;

export interface Layout {
  title: string;
  /** The pages' links (none in a static report). */
  nav?: { href: string; label: string; current: boolean }[];
  destination: string;
  /** The JSON the page polls while it is open (none in a static report). */
  live?: string;
  pollMs?: number;
  /** The state the page shows, as the live JSON names it. */
  version?: string | undefined;
}

export function page(layout: Layout, body: Html): string {
  const script = SCRIPT.replace('${POLL_MS}', String(layout.pollMs ?? 2000));
  return `<!doctype html>
${html`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${layout.title} · sluice</title><style>${raw(STYLE)}</style></head>
<body><a class="skip" href="#main">Skip to the page</a>
<header>${
  layout.nav
    ? html`<nav class="pages" aria-label="Dashboard">${layout.nav.map(
        (n) =>
          html`<a href="${n.href}"${n.current ? raw(' aria-current="page"') : ''}>${n.label}</a>`,
      )}</nav>`
    : ''
}
<p>sluice: state of ${layout.destination} (read-only)${layout.live ? html` · <span id="live" aria-live="polite">live: updates while a run goes on</span>` : ''}</p>
</header>
<main id="main"${layout.live ? html` data-live="${layout.live}"` : ''}${layout.version ? html` data-version="${layout.version}"` : ''}><h1>${layout.title}</h1>
${body}</main>
<script>${raw(script)}</script></body></html>`}`;
}
