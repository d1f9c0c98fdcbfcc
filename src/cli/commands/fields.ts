import type { Argv } from 'yargs';
import { type DataType, FIELDS, type FieldDef, type FieldMap } from '../../catalog.js';
import type { CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { dataTypeArg } from '../format.js';
import { formatTable, type Io, writeJson, writeLine } from '../output.js';

export interface FieldDocument {
  /** Dotted path, as queries and views name it (`prices.amountMin`). */
  path: string;
  /** string, number, integer, boolean, date; list (of `of`); objects (nested fields follow). */
  kind: string;
  of?: string;
  /** How sluice stores it: a column, a JSON column, or a child table (`nested: tables`). */
  stored: 'column' | 'json column' | 'child table';
}

/** The fields of a data type, from the catalogue, parents before their nested fields. */
export function fieldDocuments(type: DataType): FieldDocument[] {
  const out: FieldDocument[] = [];
  const walk = (fields: FieldMap, prefix: string) => {
    for (const [name, def] of Object.entries(fields) as [string, FieldDef][]) {
      const path = prefix + name;
      if (def.kind === 'list') out.push({ path, kind: 'list', of: def.of, stored: 'json column' });
      else if (def.kind === 'objects') {
        out.push({ path, kind: 'objects', stored: 'child table' });
        walk(def.fields, `${path}.`);
      } else out.push({ path, kind: def.kind, stored: 'column' });
    }
  };
  walk(FIELDS[type], '');
  return out;
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
        f.stored === 'child table' ? 'child table (nested: tables), JSON (nested: json)' : f.stored,
      ]),
    ),
  );
  return EXIT.ok;
}

export function registerFields(y: Argv, ctx: CliContext): Argv {
  return y.command(
    'fields <type>',
    "List a data type's fields with their kinds and nesting (from the catalogue; no request)",
    (c) =>
      c
        .positional('type', {
          type: 'string',
          demandOption: true,
          describe: 'properties, businesses, products or people',
        })
        .option('json', { type: 'boolean', default: false, describe: 'Print one JSON document' })
        .example('$0 fields properties', 'every property field')
        .example('$0 fields people --json', 'as JSON'),
    (args) => {
      ctx.exitCode = fieldsCommand(args as { type: string; json?: boolean }, ctx.io);
    },
  );
}
