import type { FastifyInstance, FastifyRequest } from 'fastify';
import { CREDIT_TYPE_OF, DATA_TYPES, type DataType, premadeView } from '../../catalog.js';
import {
  createTargetedUpdate,
  createView,
  type EmulatorContext,
  ownView,
  PREVIEW_MAX,
  resultFiles,
  SCRAPE_MAX,
  search,
  targetedUpdateBody,
  updateView,
} from '../service.js';
import { accountBody, type Download, HttpProblem } from '../state.js';
import { isoDate, originOf, type WireForms } from '../wire.js';
import { paged } from './paging.js';

const INT_MAX = 2_147_483_647;
const numRecords = { type: 'integer', minimum: 0, maximum: INT_MAX } as const;
const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
const fieldList = { type: 'array', items: text(200), maxItems: 500 } as const;

/**
 * A body schema: the fields a route reads, with their checks. Under the contract the fields it
 * lists are all a body may hold; live, others are ignored, as the service ignores the fields
 * real clients add of their own (`view_name`, say).
 */
function bodySchema(
  forms: WireForms,
  required: readonly string[],
  properties: Record<string, unknown>,
) {
  return {
    type: 'object',
    required,
    ...(forms.lenientBodies ? {} : { additionalProperties: false }),
    properties,
  } as const;
}

/**
 * `num_records` is required by the contract; live, a download without it takes every match (as
 * the service's guides say) and a preview shows PREVIEW_MAX records, as v3 does without `records`.
 */
const searchBody = (forms: WireForms, withPropertyOptions: boolean) =>
  bodySchema(forms, forms.lenientBodies ? ['query'] : ['query', 'num_records'], {
    query: text(10_000),
    num_records: numRecords,
    format: { type: 'string', enum: ['json', 'csv', 'JSON', 'CSV'] },
    download: { type: 'boolean' },
    view: text(200),
    ...(withPropertyOptions
      ? {
          auto_trace: { type: 'boolean' },
          address_matching: { type: 'string', enum: ['on', 'off', 'retry'] },
          // The name the service's autotrace guide gives it; an older name is an unknown field.
          only_traceable: { type: 'boolean' },
        }
      : {}),
  });

interface SearchBody {
  query: string;
  num_records?: number;
  format?: string;
  download?: boolean;
  view?: string;
  auto_trace?: boolean;
  address_matching?: 'on' | 'off' | 'retry';
  only_traceable?: boolean;
}

