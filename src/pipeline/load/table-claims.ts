import { SluiceError } from '../../errors.js';
import type { TableOwnerChanges, TableOwnerRow } from '../../load/destination.js';
import { foldCase } from '../../schema/naming.js';
import { isoAt } from '../clock.js';
import type { RunContext } from '../context.js';
import type { JobSpec, PipelineSpec, TableClaim } from '../spec/spec-format.js';
import { type Clash, claimText, clashOf, ownerText, PEOPLE_TAKEN } from '../spec/table-names.js';

/**
 * The table-name rule in the destination: before a run's jobs buy anything, it records in
 * `_sluice_tables` which of its jobs own which tables, and is refused (SLUICE_TABLE_OWNED, exit
 * 2) where another pipeline, or another role, has them: so two pipelines sharing a database, run
 * on different days, cannot take each other's tables. What is shared by design goes on: jobs of
 * any pipeline filling one people table, a pipeline's own reruns (a job renamed keeps its table),
 * a replace's staging tables (`<table>__*`, its own). Tables made before owners were recorded
 * are claimed by the first run that writes them.
 */
export async function claimJobTables(ctx: RunContext, jobs: readonly JobSpec[]): Promise<void> {
  const { spec, destination } = ctx;
  // An owner lookup writes its links into the table of the job it follows.
  const names = new Set(
    jobs.flatMap((j) => (j.people_keys_from ? [j.name, j.people_keys_from] : [j.name])),
  );
  const at = isoAt(ctx.clock);
  const wanted = spec.tables
    .filter((c) => names.has(c.job))
    .map((claim) => ({
      claim,
      row: {
        table_name: destination.naming.spell(claim.table),
        role: claim.role,
        pipeline: spec.name,
        job: claim.job,
        claimed_at: at,
        run_id: ctx.runId,
      },
    }));
  await destination.claimTables((owners) =>
    settleClaims(owners, wanted, spec, destination.description),
  );
}

interface Wanted {
  claim: TableClaim;
  row: TableOwnerRow;
}

/** The rows a claim adds (and, for a table moved between jobs of a pipeline, drops), or why not. */
export function settleClaims(
  owners: readonly TableOwnerRow[],
  wanted: readonly Wanted[],
  spec: Pick<PipelineSpec, 'file' | 'name'>,
  where: string,
): TableOwnerChanges {
  const key = (r: TableOwnerRow) => `${r.table_name}\u0000${r.pipeline}\u0000${r.job}`;
  const add = new Map<string, TableOwnerRow>();
  const drop = new Map<string, TableOwnerRow>();
  const refusals: string[] = [];
  for (const { claim, row } of wanted) {
    const name = foldCase(row.table_name);
    for (const owner of owners) {
      if (key(owner) === key(row) && owner.role === row.role) continue;
      const other = foldCase(owner.table_name);
      const clash: Clash | 'around' | undefined =
        clashOf(name, other) ?? (clashOf(other, name) === undefined ? undefined : 'around');
      if (clash === undefined) continue;
      if (clash === 'same' && owner.role === 'people' && row.role === 'people') continue;
      if (clash === 'same' && owner.pipeline === row.pipeline && owner.role === row.role) {
        // The pipeline's own table, now written by a job of another name (a job renamed).
        drop.set(key(owner), owner);
        continue;
      }
      refusals.push(refusal(clash, claim, row, owner, spec, where));
    }
    if (!owners.some((o) => key(o) === key(row) && o.role === row.role)) add.set(key(row), row);
  }
  if (refusals.length > 0) {
    throw new SluiceError(refusals.join('\n'), { code: 'SLUICE_TABLE_OWNED' });
  }
  return { add: [...add.values()], drop: [...drop.values()] };
}

/** Why a table of this pipeline's is refused, and what to change. */
function refusal(
  clash: Clash | 'around',
  claim: TableClaim,
  row: TableOwnerRow,
  owner: TableOwnerRow,
  spec: Pick<PipelineSpec, 'file' | 'name'>,
  where: string,
): string {
  const place = `${spec.file}${claim.line === undefined ? '' : `:${claim.line}`}: ${claim.path.join('.')}`;
  const of = `job '${owner.job}' of pipeline '${owner.pipeline}'`;
  const is =
    clash === 'same'
      ? `is ${ownerText(owner, owner.pipeline)}`
      : clash === 'inside'
        ? `is inside the tables of ${of} ('${owner.table_name}__*': its child, link and staging tables)`
        : `would take in table '${owner.table_name}' of ${of} (its own '${row.table_name}__*' names are its child, link and staging tables)`;
  const recorded = `in ${where} (recorded in _sluice_tables by run ${owner.run_id} at ${owner.claimed_at})`;
  const people = clash === 'same' && (owner.role === 'people' || row.role === 'people');
  const field = row.role === 'people' ? 'people_table:' : 'table:';
  const gone = owner.pipeline === spec.name ? `job '${owner.job}'` : `pipeline '${owner.pipeline}'`;
  return `${place}: ${claimText({ ...claim, table: row.table_name })} ${is} ${recorded}${people ? `: ${PEOPLE_TAKEN}` : ''}. Nothing was bought: set ${field} of job '${row.job}' to another name; or, if ${gone} no longer loads it, drop its tables, then its row: DELETE FROM _sluice_tables WHERE table_name = '${owner.table_name}' AND pipeline = '${owner.pipeline}' AND job = '${owner.job}'`;
}
