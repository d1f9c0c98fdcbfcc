import type { FastifyInstance } from 'fastify';
import { CREDIT_TYPE_OF, DATA_TYPES, type DataType } from '../../../catalog.js';
import { type EmulatorContext, PREVIEW_MAX, type SearchResult, search } from '../../service.js';
import type { WireForms } from '../../wire.js';
import { searchBody } from './body-schemas.js';
import { downloadBody } from './downloads.js';

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

/**
 * `POST /{type}/search` for each data type: a preview, or the start of a download answered in
 * the wire form's shape (`v4Start`).
 */
export function registerSearches(v4: FastifyInstance, ctx: EmulatorContext): void {
  const { forms } = ctx;
  for (const type of DATA_TYPES) {
    v4.post<{ Body: SearchBody }>(
      `/${type}/search`,
      { schema: { body: searchBody(forms, type === 'properties') } },
      async (request, reply) => {
        const result = search(ctx, searchRequest(type, request.body));
        const cost = costOf(forms, type, result);
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
}

function searchRequest(type: DataType, body: SearchBody) {
  const download = body.download === true;
  return {
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
  } as const;
}

/** `total_cost`, itemized per credit type where the wire form does (`costPerType`). */
function costOf(forms: WireForms, type: DataType, result: SearchResult): Record<string, unknown> {
  const perType = result.autoTrace ? 2 : 1;
  const cost: Record<string, unknown> = { total_cost: result.delivered * perType };
  if (forms.costPerType) {
    if (result.autoTrace) {
      cost.property_cost = result.delivered;
      cost.people_cost = result.delivered;
    } else cost[`${CREDIT_TYPE_OF[type]}_cost`] = result.delivered;
  }
  return cost;
}
