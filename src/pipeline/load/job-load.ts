import type { TableContract, WriteTarget } from '../../load/destination.js';
import type { JobTables, RelatedTable } from '../../records/tables.js';
import type { JobRun } from '../job-run.js';
import { contractOf } from './contract.js';

/** A job whose records land in tables: the JobRun every stage takes, with its tables. */
export interface JobLoad extends JobRun {
  /** Its tables, from its shape plan: what writing each of its files needs. */
  readonly tables: JobTables;
}

/** Where rows of `table` go for this job. */
export function targetOf(load: JobLoad, table: string, related?: RelatedTable): WriteTarget {
  const { job, tables, ctx } = load;
  const mode: 'append' | 'merge' = related
    ? related.key.length > 0
      ? 'merge'
      : 'append'
    : tables.merging
      ? 'merge'
      : 'append';
  return {
    table,
    mode,
    key: related ? related.key : job.key,
    hints: tables.hintsOf(table),
    ...(tables.staged(table) ? { stagedBy: ctx.spec.name } : {}),
    ...(related?.replaceBy ? { parentColumn: related.replaceBy.column } : {}),
    ...(related && tables.indexesParentAtEnd(related) ? { parentIndexAtEnd: true } : {}),
    ...withContract(load),
  };
}

function withContract(load: JobLoad): { contract?: TableContract } {
  const contract = contractOf(load);
  return contract === undefined ? {} : { contract };
}
