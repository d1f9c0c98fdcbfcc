import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DataType } from '../../catalog.js';
import {
  type EmulatorContext,
  PREVIEW_MAX,
  resultFiles,
  type SearchRequest,
  search,
} from '../service.js';
import { type Download, HttpProblem } from '../state.js';
import { originOf, v3Date } from '../wire.js';
import { paged } from './paging.js';

const V3_TYPES: Record<string, DataType> = {
  businesses: 'businesses',
  products: 'products',
  properties: 'properties',
};

/** Parses an optional integer query parameter; 400 in the v3 shape when it is not one. */
function intParam(value: unknown, name: string, min: number, max: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const text = String(value);
  if (!/^-?\d+$/.test(text)) throw new HttpProblem(400, `${name} must be an integer`);
  const n = Number(text);
  if (n < min || n > max) throw new HttpProblem(400, `${name} must be between ${min} and ${max}`);
  return n;
}

function boolParam(value: unknown, name: string): boolean {
  if (value === undefined || value === '' || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new HttpProblem(400, `${name} must be true or false`);
}

export function registerV3(app: FastifyInstance, ctx: EmulatorContext): void {
  app.register(
    async (v3) => {
      v3.addHook('onRequest', async (request) => {
        const header = request.headers.authorization ?? '';
        const match = /^Basic\s+(\S+)$/i.exec(header);
        const decoded = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
        const user = decoded.includes(':') ? decoded.slice(0, decoded.indexOf(':')) : decoded;
        if (!user || user !== ctx.options.token) {
          throw new HttpProblem(
            401,
            'Invalid or missing API token: use HTTP basic auth with the token as user name',
          );
        }
      });
      registerData(v3, ctx);
      registerRequests(v3, ctx);
    },
    { prefix: '/v3' },
  );
}

/** `GET /data/{type}`: a preview, or the start of a download (a 303, or the request). */
function registerData(v3: FastifyInstance, ctx: EmulatorContext): void {
  const { v3Redirect, estimatedTotal } = ctx.forms;
  v3.get<{ Params: { type: string }; Querystring: Record<string, string> }>(
    '/data/:type',
    async (request, reply) => {
      const type = V3_TYPES[request.params.type];
      if (!type) throw new HttpProblem(404, `no data type '${request.params.type}'`);
      const result = search(ctx, dataRequest(type, request.query));
      if (result.download) {
        // A client following the guides polls the page a 303 lands on; one that stays on
        // the start URL would buy a new download with every poll.
        if (v3Redirect) {
          return reply.code(303).header('location', `/v3/requests/${result.download.seq}`).send();
        }
        return [requestBody(ctx, result.download)];
      }
      if (estimatedTotal) return { 'estimated total': result.numFound, records: result.records };
      return { num_found: result.numFound, total_cost: result.delivered, records: result.records };
    },
  );
}

/** The search a v3 data request asks for; 400 in the v3 shape for a parameter that is wrong. */
function dataRequest(type: DataType, q: Record<string, string>): SearchRequest {
  for (const [name, value] of Object.entries(q)) {
    if (!['q', 'view', 'format', 'download', 'records'].includes(name)) {
      throw new HttpProblem(400, `unknown parameter: ${name}`);
    }
    if (typeof value !== 'string')
      throw new HttpProblem(400, `parameter ${name} given more than once`);
  }
  if (q.q === undefined || q.q.trim() === '')
    throw new HttpProblem(400, 'invalid query: q is required');
  const format = (q.format ?? 'json').toLowerCase();
  if (format !== 'json' && format !== 'csv')
    throw new HttpProblem(400, 'format must be JSON or CSV');
  const download = boolParam(q.download, 'download');
  const records = download
    ? intParam(q.records, 'records', 1, 2_147_483_647)
    : intParam(q.records, 'records', 0, PREVIEW_MAX);
  return {
    api: 'v3',
    type,
    query: q.q,
    numRecords: records,
    recordsParam: q.records ?? '',
    format,
    download,
    view: q.view,
    autoTrace: false,
    addressMatching: 'on',
    onlyTraceable: false,
  };
}

/** `GET /requests`, `/requests/{id}` and `/results/{id}`: downloads and their files. */
function registerRequests(v3: FastifyInstance, ctx: EmulatorContext): void {
  const v3Downloads = () => ctx.state.downloads.filter((d) => d.api === 'v3');
  const findV3 = (id: string): Download => {
    if (!/^\d+$/.test(id)) throw new HttpProblem(404, `request ${id} not found`);
    const d = v3Downloads().find((x) => String(x.seq) === id);
    if (!d) throw new HttpProblem(404, `request ${id} not found`);
    return d;
  };

  v3.get('/requests', async (request, reply) =>
    paged(ctx, request, reply, v3Downloads()).map((d) => requestBody(ctx, d)),
  );
  v3.get<{ Params: { id: string } }>('/requests/:id', async (request) => [
    requestBody(ctx, findV3(request.params.id)),
  ]);
  v3.get<{ Params: { id: string } }>(
    '/results/:id',
    async (request: FastifyRequest<{ Params: { id: string } }>) => {
      const d = findV3(request.params.id);
      const completedAt = completedAtOf(ctx, d);
      if (completedAt === undefined) return [];
      // v3 result files expire 7 days after they were created, however often they are listed.
      return resultFiles(ctx, d, originOf(request), completedAt + ctx.options.fileTtlMs).map(
        (f) => ({
          id: d.seq * 1000 + f.n,
          url: f.url,
          request_id: d.seq,
          downloaded: 0,
          imported: 0,
          date_created: v3Date(completedAt),
        }),
      );
    },
  );
}

function completedAtOf(ctx: EmulatorContext, d: Download): number | undefined {
  if (ctx.state.status(d, ctx.clock.now()) !== 'completed') return undefined;
  const rate = ctx.options.rate;
  return d.createdAt + ctx.options.queueMs + Math.ceil((d.target * 1000) / rate);
}

function requestBody(ctx: EmulatorContext, d: Download) {
  const now = ctx.clock.now();
  const completedAt = completedAtOf(ctx, d);
  const started = d.createdAt;
  return {
    id: d.seq,
    records: d.recordsParam,
    query: d.query,
    dataType: d.type,
    dataFormat: d.format,
    accountId: ctx.options.token,
    planId: 'enterprise',
    view: d.view,
    async: 1,
    status: completedAt === undefined ? 'STARTED' : 'COMPLETED',
    error: '',
    numDownloaded: ctx.state.progress(d, now),
    numFound: d.numFound,
    numRequested: d.target,
    date_started: v3Date(started),
    // While running, the service shows the start date here too.
    date_completed: v3Date(completedAt ?? started),
  };
}
