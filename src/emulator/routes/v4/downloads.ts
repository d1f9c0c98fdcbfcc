import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type EmulatorContext, resultFiles } from '../../service.js';
import { type Download, HttpProblem } from '../../state.js';
import { isoDate, originOf } from '../../wire.js';
import { paged } from '../paging.js';

/** v4 downloads (`/downloads`): listed, read and cancelled. */
export function registerDownloads(v4: FastifyInstance, ctx: EmulatorContext): void {
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
}

const STARTED_RUNNING: Record<string, string> = { queued: 'started', in_progress: 'running' };

/** A v4 download object in the wire form (wire.ts): `numDownloaded`, `urlStrings`, ids, states. */
export function downloadBody(ctx: EmulatorContext, request: FastifyRequest, d: Download) {
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
