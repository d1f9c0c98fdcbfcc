/**
 * A small stand-in for the service that sends what the emulator never would: records with a
 * field named `__proto__`, the same id twice in one file, values PostgreSQL refuses, a
 * thousand fields, a line of a hundred megabytes. It speaks just enough of v4 for one download
 * of one file (lines as given, written verbatim, NDJSON or CSV alike; or a body generated piece
 * by piece, never held whole). A real HTTP server, as the tests' other parts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface HostileService {
  v4Url: string;
  /** Downloads started so far. */
  downloads: () => number;
  /**
   * What the next download's file holds: `lines`, each ended by a newline. A download holds
   * as many records as lines unless `records` says otherwise (a CSV file's header is none).
   */
  serve(lines: string[], records?: number): void;
  /** A file of `records` records whose bytes `body` generates, streamed as they come. */
  serveGenerated(records: number, body: () => Iterable<string | Uint8Array>): void;
  close(): Promise<void>;
}

export async function startHostileService(): Promise<HostileService> {
  let count = 0;
  let file: () => Iterable<string | Uint8Array> = () => [];
  let started = 0;
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
        if (!request.download) return json(200, { num_found: count, total_cost: 0, records: [] });
        started++;
        return json(200, {
          num_found: count,
          total_cost: count,
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
          num_records: count,
          results: [{ url: `${origin}/files/${asked}_0.txt` }],
          created_at: new Date().toISOString(),
        });
      }
      if (path.startsWith('/files/')) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        // Piece by piece, as the reader takes them: a generated file is never held whole.
        pipeline(Readable.from(file(), { objectMode: false }), res).catch(() => res.destroy());
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
    serve(lines, records = lines.length) {
      count = records;
      file = () => [`${lines.join('\n')}\n`];
    },
    serveGenerated(records, generate) {
      count = records;
      file = generate;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
