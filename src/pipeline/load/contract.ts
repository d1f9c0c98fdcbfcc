import { SluiceError } from '../../errors.js';
import type { Destination, TableContract } from '../../load/destination.js';
import type { Logger } from '../../log.js';
import type { JobTables } from '../../records/tables.js';
import { ColumnNames } from '../../schema/naming.js';
import { widen } from '../../schema/types.js';
import type { JobSpec } from '../spec/spec.js';

/**
 * Schema contracts (`schema:` of a pipeline file) as the run keeps them: a job whose declared
 * columns would change a frozen table fails before anything is bought; data that brings fields
 * or values the contract does not allow fails the file (`freeze`) or loses those fields'
 * values, said in the log (`discard`), in the loader (load/core/schema-contract.ts).
 */

/** A job's load (write-file.ts JobLoad): what its contract reads, and says where. */
interface ContractLoad {
  job: JobSpec;
  log: Logger;
}

const contracts = new WeakMap<ContractLoad, TableContract | undefined>();

/** The contract of a job's tables, or undefined when it allows anything (the default). */
export function contractOf(load: ContractLoad): TableContract | undefined {
  if (contracts.has(load)) return contracts.get(load);
  const { newColumns, typeChanges } = load.job.schema;
  let contract: TableContract | undefined;
  if (newColumns !== 'evolve' || typeChanges !== 'widen') {
    const said = new Set<string>();
    contract = {
      newColumns,
      typeChanges,
      onDiscard: (table, fields) => {
        const fresh = fields.filter((f) => !said.has(`${table}\u0000${f}`));
        if (fresh.length === 0) return;
        for (const f of fresh) said.add(`${table}\u0000${f}`);
        load.log.warn(
          `${table}: left out the values of ${fresh.join(', ')}, which the table has no column for (schema: new_columns: discard)`,
        );
      },
    };
  }
  contracts.set(load, contract);
  return contract;
}

/** What a job's declared columns would change in its existing tables, against its contract. */
export interface ContractBreach {
  table: string;
  /** Fields the table has no column for. */
  added: string[];
  /** Columns whose type would widen: `name (from -> to)`. */
  widened: string[];
}

/**
 * The breaches of a job's contract the view and the catalogue tell before any record is seen:
 * the columns its tables are made with up front, against the tables as they are. Empty when the
 * contract allows them, or the tables do not exist yet.
 */
export async function contractBreaches(
  destination: Destination,
  job: JobSpec,
  tables: JobTables,
): Promise<ContractBreach[]> {
  const { newColumns, typeChanges } = job.schema;
  if (newColumns !== 'freeze' && typeChanges !== 'freeze') return [];
  const out: ContractBreach[] = [];
  for (const def of tables.definitions()) {
    const existing = await destination.describeTable(def.name);
    if (existing === undefined) continue;
    const names = new ColumnNames(
      destination.naming,
      existing.map((c) => c.name),
    );
    const types = new Map(existing.map((c) => [c.name, c.type]));
    // Named as the destination names it (naming: snake_case spells austinHomes austin_homes).
    const breach: ContractBreach = {
      table: destination.naming.table(def.name),
      added: [],
      widened: [],
    };
    for (const column of def.columns) {
      const from = types.get(names.physical(column.name));
      if (from === undefined) {
        if (newColumns === 'freeze') breach.added.push(column.name);
      } else if (typeChanges === 'freeze' && widen(from, column.type) !== from) {
        breach.widened.push(`${column.name} (${from} -> ${widen(from, column.type)})`);
      }
    }
    if (breach.added.length > 0 || breach.widened.length > 0) out.push(breach);
  }
  return out;
}

/** The job's contract breaches as the error that fails it, before anything is bought. */
export function breachError(job: JobSpec, breaches: ContractBreach[]): SluiceError {
  const parts = breaches.map((b) =>
    [
      b.added.length > 0 ? `${b.table} has no column for ${b.added.join(', ')}` : '',
      b.widened.length > 0 ? `${b.table} would widen ${b.widened.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join('; '),
  );
  return new SluiceError(
    `job '${job.name}' would change tables its schema contract freezes (schema: new_columns: ${job.schema.newColumns}, type_changes: ${job.schema.typeChanges}): ${parts.join('; ')}; nothing more was bought. Relax the contract, or change the view`,
    { code: 'SLUICE_SCHEMA_CONTRACT' },
  );
}
