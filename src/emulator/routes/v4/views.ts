import type { FastifyInstance } from 'fastify';
import { premadeView } from '../../../catalog.js';
import { createView, type EmulatorContext, ownView, updateView } from '../../service.js';
import { HttpProblem } from '../../state.js';
import { isoDate } from '../../wire.js';
import { paged } from '../paging.js';
import { bodySchema, fieldList, text } from './body-schemas.js';

/** The account's views (`/views`): created, listed, read, changed and deleted. */
export function registerViews(v4: FastifyInstance, ctx: EmulatorContext): void {
  const { forms } = ctx;
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
    // A pre-made view was there before anyone asked: made, say, when the emulator's clock began.
    if (premade) {
      const created_at = isoDate(ctx.clock.startedAt);
      return { name: request.params.name, fields: premade.fields, created_at };
    }
    throw new HttpProblem(404, `view '${request.params.name}' not found`);
  });
  v4.put<{ Params: { name: string }; Body: { name?: string; fields?: string[] } }>(
    '/views/:name',
    { schema: { body: bodySchema(forms, [], { name: text(200), fields: fieldList }) } },
    async (request) => updateView(ctx, request.params.name, request.body),
  );
  v4.delete<{ Params: { name: string } }>('/views/:name', async (request) => {
    const view = ownView(ctx, request.params.name);
    ctx.state.views.delete(view.name);
    return { message: `view '${view.name}' deleted` };
  });
}
