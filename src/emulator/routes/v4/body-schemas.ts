import { DATA_TYPES } from '../../../catalog.js';
import type { WireForms } from '../../wire.js';

const INT_MAX = 2_147_483_647;
const numRecords = { type: 'integer', minimum: 0, maximum: INT_MAX } as const;
export const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
export const fieldList = { type: 'array', items: text(200), maxItems: 500 } as const;

/**
 * A body schema: the fields a route reads, with their checks. Under the contract the fields it
 * lists are all a body may hold; live, others are ignored, as the service ignores the fields
 * real clients add of their own (`view_name`, say).
 */
export function bodySchema(
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
export const searchBody = (forms: WireForms, withPropertyOptions: boolean) =>
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

/** The body of the real-time operations (targeted updates, scrape), up to `maxRecords`. */
export const realTimeBody = (forms: WireForms, maxRecords: number) =>
  bodySchema(forms, ['query', 'num_records'], {
    query: text(10_000),
    num_records: { type: 'integer', minimum: 1, maximum: maxRecords },
    data_type: { type: 'string', enum: [...DATA_TYPES] },
  });
