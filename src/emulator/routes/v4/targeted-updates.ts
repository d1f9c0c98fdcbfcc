import type { FastifyInstance } from 'fastify';
import type { DataType } from '../../../catalog.js';
import { createTargetedUpdate, type EmulatorContext, targetedUpdateBody } from '../../service.js';
import { realTimeBody } from './body-schemas.js';

/** Targeted updates (`/targeted-updates`): started, and listed with their progress. */
export function registerTargetedUpdates(v4: FastifyInstance, ctx: EmulatorContext): void {
  v4.post<{ Body: { query: string; num_records: number; data_type?: DataType } }>(
    '/targeted-updates',
    { schema: { body: realTimeBody(ctx.forms, 100_000) } },
    async (request, reply) => {
      reply.code(201);
      return targetedUpdateBody(ctx, createTargetedUpdate(ctx, request.body));
    },
  );
  v4.get('/targeted-updates', async () => ctx.state.updates.map((u) => targetedUpdateBody(ctx, u)));
}
