import type { FastifyInstance } from 'fastify';
import { DATA_TYPES, type DataType, FIELDS, type FieldDef } from '../../catalog.js';
import type { EmulatorContext } from '../service.js';
import { HttpProblem } from '../state.js';
import { isoMs } from '../world/churn.js';

const MAX_IDS = 1000;
const MAX_ADD = 10_000;
/** Fields the emulator keeps for itself: a record's identity and its dates. */
const OWN_FIELDS = new Set(['id', 'dateAdded', 'dateUpdated']);
const ISO_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/**
 * `POST /_emulator/records/update` and `/records/add`: changes to the data made now, as churn
 * would make them, for tests that need a change at a known moment.
 */
export function registerRecordControl(control: FastifyInstance, ctx: EmulatorContext): void {
  const type = { type: 'string', enum: [...DATA_TYPES] } as const;

  control.post<{ Body: { type: DataType; ids: string[] } }>(
    '/records/update',
    {
      schema: {
        body: {
          type: 'object',
          required: ['type', 'ids'],
          additionalProperties: false,
          properties: {
            type,
            ids: {
              type: 'array',
              minItems: 1,
              maxItems: MAX_IDS,
              items: { type: 'string', maxLength: 100 },
            },
          },
        },
      },
    },
    async (request) => {
      const { type, ids } = request.body;
      const now = ctx.clock.now();
      const world = ctx.engine.world;
      const found = world.find(type, ids, now);
      const missing = ids.filter((id) => !found.has(id));
      if (missing.length > 0) {
        throw new HttpProblem(
          404,
          `no ${type} record with id ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', ...' : ''}`,
          missing
            .slice(0, 20)
            .map((id) => ({ field: 'ids', message: `no ${type} record with id ${id}` })),
        );
      }
      world.update(type, [...new Set(found.values())], now);
      return { type, ids: [...found.keys()], date_updated: isoMs(now) };
    },
  );

  control.post<{ Body: { type: DataType; count?: number; fields?: Record<string, unknown> } }>(
    '/records/add',
    {
      schema: {
        body: {
          type: 'object',
          required: ['type'],
          additionalProperties: false,
          properties: {
            type,
            count: { type: 'integer', minimum: 1, maximum: MAX_ADD },
            fields: { type: 'object' },
          },
        },
      },
    },
    async (request) => {
      const { type, count = 1, fields = {} } = request.body;
      const problems = fieldProblems(type, fields);
      if (problems.length > 0) {
        throw new HttpProblem(
          400,
          `Invalid request: ${problems.map((p) => `${p.field} ${p.message}`).join('; ')}`,
          problems,
        );
      }
      const now = ctx.clock.now();
      const world = ctx.engine.world;
      const indices = world.add(type, count, fields, now);
      return {
        type,
        ids: indices.map((index) => world.dataset.id(type, index)),
        date_added: isoMs(now),
      };
    },
  );
}

/** What is wrong with fields to set on a new record: unknown names, or values of another kind. */
function fieldProblems(
  type: DataType,
  fields: Record<string, unknown>,
): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  for (const [name, value] of Object.entries(fields)) {
    const def = Object.hasOwn(FIELDS[type], name) ? FIELDS[type][name] : undefined;
    if (!def || OWN_FIELDS.has(name)) {
      problems.push({ field: `fields.${name}`, message: `cannot be set on ${type} records` });
    } else if (!fits(def, value)) {
      problems.push({ field: `fields.${name}`, message: `must be ${describe(def)}` });
    }
  }
  return problems;
}

function fits(def: FieldDef, value: unknown): boolean {
  switch (def.kind) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'date':
      return typeof value === 'string' && ISO_SECONDS.test(value);
    case 'list':
      return Array.isArray(value) && value.every((item) => fits({ kind: def.of }, item));
    case 'objects':
      return (
        Array.isArray(value) &&
        value.every(
          (item) =>
            typeof item === 'object' &&
            item !== null &&
            !Array.isArray(item) &&
            Object.entries(item).every(
              ([key, sub]) => Object.hasOwn(def.fields, key) && fits(def.fields[key]!, sub),
            ),
        )
      );
  }
}

function describe(def: FieldDef): string {
  if (def.kind === 'list') return `a list of ${describe({ kind: def.of })}s`;
  if (def.kind === 'objects') return `a list of objects with ${Object.keys(def.fields).join(', ')}`;
  if (def.kind === 'date') return 'a date like 2026-01-31T12:00:00Z';
  return `a ${def.kind}`;
}
