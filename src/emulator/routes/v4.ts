import type { FastifyInstance, FastifyRequest } from 'fastify';
import { CREDIT_TYPE_OF, DATA_TYPES, type DataType } from '../../catalog.js';
import {
  createTargetedUpdate,
  createView,
  type EmulatorContext,
  ownView,
  resultFiles,
  SCRAPE_MAX,
  search,
  targetedUpdateBody,
  updateView,
} from '../service.js';
import { accountBody, type Download, HttpProblem } from '../state.js';
import { PREMADE_VIEWS } from '../views.js';
import { isoDate, originOf } from '../wire.js';

const INT_MAX = 2_147_483_647;
const numRecords = { type: 'integer', minimum: 0, maximum: INT_MAX } as const;
const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
const fieldList = { type: 'array', items: text(200), maxItems: 500 } as const;

const searchBody = (withPropertyOptions: boolean) => ({
  type: 'object',
  required: ['query', 'num_records'],
  additionalProperties: false,
  properties: {
    query: text(10_000),
    num_records: numRecords,
    format: { type: 'string', enum: ['json', 'csv', 'JSON', 'CSV'] },
    download: { type: 'boolean' },
    view: text(200),
    ...(withPropertyOptions
      ? {
          auto_trace: { type: 'boolean' },
          address_matching: { type: 'string', enum: ['on', 'off', 'retry'] },
          require_people_data: { type: 'boolean' },
        }
      : {}),
  },
});

interface SearchBody {
  query: string;
  num_records: number;
  format?: string;
  download?: boolean;
  view?: string;
  auto_trace?: boolean;
  address_matching?: 'on' | 'off' | 'retry';
  require_people_data?: boolean;
}

export function registerV4(app: FastifyInstance, ctx: EmulatorContext): void {
  const real = ctx.options.wire === 'real';

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
            body: {
              type: 'object',
              required: ['email', 'password'],
              additionalProperties: false,
              properties: { email: text(320), password: text(1000) },
            },
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
            body: {
              type: 'object',
              additionalProperties: false,
              properties: {
                email: {
                  type: 'string',
                  minLength: 3,
                  maxLength: 320,
                  pattern: '^[^@\\s]+@[^@\\s]+$',
                },
                password: { type: 'string', minLength: 8, maxLength: 1000 },
                first_name: text(200),
                last_name: text(200),
              },
            },
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
            body: {
              type: 'object',
              required: ['name', 'fields'],
              additionalProperties: false,
              properties: { name: text(200), fields: fieldList },
            },
          },
        },
        async (request, reply) => {
          reply.code(201);
          return createView(ctx, request.body.name, request.body.fields);
        },
      );
      v4.get('/views', async () => [...ctx.state.views.values()]);
      v4.get<{ Params: { name: string } }>('/views/:name', async (request) => {
        const premade = PREMADE_VIEWS[request.params.name];
        const own = ctx.state.views.get(request.params.name);
        if (own) return own;
        if (premade)
          return { name: request.params.name, fields: premade.fields, created_at: isoDate(0) };
        throw new HttpProblem(404, `view '${request.params.name}' not found`);
      });
      v4.put<{ Params: { name: string }; Body: { name?: string; fields?: string[] } }>(
        '/views/:name',
        {
          schema: {
            body: {
              type: 'object',
              additionalProperties: false,
              properties: { name: text(200), fields: fieldList },
            },
          },
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
          { schema: { body: searchBody(type === 'properties') } },
          async (request, reply) => {
            const body = request.body;
            const result = search(ctx, {
              api: 'v4',
              type,
              query: body.query,
              numRecords: body.num_records,
              recordsParam: String(body.num_records),
              format: body.format?.toLowerCase() === 'csv' ? 'csv' : 'json',
              download: body.download === true,
              view: body.view,
              autoTrace: body.auto_trace === true,
              addressMatching: body.address_matching ?? 'on',
              requirePeopleData: body.require_people_data === true,
            });
            const perType = result.autoTrace ? 2 : 1;
            const totalCost = result.delivered * perType;
            if (result.download && real) {
              reply.code(202);
              return {
                id: result.download.seq,
                status: 'started',
                num_downloaded: 0,
                total_cost: totalCost,
              };
            }
            const response: Record<string, unknown> = {
              num_found: result.numFound,
              total_cost: totalCost,
              records: result.records,
            };
            if (real) {
              // The live service also itemizes the cost per credit type.
              if (result.autoTrace) {
                response.property_cost = result.delivered;
                response.people_cost = result.delivered;
              } else response[`${CREDIT_TYPE_OF[type]}_cost`] = result.delivered;
            }
            if (result.download) response.download_id = result.download.publicId;
            return response;
          },
        );
      }

      const v4Downloads = () => ctx.state.downloads.filter((d) => d.api === 'v4');
      const findV4 = (id: string): Download => {
        const d = v4Downloads().find((x) => x.publicId === id || String(x.seq) === id);
        if (!d) throw new HttpProblem(404, `download '${id}' not found`);
        return d;
      };
      const downloadBody = (request: FastifyRequest, d: Download) => {
        const now = ctx.clock.now();
        const status = ctx.state.status(d, now);
        const urls = resultFiles(ctx, d, originOf(request)).map((f) => f.url);
        return {
          id: real ? d.seq : d.publicId,
          status: real
            ? (({ queued: 'started', in_progress: 'running' } as Record<string, string>)[status] ??
              status)
            : status,
          num_records: ctx.state.progress(d, now),
          results: real ? urls : urls.map((url) => ({ url })),
          created_at: isoDate(d.createdAt),
        };
      };
      v4.get('/downloads', async (request) => v4Downloads().map((d) => downloadBody(request, d)));
      v4.get<{ Params: { id: string } }>('/downloads/:id', async (request) =>
        downloadBody(request, findV4(request.params.id)),
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

      const realTimeBody = {
        type: 'object',
        required: ['query', 'num_records'],
        additionalProperties: false,
        properties: {
          query: text(10_000),
          num_records: { type: 'integer', minimum: 1, maximum: 100_000 },
          data_type: { type: 'string', enum: [...DATA_TYPES] },
        },
      } as const;
      v4.post<{ Body: { query: string; num_records: number; data_type?: DataType } }>(
        '/targeted-updates',
        { schema: { body: realTimeBody } },
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
          schema: {
            body: {
              ...realTimeBody,
              properties: {
                ...realTimeBody.properties,
                num_records: { type: 'integer', minimum: 1, maximum: SCRAPE_MAX },
              },
            },
          },
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
            requirePeopleData: false,
          });
          const now = ctx.clock.now();
          const found = ctx.engine.match(
            type,
            request.body.query,
            { autoTrace: false, addressMatching: 'on', requirePeopleData: false },
            now,
          );
          // The same moment as the search above but for a clock tick: count what this one found.
          const count = Math.min(request.body.num_records, matches.numFound, found.count);
          ctx.state.requireCredits(type, false, count);
          const records = Array.from({ length: count }, (_, p) =>
            ctx.engine.record(type, found.at(p), false, now),
          );
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
