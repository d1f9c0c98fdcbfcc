import type { FastifyInstance } from 'fastify';
import type { DataType } from '../../../catalog.js';
import { countOnly, type EmulatorContext, SCRAPE_MAX, search } from '../../service.js';
import { isoDate } from '../../wire.js';
import { realTimeBody } from './body-schemas.js';

interface ScrapeBody {
  query: string;
  num_records: number;
  data_type?: DataType;
}

/** `POST /scrape`: records fetched from their sources now, charged as they are delivered. */
export function registerScrape(v4: FastifyInstance, ctx: EmulatorContext): void {
  v4.post<{ Body: ScrapeBody }>(
    '/scrape',
    { schema: { body: realTimeBody(ctx.forms, SCRAPE_MAX) } },
    async (request) => scrape(ctx, request.body),
  );
}

function scrape(ctx: EmulatorContext, body: ScrapeBody) {
  const type = body.data_type ?? 'properties';
  const matches = search(ctx, countOnly(type, body.query));
  const now = ctx.clock.now();
  const found = ctx.engine.match(
    type,
    body.query,
    { autoTrace: false, addressMatching: 'on', onlyTraceable: false },
    now,
  );
  // The same moment as the search above but for a clock tick: count what this one found.
  const count = Math.min(body.num_records, matches.numFound, found.count);
  ctx.state.requireCredits(type, false, count);
  const indices = Array.from({ length: count }, (_, p) => found.at(p));
  // Scraped now from their sources: the records are as fresh as this moment, and the
  // service holds them so from now on (a later search or download finds them updated).
  if (count > 0) ctx.engine.world.update(type, indices, now);
  const records = indices.map((index) => ctx.engine.record(type, index, false, now));
  ctx.state.charge(type, false, count);
  return {
    id: `sc_${ctx.state.nextSeq()}`,
    query: body.query,
    data_type: type,
    num_records: count,
    status: 'completed',
    total_cost: count,
    scraped_at: isoDate(now),
    records,
  };
}
