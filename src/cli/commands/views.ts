import type { Argv } from 'yargs';
import {
  closest,
  DATA_TYPES,
  fieldPaths,
  resolveField,
  type UnknownField,
  unknownFieldsWarning,
} from '../../catalog.js';
import type { ServiceClient, ViewInfo } from '../../client/types.js';
import { UsageError } from '../../errors.js';
import { connectionOptions, type JsonArgs, withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import {
  type FieldCheck,
  fieldCheck,
  listArg,
  plural,
  STRICT_FIELDS_HINT,
  strictFieldsFlag,
} from '../format.js';
import { dateText, formatTable, type Io, writeJson, writeLine } from '../output.js';

export interface ViewDocument {
  name: string;
  fields: string[];
  created_at: string | null;
}

function viewDocument(view: ViewInfo): ViewDocument {
  return { name: view.name, fields: [...view.fields], created_at: view.createdAt ?? null };
}

/** `sluice views list`: the account's own views. */
export async function viewsListCommand(
  client: ServiceClient,
  args: JsonArgs,
  io: Io,
  signal?: AbortSignal,
): Promise<{ views: ViewDocument[] }> {
  const views = (await client.listViews({ signal })).map(viewDocument);
  const doc = { views };
  if (args.json) writeJson(io.stdout, doc);
  else if (views.length === 0)
    writeLine(io.stdout, 'No views yet: create one with sluice views create <name> --fields a,b,c');
  else {
    writeLine(
      io.stdout,
      formatTable(
        ['name', 'fields', 'created'],
        views.map((v) => [v.name, summarizeFields(v.fields), dateText(v.created_at)]),
      ),
    );
  }
  return doc;
}

/** `sluice views show <name>`: one view (own or pre-made) with every field. */
export async function viewsShowCommand(
  client: ServiceClient,
  args: JsonArgs & { name: string },
  io: Io,
  signal?: AbortSignal,
): Promise<ViewDocument> {
  const view = viewDocument(await client.getView(args.name, { signal }));
  if (args.json) writeJson(io.stdout, view);
  else printView(view, io);
  return view;
}

export interface ViewsCreateArgs extends JsonArgs {
  name: string;
  fields?: string[];
  'strict-fields'?: boolean;
}

export async function viewsCreateCommand(
  client: ServiceClient,
  args: ViewsCreateArgs,
  io: Io,
  signal: AbortSignal | undefined,
  check: FieldCheck,
): Promise<ViewDocument> {
  const fields = requireFields(args.fields, check);
  const view = viewDocument(await client.createView({ name: args.name, fields }, { signal }));
  if (args.json) writeJson(io.stdout, view);
  else
    writeLine(
      io.stdout,
      `Created view '${view.name}' with ${plural(view.fields.length, 'field')}: ${view.fields.join(', ')}`,
    );
  return view;
}

export interface ViewsUpdateArgs extends JsonArgs {
  name: string;
  rename?: string;
  fields?: string[];
  'strict-fields'?: boolean;
}

export async function viewsUpdateCommand(
  client: ServiceClient,
  args: ViewsUpdateArgs,
  io: Io,
  signal: AbortSignal | undefined,
  check: FieldCheck,
): Promise<ViewDocument> {
  const changes: { name?: string; fields?: string[] } = {};
  if (args.rename !== undefined) {
    if (args.rename.trim() === '') throw new UsageError('--rename needs a new name');
    changes.name = args.rename;
  }
  if (args.fields !== undefined) changes.fields = requireFields(args.fields, check);
  if (changes.name === undefined && changes.fields === undefined) {
    throw new UsageError('nothing to change: give --rename <new name> or --fields a,b,c');
  }
  const view = viewDocument(await client.updateView(args.name, changes, { signal }));
  if (args.json) writeJson(io.stdout, view);
  else {
    const said = [
      changes.name !== undefined && changes.name !== args.name ? `renamed to '${view.name}'` : '',
      changes.fields !== undefined ? `fields are now ${view.fields.join(', ')}` : '',
    ].filter(Boolean);
    writeLine(io.stdout, `Updated view '${args.name}': ${said.join('; ') || 'no change'}`);
  }
  return view;
}

export async function viewsDeleteCommand(
  client: ServiceClient,
  args: JsonArgs & { name: string },
  io: Io,
  signal?: AbortSignal,
): Promise<{ deleted: string }> {
  await client.deleteView(args.name, { signal });
  const doc = { deleted: args.name };
  if (args.json) writeJson(io.stdout, doc);
  else writeLine(io.stdout, `Deleted view '${args.name}'`);
  return doc;
}

/**
 * The view's fields, checked before the request. Views are not typed: a field of no data type
 * in the catalogue is a warning with the closest name (`sluice fields <type>` lists them), and
 * is sent as written, as the service may have it; `--strict-fields` refuses it.
 */
function requireFields(fields: readonly string[] | undefined, check: FieldCheck): string[] {
  if (fields === undefined) throw new UsageError('give the fields of the view: --fields a,b,c');
  const list = listArg(fields) ?? [];
  if (list.length === 0)
    throw new UsageError('--fields needs at least one field, e.g. --fields id,address,city');
  const unknown: UnknownField[] = [];
  for (const field of list) {
    const path = field.endsWith(':*') ? field.slice(0, -2) : field;
    if (DATA_TYPES.some((type) => resolveField(type, path) !== undefined)) continue;
    const guess = closest(path, [...new Set(DATA_TYPES.flatMap((type) => fieldPaths(type)))]);
    if (check.strict) {
      throw new UsageError(
        `unknown field in view: ${field}${guess ? `; did you mean '${guess}'?` : ''} (sluice fields <type> lists them)`,
        'SLUICE_VIEW_FIELD',
      );
    }
    unknown.push({ field, suggestion: guess });
  }
  if (unknown.length > 0) {
    check.warn(
      `--fields: ${unknownFieldsWarning(unknown, 'any data type', `sent as written, the service decides; ${STRICT_FIELDS_HINT}`)}`,
    );
  }
  return list;
}

function summarizeFields(fields: readonly string[]): string {
  const shown = fields.slice(0, 5).join(', ');
  return fields.length > 5 ? `${shown}, … (${fields.length})` : shown;
}

function printView(view: ViewDocument, io: Io): void {
  writeLine(io.stdout, `View '${view.name}', created ${dateText(view.created_at)}`);
  writeLine(io.stdout, `${plural(view.fields.length, 'field')}:`);
  for (const field of view.fields) writeLine(io.stdout, `  ${field}`);
}

const nameArg = <T>(y: Argv<T>) =>
  y.positional('name', { type: 'string', demandOption: true, describe: 'View name' }) as Argv<
    T & { name: string }
  >;

const fieldsOption = { type: 'string', array: true, coerce: listArg } as const;

export function registerViews(y: Argv, ctx: CliContext): Argv {
  return y.command('views', 'Manage saved views (the fields a search returns)', (views) =>
    connectionOptions(views)
      .command(
        'list',
        'List your views',
        (c) => c,
        async (args) => {
          await withClient(args, ctx, (client) =>
            viewsListCommand(client, args, ctx.io, ctx.signal),
          );
        },
      )
      .command(
        'show <name>',
        'Show a view and its fields',
        (c) => nameArg(c),
        async (args) => {
          await withClient(args, ctx, (client) =>
            viewsShowCommand(client, args, ctx.io, ctx.signal),
          );
        },
      )
      .command(
        'create <name>',
        'Create a view',
        (c) =>
          nameArg(c)
            .option('fields', {
              ...fieldsOption,
              describe: 'Fields of the view, comma-separated (required)',
            })
            .option('strict-fields', strictFieldsFlag),
        async (args) => {
          await withClient(args, ctx, (client) =>
            viewsCreateCommand(client, args, ctx.io, ctx.signal, fieldCheck(args, ctx.logger)),
          );
        },
      )
      .command(
        'update <name>',
        'Rename a view or change its fields',
        (c) =>
          nameArg(c)
            .option('rename', { type: 'string', describe: 'New name of the view' })
            .option('fields', {
              ...fieldsOption,
              describe: 'New fields of the view, comma-separated',
            })
            .option('strict-fields', strictFieldsFlag),
        async (args) => {
          await withClient(args, ctx, (client) =>
            viewsUpdateCommand(client, args, ctx.io, ctx.signal, fieldCheck(args, ctx.logger)),
          );
        },
      )
      .command(
        'delete <name>',
        'Delete a view',
        (c) => nameArg(c),
        async (args) => {
          await withClient(args, ctx, (client) =>
            viewsDeleteCommand(client, args, ctx.io, ctx.signal),
          );
        },
      )
      .demandCommand(1, 'Name a views command: list, show, create, update or delete'),
  );
}
