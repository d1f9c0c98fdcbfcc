import type { FastifyInstance } from 'fastify';
import { CREDIT_TYPES, DATA_TYPES, type DataType } from '../../catalog.js';
import { parseFaultRule } from '../faults.js';
import { ACCOUNT_PLANS, type AccountPlan, type DEFAULT_OPTIONS } from '../options.js';
import type { EmulatorContext } from '../service.js';
import { accountBody, HttpProblem } from '../state.js';
import { isoDate } from '../wire.js';
import { ExtraFields } from '../world/extra-fields.js';
import { registerRecordControl } from './records.js';

const byType = <T>(value: (type: DataType) => T) =>
  Object.fromEntries(DATA_TYPES.map((type) => [type, value(type)])) as Record<DataType, T>;

/**
 * The control API for tests and demos, under /_emulator/: no auth, JSON in and out. It changes
 * the emulator's world (credits and the account's plan, time, records, faults) and shows what
 * happened (requests, outbox). One function a resource.
 */
export function registerControl(app: FastifyInstance, ctx: EmulatorContext): void {
  app.register(
    async (control) => {
      registerWorld(control, ctx);
      registerCredits(control, ctx);
      registerPlan(control, ctx);
      registerFields(control, ctx);
      registerClock(control, ctx);
      registerRecordControl(control, ctx);
      registerLogs(control, ctx);
      registerFaults(control, ctx);
    },
    { prefix: '/_emulator' },
  );
}

/** The fields served beyond the core ones, as their specs. */
const extraFields = (ctx: EmulatorContext) =>
  ctx.engine.world.extras.list.map((field) => field.spec);

/** `POST /reset` and `GET /info`: the world as it started, and what it is now. */
function registerWorld(control: FastifyInstance, ctx: EmulatorContext): void {
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
      extra_fields: extraFields(ctx),
      churn: {
        per_day: world.churn,
        since: isoDate(world.origin),
        updated: byType((type) => stats[type].updated),
        added: byType((type) => stats[type].added),
      },
    };
  });
}

const COUNT = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;

/** `PUT /credits`: the per-type allotments and what was used of them. */
function registerCredits(control: FastifyInstance, ctx: EmulatorContext): void {
  const creditFields = CREDIT_TYPES.flatMap((t) => [`${t}_credits_allotted`, `${t}_credits_used`]);
  control.put<{ Body: Record<string, number> }>(
    '/credits',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          properties: Object.fromEntries(creditFields.map((f) => [f, COUNT])),
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
}

/**
 * `GET` and `PUT /plan`: the account's plan, per-type allotments or a legacy plan with one total
 * for every data type. Switching keeps the other plan's figures, so switching back finds them.
 */
function registerPlan(control: FastifyInstance, ctx: EmulatorContext): void {
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
            total_credits: COUNT,
            num_credits_used: COUNT,
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
}

/**
 * `GET` and `PUT /fields`: fields served beyond the core ones. A search sees a change at once, a
 * download started before it keeps the fields it started with.
 */
function registerFields(control: FastifyInstance, ctx: EmulatorContext): void {
  control.get('/fields', async () => ({ fields: extraFields(ctx) }));
  control.put<{ Body: { fields: string[] } }>(
    '/fields',
    {
      schema: {
        body: {
          type: 'object',
          required: ['fields'],
          additionalProperties: false,
          properties: {
            fields: { type: 'array', maxItems: 200, items: { type: 'string', maxLength: 1000 } },
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
      return { fields: extraFields(ctx) };
    },
  );
}

/** `POST /clock` moves the emulator's time; `POST /expire-files` revokes every file URL. */
function registerClock(control: FastifyInstance, ctx: EmulatorContext): void {
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
}

/** What happened: the outbox and the request log. */
function registerLogs(control: FastifyInstance, ctx: EmulatorContext): void {
  control.get('/outbox', async () => ctx.state.outbox);
  control.get('/requests', async () => ctx.state.requests);
  control.delete('/requests', async () => {
    ctx.state.requests.length = 0;
    return { message: 'request log cleared' };
  });
}

/** `/faults`: the faults injected, set by a spec or a script of rules, and cleared. */
function registerFaults(control: FastifyInstance, ctx: EmulatorContext): void {
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
}
