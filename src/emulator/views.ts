import type { DataType } from '../catalog.js';
import type { ExtraFields } from './world/extra-fields.js';

export interface View {
  name: string;
  fields: string[];
  created_at: string;
}

/**
 * The entries of a view's field list that no data type has, extra fields served included
 * (`people.people_keys:*` is allowed).
 */
export function unknownViewFields(fields: readonly string[], extras: ExtraFields): string[] {
  return fields.filter((field) => !extras.knows(stripWildcard(field)));
}

function stripWildcard(field: string): string {
  return field.endsWith(':*') ? field.slice(0, -2) : field;
}

/** True when a view used with autotrace carries the people keys, as the service requires. */
export function viewHasPeopleKeys(fields: readonly string[]): boolean {
  return fields.some((f) => ['people', 'people.people_keys'].includes(stripWildcard(f)));
}

export interface Projection {
  /** Top-level columns in output order (the CSV header). */
  columns: string[];
  project(record: Record<string, unknown>): Record<string, unknown>;
}

/**
 * What a view does to a record: keeps the named fields, in the view's order. An entry such as
 * `prices.amountMin` keeps only that sub-field of each item of an array of objects. Without a
 * view a record is whole, and a CSV file has a column for each core field and extra one.
 */
export function projection(
  type: DataType,
  fields: readonly string[] | undefined,
  extras: ExtraFields,
): Projection {
  if (!fields) {
    return { columns: extras.columns(type), project: (record) => record };
  }
  const plan = new Map<string, Set<string> | null>();
  for (const entry of fields) {
    const path = stripWildcard(entry);
    const dot = path.indexOf('.');
    const top = dot < 0 ? path : path.slice(0, dot);
    if (extras.resolve(type, top) === undefined) continue;
    if (dot < 0) {
      plan.set(top, null);
    } else if (plan.get(top) !== null) {
      const subs = plan.get(top) ?? new Set<string>();
      subs.add(path.slice(dot + 1).split('.')[0]!);
      plan.set(top, subs);
    }
  }
  const columns = [...plan.keys()];
  return {
    columns,
    project(record) {
      const out: Record<string, unknown> = {};
      for (const [top, subs] of plan) {
        const value = record[top];
        if (value === undefined) continue;
        if (subs === null || !Array.isArray(value)) {
          out[top] = value;
          continue;
        }
        out[top] = value.map((item: Record<string, unknown>) => {
          const picked: Record<string, unknown> = {};
          for (const sub of subs) if (item[sub] !== undefined) picked[sub] = item[sub];
          return picked;
        });
      }
      return out;
    },
  };
}
