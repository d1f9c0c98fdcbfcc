/**
 * A small stand-in for the service that sends what the emulator never would: records with a
 * field named `__proto__`, the same id twice in one file, values PostgreSQL refuses, a
 * thousand fields, a line of a hundred megabytes; result files that redirect, come empty or
 * short, or damaged under gzip. It speaks just enough of v4 for downloads of NDJSON lines (or
 * CSV records under a header) as given, written verbatim, over one file or several, or of one
 * file generated piece by piece, never held whole. A real HTTP server, as the tests' other
 * parts.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gzipSync } from 'node:zlib';

/**
 * How a result file answers, when not plainly and whole: a 302 to where it really is; an empty
 * 200; the file without its last record; gzip (`Content-Encoding: gzip`) with bytes of its
 * middle changed, or cut in half (its Content-Length saying so), or plain text sent as gzip.
 */
export type FileAnswer = 'redirect' | 'empty' | 'short' | 'gzip-corrupt' | 'gzip-cut' | 'gzip-text';

export interface Serving {
  /** Result files the lines are split over, in order (default 1). */
  files?: number;
  /** How file `index` answers; undefined: plainly and whole. */
  answer?: (index: number) => FileAnswer | undefined;
  /**
   * The first answer of each file waits until every file of the download has been asked for,
   * so that files loaded at once are in flight together.
   */
  together?: boolean;
  /**
   * A CSV header, the first line of each file: the lines are then CSV records (one line each),
   * and the header is not one of the download's records.
   */
  header?: string;
}

export interface HostileService {
  v4Url: string;
  /** Downloads started so far. */
  downloads: () => number;
  /** What the next download's files hold (all of them: `num_records` is `lines.length`). */
  serve(lines: string[], serving?: Serving): void;
  /** The next download: one file of `records` records whose bytes `body` generates as read. */
  serveGenerated(records: number, body: () => Iterable<string | Uint8Array>): void;
  /** GETs of the result file named `name` so far (redirects followed not counted twice). */
  fileGets(name: string): number;
  /**
   * With `together`: whether every file was asked for before any was answered. The first
   * answers are sent anyway after a few seconds, so a loader that fetches one file at a time
   * is told so here instead of hanging.
   */
  servedTogether(): boolean;
  close(): Promise<void>;
}

export async function startHostileService(): Promise<HostileService> {
  let lines: string[] = [];
  let serving: Serving = {};
  let generated: { records: number; body: () => Iterable<string | Uint8Array> } | undefined;
  const records = () => generated?.records ?? lines.length;
  let started = 0;
  const gets = new Map<string, number>();
  /** Answers waiting for every file to be asked for (`together`). */
  let held: (() => void)[] = [];
  let heldTimer: NodeJS.Timeout | undefined;
  let together = false;
  const release = () => {
    clearTimeout(heldTimer);
    heldTimer = undefined;
    for (const go of held) go();
    held = [];
  };
  const fileCount = () => Math.max(1, serving.files ?? 1);
  const linesOf = (index: number) => {
    const per = Math.ceil(lines.length / fileCount());
    return lines.slice(index * per, (index + 1) * per);
  };
  const send = (res: ServerResponse, index: number, answer: FileAnswer | undefined) => {
    if (generated) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // Piece by piece, as the reader takes them: a generated file is never held whole.
      pipeline(Readable.from(generated.body(), { objectMode: false }), res).catch(() =>
        res.destroy(),
      );
      return;
    }
    const all = linesOf(index);
    const head = serving.header === undefined ? '' : `${serving.header}\n`;
    const text = head + (answer === 'short' ? all.slice(0, -1) : all).map((l) => `${l}\n`).join('');
    let body = Buffer.from(answer === 'empty' ? '' : text);
    const headers: Record<string, string> = { 'content-type': 'text/plain' };
    if (answer?.startsWith('gzip-')) {
      headers['content-encoding'] = 'gzip';
      const zipped = gzipSync(body);
      if (answer === 'gzip-corrupt') {
        const middle = Math.floor(zipped.length / 2);
        for (let i = middle; i < Math.min(zipped.length - 8, middle + 16); i++)
          zipped[i] = zipped[i]! ^ 0x5a;
      }
      body = answer === 'gzip-cut' ? zipped.subarray(0, Math.floor(zipped.length / 2)) : zipped;
      if (answer === 'gzip-text') body = Buffer.from(text);
    }
    headers['content-length'] = String(body.length);
    res.writeHead(200, headers);
    res.end(body);
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      const path = url.pathname;
      if (path === '/v4/auth') return json(200, { token: 't' });
      if (path === '/v4/account') {
        const credits: Record<string, number> = { email: 0 };
        for (const t of ['business', 'people', 'product', 'property']) {
          credits[`${t}_credits_allotted`] = 1_000_000;
          credits[`${t}_credits_used`] = 0;
        }
        return json(200, { email: 'h@sluice.test', ...credits });
      }
      if (path === '/v4/views') return json(200, []);
      if (/^\/v4\/\w+\/search$/.test(path)) {
        const request = JSON.parse(body || '{}') as { download?: boolean; num_records?: number };
        if (!request.download)
          return json(200, { num_found: records(), total_cost: 0, records: [] });
        started++;
        return json(200, {
          num_found: records(),
          total_cost: records(),
          download_id: `h${started}`,
          records: [],
        });
      }
      if (path === '/v4/downloads') return json(200, []);
      if (path.startsWith('/v4/downloads/')) {
        const asked = decodeURIComponent(path.slice('/v4/downloads/'.length));
        const origin = `http://${req.headers.host}`;
        return json(200, {
          id: asked,
          status: 'completed',
          num_records: records(),
          results: Array.from({ length: fileCount() }, (_, n) => ({
            url: `${origin}/files/${asked}_${n}.txt?signature=s3cr3t`,
          })),
          created_at: new Date().toISOString(),
        });
      }
      const file = /^\/(files|store)\/\w+_(\d+)\.txt$/.exec(path);
      if (file) {
        const name = path.slice(path.lastIndexOf('/') + 1);
        const index = Number(file[2]);
        const answer = serving.answer?.(index);
        if (file[1] === 'files' && answer === 'redirect') {
          res.writeHead(302, { location: `/store/${name}?signature=elsewhere` });
          return res.end();
        }
        const n = (gets.get(name) ?? 0) + 1;
        gets.set(name, n);
        const reply = () => send(res, index, file[1] === 'store' ? undefined : answer);
        if (!serving.together || n > 1) return reply();
        held.push(reply);
        if (held.length === fileCount()) {
          together = true;
          release();
        } else heldTimer ??= setTimeout(release, 5000);
        return;
      }
      json(404, { error: 'Not Found', message: `no ${path}`, code: 404 });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    v4Url: `http://127.0.0.1:${port}/v4`,
    downloads: () => started,
    serve(next, how = {}) {
      lines = next;
      serving = how;
      generated = undefined;
      release();
      together = false;
    },
    serveGenerated(count, body) {
      lines = [];
      serving = {};
      generated = { records: count, body };
      release();
      together = false;
    },
    fileGets: (name) => gets.get(name) ?? 0,
    servedTogether: () => together,
    close: () => {
      release();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
