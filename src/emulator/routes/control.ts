import type { FastifyInstance } from 'fastify';
import { CREDIT_TYPES, DATA_TYPES, type DataType } from '../../catalog.js';
import { ExtraFields } from '../extra-fields.js';
import { parseFaultRule } from '../faults.js';
import { ACCOUNT_PLANS, type AccountPlan, type DEFAULT_OPTIONS } from '../options.js';
import type { EmulatorContext } from '../service.js';
import { accountBody, HttpProblem } from '../state.js';
import { isoDate } from '../wire.js';
import { registerRecordControl } from './records.js';

const byType = <T>(value: (type: DataType) => T) =>
  Object.fromEntries(DATA_TYPES.map((type) => [type, value(type)])) as Record<DataType, T>;

/**
 * The control API for tests and demos, under /_emulator/: no auth, JSON in and out. It changes
 * the emulator's world (credits and the account's plan, time, records, faults) and shows what
 * happened (requests, outbox).
 */
export function registerControl(app: FastifyInstance, ctx: EmulatorContext): void {
  app.register(
    async (control) => {
      control.post('/reset', async () => {
        ctx.state.reset();
        ctx.clock.reset();
        // The world starts again with the clock: no record updated or added yet.
        ctx.engine.world.reset(ctx.clock.startedAt);
        ctx.engine.world.setExtras(ExtraFields.parse(ctx.options.extraFields));
        ctx.engine.clear();
        ctx.faults.configure(ctx.options.faults, []);
        await ctx.spool.clear();
        return { message: 'emulator reset' };
      });

      control.get('/info', async () => {
        const now = ctx.clock.now();
        const world = ctx.engine.world;
        const stats = byType((type) => world.stats(type, now));
        return {
          seed: ctx.options.seed,
          scale: ctx.options.scale,
          wire: ctx.options.wire,
          page_size: ctx.options.pageSize,
          counts: byType((type) => world.indices(type, now).count),
          now: new Date(now).toISOString(),
          file_records: ctx.options.fileRecords,
          rate: ctx.options.rate,
          queue_ms: ctx.options.queueMs,
          extra_fields: extraFields(),
          churn: {
            per_day: world.churn,
            since: isoDate(world.origin),
            updated: byType((type) => stats[type].updated),
            added: byType((type) => stats[type].added),
          },
        };
      });

      const creditFields = CREDIT_TYPES.flatMap((t) => [
        `${t}_credits_allotted`,
        `${t}_credits_used`,
      ]);
      control.put<{ Body: Record<string, number> }>(
        '/credits',
        {
          schema: {
            body: {
              type: 'object',
              additionalProperties: false,
              properties: Object.fromEntries(
                creditFields.map((f) => [
                  f,
                  { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
                ]),
              ),
            },
          },
        },
        async (request) => {
          for (const [field, value] of Object.entries(request.body)) {
            const [type, , kind] = field.split('_') as [
              keyof typeof DEFAULT_OPTIONS.credits,
              string,
              string,
            ];
            if (kind === 'allotted') ctx.state.account.allotted[type] = value;
            else ctx.state.account.used[type] = value;
          }
          return accountBody(ctx.state.account);
        },
      );

      // The account's plan: per-type allotments, or a legacy plan with one total for every
      // data type. Switching keeps the other plan's figures, so switching back finds them.
      const planInfo = () => ({
        plan: ctx.state.account.plan,
        total_credits: ctx.state.account.total.allotted,
        num_credits_used: ctx.state.account.total.used,
      });
      control.get('/plan', async () => planInfo());
      control.put<{
        Body: { plan?: AccountPlan; total_credits?: number; num_credits_used?: number };
      }>(
        '/plan',
        {
          schema: {
            body: {
              type: 'object',
              additionalProperties: false,
              properties: {
                plan: { type: 'string', enum: [...ACCOUNT_PLANS] },
                total_credits: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
                num_credits_used: {
                  type: 'integer',
                  minimum: 0,
                  maximum: Number.MAX_SAFE_INTEGER,
                },
              },
            },
          },
        },
        async (request) => {
          const { plan, total_credits, num_credits_used } = request.body;
          const account = ctx.state.account;
          if (plan !== undefined) account.plan = plan;
          if (total_credits !== undefined) account.total.allotted = total_credits;
          if (num_credits_used !== undefined) account.total.used = num_credits_used;
          return planInfo();
        },
      );

      // Fields served beyond the core ones: a search sees a change at once, a download started
      // before it keeps the fields it started with.
      const extraFields = () => ctx.engine.world.extras.list.map((field) => field.spec);
      control.get('/fields', async () => ({ fields: extraFields() }));
      control.put<{ Body: { fields: string[] } }>(
        '/fields',
        {
          schema: {
            body: {
              type: 'object',
              required: ['fields'],
              additionalProperties: false,
              properties: {
                fields: {
                  type: 'array',
                  maxItems: 200,
                  items: { type: 'string', maxLength: 1000 },
                },
              },
            },
          },
        },
        async (request) => {
          let extras: ExtraFields;
          try {
            extras = ExtraFields.parse(request.body.fields);
          } catch (error) {
            throw new HttpProblem(400, (error as Error).message, [
              { field: 'fields', message: (error as Error).message },
            ]);
          }
          ctx.engine.world.setExtras(extras);
          ctx.engine.clear();
          return { fields: extraFields() };
        },
      );

      control.post('/expire-files', async () => {
        ctx.state.fileUrlGeneration += 1;
        return { message: 'every file URL issued so far has expired' };
      });

      control.post<{ Body: { advance_ms: number } }>(
        '/clock',
        {
          schema: {
            body: {
              type: 'object',
              required: ['advance_ms'],
              additionalProperties: false,
              properties: {
                advance_ms: { type: 'integer', minimum: 0, maximum: 10 * 365 * 86_400_000 },
              },
            },
          },
        },
        async (request) => {
          ctx.clock.advance(request.body.advance_ms);
          ctx.state.settle();
          return { now: new Date(ctx.clock.now()).toISOString() };
        },
      );

      registerRecordControl(control, ctx);

      control.get('/outbox', async () => ctx.state.outbox);
      control.get('/requests', async () => ctx.state.requests);
      control.delete('/requests', async () => {
        ctx.state.requests.length = 0;
        return { message: 'request log cleared' };
      });

      control.get('/faults', async () => ctx.faults.describe());
      control.post<{ Body: { spec?: string; rules?: unknown[] } }>(
        '/faults',
        {
          schema: {
            body: {
              type: 'object',
              additionalProperties: false,
              properties: {
                spec: { type: 'string', maxLength: 1000 },
                rules: { type: 'array', maxItems: 100 },
              },
            },
          },
        },
        async (request) => {
          try {
            const rules = request.body.rules?.map(parseFaultRule);
            ctx.faults.configure(request.body.spec, rules);
          } catch (error) {
            throw new HttpProblem(400, (error as Error).message);
          }
          return ctx.faults.describe();
        },
      );
      control.delete('/faults', async () => {
        ctx.faults.clear();
        return ctx.faults.describe();
      });
    },
    { prefix: '/_emulator' },
  );
}
