import { JobTables } from '../../records/tables.js';
import { Naming } from '../../schema/naming.js';
import type { ColumnType } from '../../schema/types.js';
import { shapePlanOf } from '../context.js';
import type { JobSpec, PipelineSpec } from '../spec/spec.js';

/** A column a job's table is made with before any record, as `fields` and `plan` show it. */
export interface PlannedColumn {
  /** As the table names it (`naming:` applied; a destination may shorten a very long one). */
  name: string;
  /** The field it holds, as the service names it. */
  field: string;
  type: ColumnType;
  /** Its type is pinned by the job's `columns:`. */
  pinned?: true;
}

export interface PlannedTable {
  name: string;
  columns: PlannedColumn[];
}

/**
 * The tables a job makes up front and their columns with the types they get (the catalogue's,
 * or the job's pinned ones); fields the catalogue does not list come as the data has them.
 */
export function jobColumns(spec: PipelineSpec, job: JobSpec): PlannedTable[] {
  const naming = new Naming(Number.POSITIVE_INFINITY, spec.naming);
  const tables = plannedTables(spec, job);
  return tables.definitions().map((def) => ({
    name: naming.table(def.name),
    columns: def.columns.map((c) => ({
      name: naming.column(c.name),
      field: c.name,
      type: c.type,
      ...(def.name === job.table && Object.hasOwn(job.columns, c.name)
        ? { pinned: true as const }
        : {}),
    })),
  }));
}

/**
 * A job's tables as a run makes them before any record: an owner lookup's with no owners yet
 * (a run knows them only once it reads the properties job's table).
 */
export function plannedTables(spec: PipelineSpec, job: JobSpec): JobTables {
  const plan = shapePlanOf(job, spec);
  const from = spec.jobs.find((j) => j.name === job.people_keys_from);
  if (from === undefined) return new JobTables(plan);
  return new JobTables({
    ...plan,
    ownerLookup: { propertiesTable: from.table, propertyKey: from.key[0]!, owners: [] },
  });
}
