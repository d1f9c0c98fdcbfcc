import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Destination, RunFilter } from '../load/destination.js';
import { creditSeries, overview, rejectsPage, runDetail, runsPage, tablesPage } from './data.js';
import { type Html, html, link, page } from './html.js';
import { creditsBody, overviewBody, rejectsBody, runBody, runsBody, tablesBody } from './pages.js';
import type { Source } from './sources.js';

/**
 * `sluice ui`: the state tables as web pages, on node's own HTTP server. Read-only: only GET and
 * HEAD are answered, and each answer opens its destination read-only and closes it again. On
 * any address other than the loopback, every request must carry the token (`?token=` once, then
 * a cookie the server sets).
 */
export interface UiOptions {
  sources: Source[];
  host: string;
  port: number;
  /** Required on every request when set. */
  token?: string | undefined;
  now?: () => number;
}

const NAV = [
  ['/', 'Overview'],
  ['/runs', 'Runs'],
  ['/credits', 'Credits'],
  ['/tables', 'Tables'],
  ['/rejects', 'Rejects'],
] as const;

/** Sent with every answer: nothing cached, nothing sniffed, nothing loaded from elsewhere. */
const HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src 'self'; form-action 'self'",
};

interface Answer {
  title: string;
  body: Html;
  /** The state it was read from (see liveVersion). */
  version?: string;
}

