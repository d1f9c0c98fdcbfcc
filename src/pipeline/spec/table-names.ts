import { resolve } from 'node:path';
import { PipelineSpecError } from '../../errors.js';
import { destinationEntryOf } from '../../load/index.js';
import { foldCase, type NamingStyle, snakeCase } from '../../schema/naming.js';
import type { PipelineSpec, TableClaim, TableRole } from './spec-format.js';

/**
 * The table-name rule: every table sluice makes has one owner and one role. A job owns its table
 * and every name `<table>__*` after it (child tables, the autotrace link table `__owners`, a
 * replace's staging tables, indexes); autotrace and owner lookups share a people table (and its
 * `<people>__*`), which no job may take as its own. So no job's table may be another's, a people
 * table, or inside another's `__` names: checked in a pipeline file, across the files of one
 * run, and (table-claims.ts) against what other pipelines recorded in the destination.
 */

/** How two claimed names meet: the same table, or the first inside the other's `__` names. */
export type Clash = 'same' | 'inside';

/**
 * Whether two names (as spelt, case folded) meet, and how: `same` when they are one table (which
 * people tables may share), `inside` when the first is one of the second's `<table>__*` names.
 */
export function clashOf(a: string, b: string): Clash | undefined {
  if (a === b) return 'same';
  if (a.startsWith(`${b}__`)) return 'inside';
  return undefined;
}

/** A claim with the file, the pipeline and the spelling it comes from. */
interface Placed extends TableClaim {
  file: string;
  pipeline: string;
  naming: NamingStyle;
  /** As the destination spells it (`naming:`), and as it compares it (case folded). */
  spelt: string;
  name: string;
}

function place(c: TableClaim, file: string, pipeline: string, naming: NamingStyle): Placed {
  const spelt = naming === 'snake_case' ? snakeCase(c.table) : c.table;
  return { ...c, file, pipeline, naming, spelt, name: foldCase(spelt) };
}

/** What a claim is, for messages: `the people table of job 'homes'`. */
export function ownerText(
  claim: { role: TableRole | string; job: string },
  pipeline?: string,
): string {
  const of = `job '${claim.job}'${pipeline === undefined ? '' : ` of pipeline '${pipeline}'`}`;
  return `${claim.role === 'people' ? 'the people table' : 'the table'} of ${of}`;
}

/** What a claim's name is, for messages: `table 'people' (the job's name, ...)`. */
export function claimText(claim: Pick<TableClaim, 'table' | 'role' | 'implied'>): string {
  if (claim.role === 'people') {
    return `people table '${claim.table}'${claim.implied ? " (autotrace's by default)" : ''}`;
  }
  return `table '${claim.table}'${claim.implied ? " (the job's name, its table by default)" : ''}`;
}

/** Why a job's rows may not go into a people table. */
export const PEOPLE_TAKEN =
  "a job's own rows there would take the place of the people records (paid people credits) that autotrace and owner lookups link to";

/** Why two names given differently are one table. */
function alikeText(a: Placed, b: Placed): string {
  if (a.table === b.table) return '';
  if (a.spelt === b.spelt) return ` (both are '${b.spelt}' under naming: snake_case)`;
  return ' (one table where names are compared case aside, as in SQLite and DuckDB)';
}

/**
 * Why claim `b` may not meet claim `a` (`clash`: b is a's table, or inside a's names), and what
 * to change. `other`: a's file and line, when it is another file's.
 */
function clashText(clash: Clash, b: Placed, a: Placed, other: string): string {
  const owner = `${ownerText(a, other === '' ? undefined : a.pipeline)}${other}`;
  if (clash === 'inside') {
    return `${claimText(b)} is inside the tables of ${owner.replace(/^the (people )?table of /, '')} ('${a.spelt}__*': its child, link and staging tables): give it another name`;
  }
  const people = a.role === 'people' || b.role === 'people';
  return `${claimText(b)} is also ${owner}${alikeText(a, b)}${people ? `: ${PEOPLE_TAKEN}` : ''}; give one of them another ${people ? 'name (table: or people_table:)' : 'table:'}`;
}

/**
 * The mistakes of claims meeting, each reported at the claim to change: the inner name, or of
 * one table the later claim. `other(a, b)`: how b's message names where a is.
 */
function clashes(
  placed: readonly Placed[],
  other: (a: Placed, b: Placed) => string,
): PipelineSpecError[] {
  const errors: PipelineSpecError[] = [];
  for (const [i, b] of placed.entries()) {
    for (const a of placed.slice(0, i)) {
      if (a.file === b.file && a.job === b.job && a.role === b.role) continue;
      const forward = clashOf(b.name, a.name);
      const backward = forward === undefined ? clashOf(a.name, b.name) : undefined;
      const clash = forward ?? backward;
      if (clash === undefined) continue;
      // A people table is shared by the jobs that fill it.
      if (clash === 'same' && a.role === 'people' && b.role === 'people') continue;
      const [inner, outer] = backward === undefined ? [b, a] : [a, b];
      errors.push(
        new PipelineSpecError(clashText(clash, inner, outer, other(outer, inner)), {
          file: inner.file,
          ...(inner.line === undefined ? {} : { line: inner.line }),
          path: inner.path.join('.'),
        }),
      );
    }
  }
  return errors;
}

/** The mistakes of one pipeline file's tables (see the rule above). */
export function tableNameProblems(
  claims: readonly TableClaim[],
  file: string,
  pipeline: string,
  naming: NamingStyle,
): PipelineSpecError[] {
  return clashes(
    claims.map((c) => place(c, file, pipeline, naming)),
    () => '',
  );
}

/**
 * The rule across the pipeline files of one command (`sluice run a.yaml b.yaml`), before any of
 * them buys anything: a file's tables may not meet those of another file that loads into the
 * same destination. Throws every such mistake, each naming both files, lines and fields.
 */
export function checkSharedTables(specs: readonly PipelineSpec[], env: NodeJS.ProcessEnv): void {
  const byDestination = new Map<string, Placed[]>();
  const files = new Set<string>();
  for (const spec of specs) {
    // The same file twice is one pipeline, not two.
    const file = resolve(spec.file);
    if (files.has(file)) continue;
    files.add(file);
    const destination = destinationIdentity(spec, env);
    const here = byDestination.get(destination) ?? [];
    here.push(...spec.tables.map((c) => place(c, spec.file, spec.name, spec.naming)));
    byDestination.set(destination, here);
  }
  const errors = [...byDestination.values()].flatMap((placed) =>
    clashes(placed, (a, b) =>
      a.file === b.file ? '' : ` (${a.file}${a.line === undefined ? '' : `:${a.line}`})`,
    ),
  );
  if (errors.length > 0) throw PipelineSpecError.all(errors);
}

/** One text per database a pipeline loads into: two files with the same text share tables. */
function destinationIdentity(spec: PipelineSpec, env: NodeJS.ProcessEnv): string {
  const url = env.SLUICE_DESTINATION || spec.destination.url;
  const entry = destinationEntryOf(url);
  const { settings } = spec.destination;
  return (
    entry?.identity?.(url, { baseDir: spec.baseDir, settings }) ??
    `${url}\u0000${JSON.stringify(settings)}`
  );
}
