import type { Argv } from 'yargs';
import type { DataType } from '../../catalog.js';
import type {
  RealTimeRequest,
  ScrapeResult,
  ServiceClient,
  TargetedUpdateInfo,
} from '../../client/types.js';
import {
  type ConnectionArgs,
  connectionOptions,
  type JsonArgs,
  withClient,
} from '../connection.js';
import type { CliContext } from '../context.js';
import {
  checkColumns,
  checkQueryArg,
  chooseColumns,
  countOf,
  credits,
  dataTypeArg,
  type FieldCheck,
  fieldCheck,
  intArg,
  listArg,
  numberFlag,
  queryArg,
  recordsTable,
  strictFieldsFlag,
} from '../format.js';
import { dateText, formatTable, type Io, writeJson, writeLine } from '../output.js';

export interface RealTimeArgs extends JsonArgs {
  query: string | string[];
  records?: number;
  /** Data type; the service assumes properties when it is not given. */
  type?: string;
  'strict-fields'?: boolean;
}

/** The request the flags describe, its query checked first (a warning or a refusal). */
function realTimeRequest(args: RealTimeArgs, fields: FieldCheck): RealTimeRequest {
  const request: RealTimeRequest = {
    query: queryArg(args.query),
    numRecords: intArg(args.records, '--records', 1),
  };
  if (args.type !== undefined) request.type = dataTypeArg(args.type);
  checkQueryArg(request.type ?? 'properties', request.query, fields);
  return request;
}

export interface TargetedUpdateDocument {
  id: string;
  status: string;
  type: DataType | null;
  query: string;
  num_records: number;
  num_updated: number | null;
  total_cost: number | null;
  created_at: string | null;
}

function updateDocument(u: TargetedUpdateInfo): TargetedUpdateDocument {
  return {
    id: u.id,
    status: u.status,
    type: u.type ?? null,
    query: u.query,
    num_records: u.numRecords,
    num_updated: u.numUpdated ?? null,
    total_cost: u.totalCost ?? null,
    created_at: u.createdAt ?? null,
  };
}

/** `sluice targeted-updates create`: asks the service to refresh matching records now. */
export async function targetedUpdateCreateCommand(
  client: ServiceClient,
  args: RealTimeArgs,
  io: Io,
  signal: AbortSignal | undefined,
  fields: FieldCheck,
): Promise<TargetedUpdateDocument> {
  const request = realTimeRequest(args, fields);
  const doc = updateDocument(await client.createTargetedUpdate(request, { signal }));
  if (args.json) writeJson(io.stdout, doc);
  else {
    writeLine(
      io.stdout,
      `Targeted update ${doc.id} ${doc.status}: ${countOf(doc.num_records, doc.type ?? 'properties')} matching ${doc.query} (cost: ${credits(doc.total_cost)}).`,
    );
    writeLine(io.stdout, 'Follow it with: sluice targeted-updates list');
  }
  return doc;
}

export async function targetedUpdateListCommand(
  client: ServiceClient,
  args: JsonArgs,
  io: Io,
  signal?: AbortSignal,
): Promise<{ targeted_updates: TargetedUpdateDocument[] }> {
  const updates = (await client.listTargetedUpdates({ signal })).map(updateDocument);
  const doc = { targeted_updates: updates };
  if (args.json) writeJson(io.stdout, doc);
  else if (updates.length === 0) writeLine(io.stdout, 'No targeted updates yet.');
  else {
    writeLine(
      io.stdout,
      formatTable(
        ['id', 'status', 'type', 'records', 'updated', 'cost', 'created', 'query'],
        updates.map((u) => [
          u.id,
          u.status,
          u.type ?? '',
          u.num_records,
          u.num_updated ?? '',
          u.total_cost ?? '',
          dateText(u.created_at),
          u.query,
        ]),
      ),
    );
  }
  return doc;
}

export interface ScrapeArgs extends RealTimeArgs {
  columns?: string[];
}

export interface ScrapeDocument {
  id: string;
  status: string;
  type: DataType | null;
  query: string;
  num_records: number;
  total_cost: number | null;
  records: Record<string, unknown>[];
}

/** `sluice scrape`: fetches matching records fresh from their sources, in real time. */
export async function scrapeCommand(
  client: ServiceClient,
  args: ScrapeArgs,
  io: Io,
  signal: AbortSignal | undefined,
  fields: FieldCheck,
): Promise<ScrapeDocument> {
  const request = realTimeRequest(args, fields);
  const type = request.type ?? 'properties';
  if (args.columns) checkColumns(type, args.columns, fields);
  const result: ScrapeResult = await client.scrape(request, { signal });
  const doc: ScrapeDocument = {
    id: result.id,
    status: result.status,
    type: request.type ?? null,
    query: request.query,
    num_records: result.numRecords,
    total_cost: result.totalCost ?? null,
    records: result.records,
  };
  if (args.json) {
    writeJson(io.stdout, doc);
    return doc;
  }
  writeLine(
    io.stdout,
    `Scrape ${doc.id} ${doc.status}: ${countOf(doc.num_records, type)} matching ${doc.query} (cost: ${credits(result.totalCost)}).`,
  );
  if (result.records.length > 0) {
    writeLine(
      io.stdout,
      recordsTable(result.records, chooseColumns(type, result.records, args.columns)),
    );
  }
  return doc;
}

function realTimeOptions<T>(y: Argv<T>, what: string) {
  return connectionOptions(y)
    .positional('query', {
      type: 'string',
      array: true,
      // Else help says `[default: []]` of an argument it requires.
      default: undefined,
      demandOption: true,
      describe: 'Query, e.g. "city:Austin" (quote it)',
    })
    .option('records', numberFlag('records', { min: 1 }, `Records to ${what} (required)`))
    .option('type', { type: 'string', describe: 'Data type (default: properties)' })
    .option('strict-fields', strictFieldsFlag) as Argv<
    T & ConnectionArgs & RealTimeArgs & { query: string[] }
  >;
}

export function registerRealTime(y: Argv, ctx: CliContext): Argv {
  return y
    .command('targeted-updates', 'Refresh records in real time (targeted updates)', (updates) =>
      updates
        .command(
          'create <query..>',
          'Ask for matching records to be refreshed now (one credit a record)',
          (c) => realTimeOptions(c, 'update'),
          async (args) => {
            await withClient(args, ctx, (client) =>
              targetedUpdateCreateCommand(
                client,
                args,
                ctx.io,
                ctx.signal,
                fieldCheck(args, ctx.logger),
              ),
            );
          },
        )
        .command(
          'list',
          'List targeted updates and their progress',
          (c) => connectionOptions(c),
          async (args) => {
            await withClient(args, ctx, (client) =>
              targetedUpdateListCommand(client, args, ctx.io, ctx.signal),
            );
          },
        )
        .demandCommand(1, 'Name a targeted-updates command: create or list'),
    )
    .command(
      'scrape <query..>',
      'Scrape matching records in real time (one credit a record)',
      (c) =>
        realTimeOptions(c, 'scrape').option('columns', {
          type: 'string',
          array: true,
          coerce: listArg,
          describe: 'Columns of the table, e.g. id,address,city',
        }),
      async (args) => {
        await withClient(args, ctx, (client) =>
          scrapeCommand(client, args, ctx.io, ctx.signal, fieldCheck(args, ctx.logger)),
        );
      },
    );
}
