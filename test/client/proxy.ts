/**
 * A small real HTTP server in front of the emulator, for answers the emulator does not send
 * itself (lists in envelopes, downloads without a creation time) and for things that must
 * happen while a request is in flight (a neighbour starting a download). Everything else passes
 * through unchanged; the emulator still logs each request and injects its faults.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

export interface ProxiedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  /** The query string, `?` included, or ''. */
  search: string;
}

export interface ProxyHooks {
  /** Awaited before the request is passed on. */
  before?: (req: ProxiedRequest) => Promise<void>;
  /** A JSON answer's body as the client gets it; undefined leaves it as the emulator sent it. */
  rewrite?: (req: ProxiedRequest, status: number, body: unknown) => unknown;
  /** Headers added to a JSON answer (a `Link` to the next page), from the body as sent. */
  headers?: (req: ProxiedRequest, status: number, body: unknown) => Record<string, string>;
}

export class RewritingProxy {
  hooks: ProxyHooks = {};
  readonly #server: Server;
  readonly #target: string;

  private constructor(server: Server, target: string) {
    this.#server = server;
    this.#target = target;
  }

  /** `target` is the emulator's root URL (`http://127.0.0.1:port`). */
  static async start(target: string): Promise<RewritingProxy> {
    let proxy: RewritingProxy | undefined;
    const server = createServer((req, res) => {
      proxy?.handle(req, res).catch((error: unknown) => {
        // A dropped upstream connection (a `reset` fault) is passed on as a dropped connection.
        res.socket?.destroy(error instanceof Error ? error : undefined);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new RewritingProxy(server, target.replace(/\/+$/, ''));
    return proxy;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const info: ProxiedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      search: url.search,
    };
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    await this.hooks.before?.(info);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      // The emulator builds file URLs from its own host, so they bypass the proxy.
      if (name === 'host' || name === 'connection' || value === undefined) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
    const upstream = await request(this.#target + url.pathname + url.search, {
      method: info.method as 'GET',
      headers,
      body,
    });
    const type = String(upstream.headers['content-type'] ?? '');
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (['content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(name))
        continue;
      if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const text = await upstream.body.text();
    let sent = text;
    if (/json/.test(type) && text.trim() !== '') {
      const parsed: unknown = JSON.parse(text);
      Object.assign(out, this.hooks.headers?.(info, upstream.statusCode, parsed));
      const rewritten = this.hooks.rewrite?.(info, upstream.statusCode, parsed);
      if (rewritten !== undefined) sent = JSON.stringify(rewritten);
    }
    res.writeHead(upstream.statusCode, out);
    res.end(sent);
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
