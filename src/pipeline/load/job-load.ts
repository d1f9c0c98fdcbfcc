import type { TableContract, WriteTarget } from '../../load/destination.js';
import type { Logger } from '../../log.js';
import type { JobTables, RelatedTable } from '../../records/tables.js';
import type { RunContext } from '../context.js';
import type { JobOutcome } from '../outcome.js';
import type { JobSpec } from '../spec/spec.js';
import { contractOf } from './contract.js';

/** A job being loaded: what writing each of its files needs. */
export interface JobLoad {
  ctx: RunContext;
  job: JobSpec;
  tables: JobTables;
  outcome: JobOutcome;
  log: Logger;
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