export function registerV4(app: FastifyInstance, ctx: EmulatorContext): void {
  const forms = ctx.forms;

  app.register(
    async (v4) => {
      // onRequest, not preHandler: credentials are checked before the body is parsed or validated.
      v4.addHook('onRequest', async (request) => {
        if (request.method === 'POST' && request.routeOptions.url === '/v4/auth') return;
        const header = request.headers.authorization ?? '';
        const match = /^Bearer\s+(\S+)$/i.exec(header);
        if (!match)
          throw new HttpProblem(
            401,
            'Missing bearer token: send Authorization: Bearer <token>, with a token from POST /auth or your API token',
          );
        // The account's API token (the one v3 takes) is a bearer token too, as the service's
        // guides use it: many customers hold only that token, copied from the web portal.
        if (match[1] !== ctx.options.token && !ctx.state.tokenIsValid(match[1]!))
          throw new HttpProblem(
            401,
            'Invalid or expired token: authenticate again with POST /auth',
          );
      });

      v4.post<{ Body: { email: string; password: string } }>(
        '/auth',
        {
          schema: {
            body: bodySchema(forms, ['email', 'password'], {
              email: text(320),
              password: text(1000),
            }),
          },
        },
        async (request) => {
          const { email, password } = request.body;
          const account = ctx.state.account;
          if (
            email.toLowerCase() !== account.email.toLowerCase() ||
            password !== account.password
          ) {
            throw new HttpProblem(401, 'Invalid email or password');
          }
          return { token: ctx.state.issueToken(ctx.options.tokenTtlMs) };
        },
      );

      v4.get('/health', async () => ({ status: 'ok' }));

      v4.get('/account', async () => accountBody(ctx.state.account));

      v4.put<{
        Body: { email?: string; password?: string; first_name?: string; last_name?: string };
      }>(
        '/account',
        {
          schema: {
            body: bodySchema(forms, [], {
              email: {
                type: 'string',
                minLength: 3,
                maxLength: 320,
                pattern: '^[^@\\s]+@[^@\\s]+$',
              },
              password: { type: 'string', minLength: 8, maxLength: 1000 },
              first_name: text(200),
              last_name: text(200),
            }),
          },
        },
        async (request) => {
          const account = ctx.state.account;
          const { email, password, first_name, last_name } = request.body;
          const previous = account.email;
          const changes: string[] = [];
          if (email !== undefined && email !== account.email) {
            account.email = email;
            changes.push(`email changed to ${email}`);
          }
          if (password !== undefined) {
            account.password = password;
            ctx.state.passwordGeneration += 1;
            changes.push('password changed');
          }
          if (first_name !== undefined) account.first_name = first_name;
          if (last_name !== undefined) account.last_name = last_name;
          if (changes.length > 0) {
            ctx.state.outbox.push({
              to: previous,
              subject: 'Your account details were changed',
              body: `The following changes were made to your account: ${changes.join(', ')}.`,
              time: new Date(ctx.clock.now()).toISOString(),
            });
          }
          return accountBody(account);
        },
      );

      v4.post<{ Body: { name: string; fields: string[] } }>(
        '/views',
        {
          schema: {
            body: bodySchema(forms, ['name', 'fields'], { name: text(200), fields: fieldList }),
          },
        },
        async (request, reply) => {
          reply.code(201);
          return createView(ctx, request.body.name, request.body.fields);
        },
      );
      v4.get('/views', async (request, reply) =>
        paged(ctx, request, reply, [...ctx.state.views.values()]),
      );
      v4.get<{ Params: { name: string } }>('/views/:name', async (request) => {
        const premade = premadeView(request.params.name);
        const own = ctx.state.views.get(request.params.name);
        if (own) return own;
        if (premade)
          return { name: request.params.name, fields: premade.fields, created_at: isoDate(0) };
        throw new HttpProblem(404, `view '${request.params.name}' not found`);
      });
      v4.put<{ Params: { name: string }; Body: { name?: string; fields?: string[] } }>(
        '/views/:name',
        {
          schema: { body: bodySchema(forms, [], { name: text(200), fields: fieldList }) },
        },
        async (request) => updateView(ctx, request.params.name, request.body),
      );
      v4.delete<{ Params: { name: string } }>('/views/:name', async (request) => {
        const view = ownView(ctx, request.params.name);
        ctx.state.views.delete(view.name);
        return { message: `view '${view.name}' deleted` };
      });

      for (const type of DATA_TYPES) {
        v4.post<{ Body: SearchBody }>(
          `/${type}/search`,
          { schema: { body: searchBody(forms, type === 'properties') } },
          async (request, reply) => {
            const body = request.body;
            const download = body.download === true;
            const result = search(ctx, {
              api: 'v4',
              type,
              query: body.query,
              numRecords: body.num_records ?? (download ? undefined : PREVIEW_MAX),
              recordsParam: body.num_records === undefined ? '' : String(body.num_records),
              format: body.format?.toLowerCase() === 'csv' ? 'csv' : 'json',
              download,
              view: body.view,
              autoTrace: body.auto_trace === true,
              addressMatching: body.address_matching ?? 'on',
              onlyTraceable: body.only_traceable === true,
            });
            const perType = result.autoTrace ? 2 : 1;
            const cost: Record<string, unknown> = { total_cost: result.delivered * perType };
            if (forms.costPerType) {
              if (result.autoTrace) {
                cost.property_cost = result.delivered;
                cost.people_cost = result.delivered;
              } else cost[`${CREDIT_TYPE_OF[type]}_cost`] = result.delivered;
            }
            const d = result.download;
            if (!d) return { num_found: result.numFound, ...cost, records: result.records };
            reply.code(forms.v4Start.status);
            return {
              ...(forms.v4Start.searchAnswer
                ? { num_found: result.numFound, records: result.records, download_id: d.publicId }
                : {}),
              ...cost,
              ...(forms.v4Start.downloadObject ? downloadBody(ctx, request, d) : {}),
            };
          },
        );
      }

      const v4Downloads = () => ctx.state.downloads.filter((d) => d.api === 'v4');
      const findV4 = (id: string): Download => {
        const d = v4Downloads().find((x) => x.publicId === id || String(x.seq) === id);
        if (!d) throw new HttpProblem(404, `download '${id}' not found`);
        return d;
      };
      v4.get('/downloads', async (request, reply) =>
        paged(ctx, request, reply, v4Downloads()).map((d) => downloadBody(ctx, request, d)),
      );
      v4.get<{ Params: { id: string } }>('/downloads/:id', async (request) =>
        downloadBody(ctx, request, findV4(request.params.id)),
      );
      v4.delete<{ Params: { id: string } }>('/downloads/:id', async (request) => {
        const d = findV4(request.params.id);
        const status = ctx.state.status(d, ctx.clock.now());
        if (status === 'completed' || status === 'cancelled') {
          throw new HttpProblem(409, `download '${request.params.id}' is already ${status}`);
        }
        ctx.state.cancel(d);
        return {
          message: `download '${request.params.id}' cancelled; ${d.cancelled!.delivered} records kept`,
        };
      });

      const realTimeBody = (maxRecords: number) =>
        bodySchema(forms, ['query', 'num_records'], {
          query: text(10_000),
          num_records: { type: 'integer', minimum: 1, maximum: maxRecords },
          data_type: { type: 'string', enum: [...DATA_TYPES] },
        });
      v4.post<{ Body: { query: string; num_records: number; data_type?: DataType } }>(
        '/targeted-updates',
        { schema: { body: realTimeBody(100_000) } },
        async (request, reply) => {
          reply.code(201);
          return targetedUpdateBody(ctx, createTargetedUpdate(ctx, request.body));
        },
      );
      v4.get('/targeted-updates', async () =>
        ctx.state.updates.map((u) => targetedUpdateBody(ctx, u)),
      );

      v4.post<{ Body: { query: string; num_records: number; data_type?: DataType } }>(
        '/scrape',
        {
          schema: { body: realTimeBody(SCRAPE_MAX) },
        },
        async (request) => {
          const type = request.body.data_type ?? 'properties';
          const matches = search(ctx, {
            api: 'v4',
            type,
            query: request.body.query,
            numRecords: 0,
            recordsParam: '',
            format: 'json',
            download: false,
            view: undefined,
            autoTrace: false,
            addressMatching: 'on',
            onlyTraceable: false,
          });
          const now = ctx.clock.now();
          const found = ctx.engine.match(
            type,
            request.body.query,
            { autoTrace: false, addressMatching: 'on', onlyTraceable: false },
            now,
          );
          // The same moment as the search above but for a clock tick: count what this one found.
          const count = Math.min(request.body.num_records, matches.numFound, found.count);
          ctx.state.requireCredits(type, false, count);
          const indices = Array.from({ length: count }, (_, p) => found.at(p));
          // Scraped now from their sources: the records are as fresh as this moment, and the
          // service holds them so from now on (a later search or download finds them updated).
          if (count > 0) ctx.engine.world.update(type, indices, now);
          const records = indices.map((index) => ctx.engine.record(type, index, false, now));
          ctx.state.charge(type, false, count);
          return {
            id: `sc_${ctx.state.nextSeq()}`,
            query: request.body.query,
            data_type: type,
            num_records: count,
            status: 'completed',
            total_cost: count,
            scraped_at: isoDate(now),
            records,
          };
        },
      );
    },
    { prefix: '/v4' },
  );
}

const STARTED_RUNNING: Record<string, string> = { queued: 'started', in_progress: 'running' };

/** A v4 download object in the wire form (wire.ts): `numDownloaded`, `urlStrings`, ids, states. */
function downloadBody(ctx: EmulatorContext, request: FastifyRequest, d: Download) {
  const { forms } = ctx;
  const now = ctx.clock.now();
  const status = ctx.state.status(d, now);
  const progress = ctx.state.progress(d, now);
  const urls = resultFiles(ctx, d, originOf(request)).map((f) => f.url);
  return {
    id: forms.integerIds ? d.seq : d.publicId,
    status: forms.startedRunning ? (STARTED_RUNNING[status] ?? status) : status,
    num_records: forms.numDownloaded ? d.target : progress,
    ...(forms.numDownloaded ? { num_downloaded: progress } : {}),
    results: forms.urlStrings ? urls : urls.map((url) => ({ url })),
    created_at: isoDate(d.createdAt),
  };
}