export async function startUi(options: UiOptions): Promise<{ url: string; server: Server }> {
  const ui = new Dashboard(options);
  const server = createServer((req, res) => {
    ui.answer(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`the dashboard could not read the destination: ${(error as Error).message}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return { url: `http://${host}:${port}/`, server };
}

class Dashboard {
  readonly #options: UiOptions;
  /** The last page read from each destination, shown while a run holds a one-process file. */
  readonly #snapshots = new Map<string, { at: number; body: string }>();

  constructor(options: UiOptions) {
    this.#options = options;
  }

  async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!this.#admit(req, res, url)) return;
    const d = Number(url.searchParams.get('d') ?? 0);
    const source = this.#options.sources[d];
    if (source === undefined || !Number.isInteger(d)) {
      res.writeHead(404, HEADERS).end('no such destination');
      return;
    }
    if (url.pathname === '/api/live') {
      const version = await this.#read(source, (dest) => liveVersion(dest));
      res.writeHead(200, { ...HEADERS, 'content-type': 'application/json' });
      res.end(JSON.stringify({ version: version === NO_STATE ? 'none' : (version ?? 'busy') }));
      return;
    }
    // The page carries the state it shows, so that its script sees any change after it.
    const read = await this.#read(source, async (dest) => {
      const shown = await this.#page(url, source, dest, d);
      return shown === 'missing' ? shown : { ...shown, version: await liveVersion(dest) };
    });
    const answer = read === NO_STATE ? noState() : read;
    const { code, body } = this.#render(url, source, d, answer);
    res.writeHead(code, { ...HEADERS, 'content-type': 'text/html; charset=utf-8' });
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  /**
   * Whether the request may be answered: GET or HEAD only, and the token when one is set. A
   * token in the address is swapped for a cookie, so it leaves the address bar. False when it
   * answered already (refused, or redirected).
   */
  #admit(req: IncomingMessage, res: ServerResponse, url: URL): boolean {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...HEADERS, allow: 'GET, HEAD' }).end('read-only: GET only');
      return false;
    }
    const token = this.#options.token;
    if (token === undefined) return true;
    const given = url.searchParams.get('token') ?? cookieOf(req, 'sluice_token');
    if (given === undefined || given === null || !same(given, token)) {
      res.writeHead(401, { ...HEADERS, 'content-type': 'text/plain; charset=utf-8' });
      res.end('a token is needed: open the address sluice ui printed, with its ?token=');
      return false;
    }
    if (url.searchParams.has('token')) {
      url.searchParams.delete('token');
      const cookie = `sluice_token=${token}; HttpOnly; SameSite=Strict; Path=/`;
      res.writeHead(303, {
        ...HEADERS,
        'set-cookie': cookie,
        location: url.pathname + url.search,
      });
      res.end();
      return false;
    }
    return true;
  }

  /**
   * The page for what was read: while a run holds the file (undefined), the last page read from
   * it, marked as such; a page that does not exist is a 404. A page read is kept as the snapshot.
   */
  #render(
    url: URL,
    source: Source,
    d: number,
    answer: Answer | 'missing' | undefined,
  ): { code: number; body: string } {
    const key = `${d} ${url.pathname}${url.search}`;
    if (answer === undefined) {
      const before = this.#snapshots.get(key);
      const body =
        before?.body ??
        page({ title: 'Busy', destination: source.label, nav: this.#nav(url.pathname, d) }, hold());
      return {
        code: 200,
        body: body.replace(
          '<main id="main"',
          `<p role="status"><strong>A run has the DuckDB file open: showing what it held at ${new Date(before?.at ?? this.#now()).toISOString()}.</strong></p><main id="main"`,
        ),
      };
    }
    if (answer === 'missing') {
      const body = page(
        { title: 'Not found', destination: source.label, nav: this.#nav('', d) },
        hold('No such page or run.'),
      );
      return { code: 404, body };
    }
    const body = page(
      {
        title: answer.title,
        destination: source.label,
        nav: this.#nav(url.pathname, d),
        live: link('/api/live', { d: d || undefined }),
        version: answer.version,
      },
      answer.body,
    );
    this.#snapshots.set(key, { at: this.#now(), body });
    return { code: 200, body };
  }

  #now(): number {
    return this.#options.now?.() ?? Date.now();
  }

  #nav(path: string, d: number) {
    const sources = this.#options.sources;
    return [
      ...NAV.map(([href, label]) => ({
        href: link(href, { d: d || undefined }),
        label,
        current: href === path,
      })),
      ...(sources.length > 1
        ? sources.map((s, i) => ({
            href: link('/', { d: i || undefined }),
            label: `[${s.label}]`,
            current: i === d && path === '/',
          }))
        : []),
    ];
  }

  /** Opens the destination read-only for one answer; undefined while a run holds it. */
  async #read<T>(
    source: Source,
    work: (d: Destination) => Promise<T>,
  ): Promise<T | typeof NO_STATE | undefined> {
    let dest: Destination;
    try {
      dest = await source.open();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 'SLUICE_LOCKED') return undefined;
      if (code === 'SLUICE_NO_STATE') return NO_STATE;
      throw error;
    }
    // Where it is as the destination says it (a file's full path, no password).
    source.label = dest.description;
    try {
      return await work(dest);
    } finally {
      await dest.close();
    }
  }

  async #page(url: URL, source: Source, dest: Destination, d: number): Promise<Answer | 'missing'> {
    const q = (name: string) => url.searchParams.get(name) || undefined;
    const pageNo = Math.max(0, Number(q('page') ?? 0) || 0);
    const now = this.#now();
    if (!(await dest.hasState())) {
      return {
        title: 'No state',
        body: hold('No sluice run has written to this destination yet.'),
      };
    }
    const params = { d: d || undefined };
    switch (url.pathname) {
      case '/': {
        const o = await overview(source, dest, now);
        return {
          title: 'Overview',
          body: overviewBody(o, (id) => link('/run', { ...params, id })),
        };
      }
      case '/runs': {
        const until = q('until');
        const filter: RunFilter = {
          pipeline: q('pipeline'),
          status: q('status'),
          from: dayStart(q('from')),
          until: dayStart(until, 1),
        };
        const data = await runsPage(dest, filter, pageNo);
        const all = {
          ...params,
          pipeline: filter.pipeline,
          status: filter.status,
          from: q('from'),
          until,
        };
        return { title: 'Runs', body: runsBody(data, filter, pageNo, all) };
      }
      case '/run': {
        const id = q('id');
        const detail = id === undefined ? undefined : await runDetail(dest, id, pageNo);
        if (detail === undefined) return 'missing';
        return { title: `Run ${detail.run.run_id}`, body: runBody(detail, pageNo, params, now) };
      }
      case '/credits':
        return {
          title: 'Credits over time',
          body: creditsBody(
            await creditSeries(source, dest, now, Number(q('days') ?? 60) || 60),
            now,
          ),
        };
      case '/tables':
        return { title: 'Tables', body: tablesBody(await tablesPage(source, dest)) };
      case '/rejects': {
        const search = { q: q('q'), pipeline: q('pipeline') };
        const rejects = await rejectsPage(
          dest,
          { search: search.q, pipeline: search.pipeline },
          pageNo,
        );
        const pipelines = await dest.reads().pipelines();
        return {
          title: 'Rejects',
          body: rejectsBody(rejects, search, pipelines, pageNo, { ...params, ...search }),
        };
      }
      default:
        return 'missing';
    }
  }
}

/** A destination no run has written to (a missing file, no state tables). */
const NO_STATE = Symbol('no state');

function noState(): Answer {
  return { title: 'No state', body: hold('No sluice run has written to this destination yet.') };
}

function hold(text = 'Nothing read yet.'): Html {
  return html`<p class="empty">${text}</p>`;
}

/** What changes while a run goes on: the newest run, its jobs, attempts and phases. */
async function liveVersion(d: Destination): Promise<string> {
  if (!(await d.hasState())) return 'none';
  const reads = d.reads();
  const { rows, total } = await reads.runs({}, 1, 0);
  const top = rows[0];
  if (top === undefined) return `0`;
  const [jobs, attempts, phases] = await Promise.all([
    reads.jobs(top.run_id),
    reads.attempts(top.run_id),
    reads.phases(top.run_id),
  ]);
  return JSON.stringify([
    total,
    top.run_id,
    top.status,
    top.stage,
    top.finished_at,
    jobs.map((j) => j.status),
    attempts.map((a) => [a.status, a.num_records]),
    phases.map((p) => p.ended_at ?? p.phase),
  ]);
}

/** A date (YYYY-MM-DD) as the ISO time its UTC day begins, `days` later. */
function dayStart(day: string | undefined, days = 0): string | undefined {
  if (day === undefined || !/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString();
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
