import { existsSync, statSync } from 'node:fs';
import type { Argv } from 'yargs';
import { type DataType, FIELDS, type FieldDef, type FieldMap } from '../../catalog.js';
import { destinationEntryOf } from '../../load/index.js';
import { jobColumns, selectJobs } from '../../pipeline/index.js';
import { type ColumnType, declaredColumnType } from '../../schema/types.js';
import type { CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { dataTypeArg } from '../format.js';
import { formatTable, type Io, writeJson, writeLine } from '../output.js';
import { withPipeline } from './pipeline-args.js';

export interface FieldDocument {
  /** Dotted path, as queries and views name it (`prices.amountMin`). */
  path: string;
  /** string, number, integer, boolean, date; list (of `of`); objects (nested fields follow). */
  kind: string;
  of?: string;
  /** How sluice stores it: a column, a JSON column, or a child table (`nested: tables`). */
  stored: 'column' | 'json column' | 'child table';
  /** The column type it gets unless a job pins another (`columns:`); none for a child table. */
  type?: ColumnType;
}

/** The fields of a data type, from the catalogue, parents before their nested fields. */
export function fieldDocuments(type: DataType): FieldDocument[] {
  const out: FieldDocument[] = [];
  const walk = (fields: FieldMap, prefix: string) => {
    for (const [name, def] of Object.entries(fields) as [string, FieldDef][]) {
      const path = prefix + name;
      const type = declaredColumnType(def);
      if (def.kind === 'list') {
        out.push({ path, kind: 'list', of: def.of, stored: 'json column', type });
      } else if (def.kind === 'objects') {
        out.push({ path, kind: 'objects', stored: 'child table' });
        walk(def.fields, `${path}.`);
      } else out.push({ path, kind: def.kind, stored: 'column', type });
    }
  };
  walk(FIELDS[type], '');
  return out;
}

/**
 * `sluice fields PIPELINE [--job NAME]`: the tables each job makes and their columns, with the
 * types they get (the catalogue's, or pinned by `columns:`), named as `naming:` says.
 */
async function pipelineFieldsCommand(
  args: { type: string; json?: boolean; job?: string[] },
  ctx: CliContext,
): Promise<number> {
  return withPipeline(
    { file: args.type, ...(args.json ? { json: true } : {}) },
    ctx,
    { source: 'optional', views: 'offline', usesSource: false },
    async (spec) => {
      // Each column's type as the destination declares it (PostgreSQL: double precision).
      const url = ctx.env.SLUICE_DESTINATION || spec.destination.url;
      const entry = destinationEntryOf(url);
      const names = await entry?.typeNames?.();
      // A refresh step writes no table: its job's tables are its job's.
      const jobs = selectJobs(spec, args.job)
        .filter((job) => job.kind !== 'targeted_update')
        .map((job) => ({
          job: job.name,
          type: job.type,
          tables: jobColumns(spec, job).map((table) => ({
            ...table,
            columns: table.columns.map((c) => ({ ...c, declared: names?.[c.type] ?? c.type })),
          })),
        }));
      const { stdout } = ctx.io;
      if (args.json) {
        const destination = entry?.name ?? null;
        writeJson(stdout, { pipeline: spec.name, naming: spec.naming, destination, jobs });
        return EXIT.ok;
      }
      if (entry !== undefined)
        writeLine(stdout, `Column types as ${entry.displayName} declares them.`);
      for (const job of jobs) {
        for (const table of job.tables) {
          writeLine(stdout, `${job.job} (${job.type}): table ${table.name}`);
          writeLine(
            stdout,
            formatTable(
              ['column', 'type', 'field'],
              table.columns.map((c) => [
                c.name,
                `${c.declared}${c.pinned ? ' (pinned)' : ''}`,
                c.field === c.name ? '' : c.field,
              ]),
            ),
          );
        }
      }
      return EXIT.ok;
    },
  );
}

/** Whether the argument of `fields` names a pipeline file rather than a data type. */
export function isPipelineFile(arg: string): boolean {
  return /\.ya?ml$/i.test(arg) || (existsSync(arg) && statSync(arg).isFile());
}

/** `sluice fields <type>`: what a view, a query or a table of that type can hold. */
export function fieldsCommand(args: { type: string; json?: boolean }, io: Io): number {
  const type = dataTypeArg(args.type);
  const fields = fieldDocuments(type);
  if (args.json) {
    writeJson(io.stdout, { type, fields });
    return EXIT.ok;
  }
  writeLine(io.stdout, `Fields of ${type} (${fields.length}), as views and queries name them:`);
  writeLine(
    io.stdout,
    formatTable(
      ['field', 'kind', 'stored as'],
      fields.map((f) => [
        `${'  '.repeat(f.path.split('.').length - 1)}${f.path}`,
        f.of ? `list of ${f.of}` : f.kind === 'objects' ? 'list of objects' : f.kind,
        f.stored === 'child table'
          ? 'child table (nested: tables), JSON (nested: json)'
          : f.stored === 'column'
            ? `column (${f.type})`
            : f.stored,
      ]),
    ),
  );
  return EXIT.ok;
}

export function registerFields(y: Argv, ctx: CliContext): Argv {
  return y.command(
    'fields <type>',
    "List a data type's fields with their kinds and column types, or a pipeline's tables and columns (no request)",
    (c) =>
      c
        .positional('type', {
          type: 'string',
          demandOption: true,
          describe: 'properties, businesses, products or people; or a pipeline file',
        })
        .option('job', {
          type: 'string',
          array: true,
          describe: 'With a pipeline file: only these jobs (names or globs)',
        })
        .option('json', { type: 'boolean', default: false, describe: 'Print one JSON document' })
        .example('$0 fields properties', 'every property field')
        .example('$0 fields people --json', 'as JSON')
        .example('$0 fields pipelines/homes.yaml', "each job's tables and column types"),
    async (args) => {
      const given = args as { type: string; json?: boolean; job?: string[] };
      ctx.exitCode = isPipelineFile(given.type)
        ? await pipelineFieldsCommand(given, ctx)
        : fieldsCommand(given, ctx.io);
    },
  );
}
