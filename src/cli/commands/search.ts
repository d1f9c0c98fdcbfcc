import type { Argv } from 'yargs';
import type { DataType } from '../../catalog.js';
import type { AddressMatching, SearchRequest, ServiceClient } from '../../client/types.js';
import { UsageError } from '../../errors.js';
import { connectionOptions, type JsonArgs, withClient } from '../connection.js';
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
import { type Io, writeJson, writeLine } from '../output.js';

export interface SearchArgs extends JsonArgs {
  type: string;
  /** One query, or its words when it was not quoted. */
  query: string | string[];
  view?: string;
  format?: 'csv' | 'json';
  'auto-trace'?: boolean;
  'address-matching'?: AddressMatching;
  'only-traceable'?: boolean;
  /** The old name of `--only-traceable`, still read (with a warning). */
  'require-people-data'?: boolean;
  'strict-fields'?: boolean;
}

/** Fields the catalogue lacks pass with no word unless a command says how to treat them. */
const QUIET: FieldCheck = { strict: false, warn: () => {} };

/**
 * The search the flags describe, as a job of a pipeline file would send it: its view, format
 * and, for properties, autotrace and the address-matching options. Those are refused here for
 * another data type, naming the flags, before any request.
 */
function searchRequestOf(type: DataType, query: string, args: SearchArgs): SearchRequest {
  const request: SearchRequest = { type, query };
  if (args.view) request.view = args.view;
  if (args.format !== undefined) request.format = args.format;
  const propertyFlags: string[] = [];
  if (args['auto-trace'] === true) {
    request.autoTrace = true;
    propertyFlags.push('--auto-trace');
  }
  if (args['address-matching'] !== undefined) {
    request.addressMatching = args['address-matching'];
    propertyFlags.push('--address-matching');
  }
  const onlyTraceable = args['only-traceable'] ?? args['require-people-data'];
  if (onlyTraceable === true) {
    request.onlyTraceable = true;
    propertyFlags.push(
      args['only-traceable'] === true ? '--only-traceable' : '--require-people-data',
    );
  }
  if (propertyFlags.length > 0 && type !== 'properties') {
    throw new UsageError(
      `${propertyFlags.join(', ')} ${propertyFlags.length === 1 ? 'works' : 'work'} on properties only, not ${type}`,
    );
  }
  return request;
}

export interface CountDocument {
  type: DataType;
  query: string;
  num_found: number;
}

/** `sluice count`: matching records, at no cost. Text mode prints the bare number for scripts. */
export async function countCommand(
  client: ServiceClient,
  args: SearchArgs,
  io: Io,
  signal?: AbortSignal,
  fields: FieldCheck = QUIET,
): Promise<CountDocument> {
  const type = dataTypeArg(args.type);
  const query = queryArg(args.query);
  checkQueryArg(type, query, fields);
  const { numFound } = await client.count(searchRequestOf(type, query, args), { signal });
  const doc: CountDocument = { type, query, num_found: numFound };
  if (args.json) writeJson(io.stdout, doc);
  else writeLine(io.stdout, String(numFound));
  return doc;
}

export const PREVIEW_MAX = 10;

export interface PreviewArgs extends SearchArgs {
  records?: number;
  columns?: string[];
}

export interface PreviewDocument {
  type: DataType;
  query: string;
  num_found: number;
  total_cost: number;
  records: Record<string, unknown>[];
}

/** `sluice preview`: up to 10 records as a table; each record shown costs a credit. */
export async function previewCommand(
  client: ServiceClient,
  args: PreviewArgs,
  io: Io,
  signal?: AbortSignal,
  fields: FieldCheck = QUIET,
): Promise<PreviewDocument> {
  const type = dataTypeArg(args.type);
  const query = queryArg(args.query);
  const numRecords = intArg(args.records ?? PREVIEW_MAX, '--records', 0, PREVIEW_MAX);
  const request = { ...searchRequestOf(type, query, args), numRecords };
  // Checked before the request, so a typo in a query or a column name costs nothing.
  checkQueryArg(type, query, fields);
  if (args.columns) checkColumns(type, args.columns, fields);
  const result = await client.preview(request, { signal });
  const doc: PreviewDocument = {
    type,
    query,
    num_found: result.numFound,
    total_cost: result.totalCost,
    records: result.records,
  };
  if (args.json) {
    writeJson(io.stdout, doc);
    return doc;
  }
  const shown = result.records.length;
  writeLine(
    io.stdout,
    `Found ${countOf(result.numFound, type)} matching ${query}; showing ${shown} (cost: ${credits(result.totalCost)}).`,
  );
  if (shown > 0) {
    const columns = chooseColumns(type, result.records, args.columns);
    writeLine(io.stdout, recordsTable(result.records, columns));
  }
  return doc;
}

export function typeAndQuery<T>(y: Argv<T>): Argv<T & { type: string; query: string[] }> {
  return y
    .positional('type', {
      type: 'string',
      demandOption: true,
      describe: 'properties, businesses, products or people',
    })
    .positional('query', {
      type: 'string',
      array: true,
      // Else help says `[default: []]` of an argument it requires.
      default: undefined,
      demandOption: true,
      describe: 'Query, e.g. "city:Austin AND province:TX" (quote it)',
    }) as Argv<T & { type: string; query: string[] }>;
}

/** The search options `count` and `preview` share: what a pipeline job's search can say. */
function searchOptions<T>(y: Argv<T>): Argv<T & { 'strict-fields'?: boolean }> {
  return y
    .option('view', {
      type: 'string',
      describe: 'Name of a view that decides the fields returned',
    })
    .option('format', {
      type: 'string',
      choices: ['json', 'csv'],
      describe: 'json (the default), or csv: the records as a CSV download would hold them',
    })
    .option('auto-trace', {
      type: 'boolean',
      describe: 'Properties: with the owner’s people record (1 property + 1 people credit each)',
    })
    .option('address-matching', {
      type: 'string',
      choices: ['on', 'off', 'retry'],
      describe:
        'Properties: on (the service normalizes the address, the default), off (as written), retry (off, then on when nothing matches)',
    })
    .option('only-traceable', {
      type: 'boolean',
      describe: 'Properties: only records with people data (autotrace)',
    })
    .option('require-people-data', {
      type: 'boolean',
      hidden: true,
      describe: 'Deprecated: the old name of --only-traceable',
    })
    .option('strict-fields', strictFieldsFlag) as Argv<T & { 'strict-fields'?: boolean }>;
}

/** A deprecated flag still works, and says what it is called now. */
function warnDeprecated(args: SearchArgs, ctx: CliContext): void {
  if (args['require-people-data'] !== undefined) {
    ctx.logger.warn(
      '--require-people-data is deprecated: the service calls it only_traceable; use --only-traceable',
    );
  }
}

export function registerSearch(y: Argv, ctx: CliContext): Argv {
  return y
    .command(
      'count <type> <query..>',
      'Count the records matching a query (costs nothing)',
      (c) => searchOptions(typeAndQuery(connectionOptions(c))),
      async (args) => {
        warnDeprecated(args, ctx);
        await withClient(args, ctx, (client) =>
          countCommand(client, args, ctx.io, ctx.signal, fieldCheck(args, ctx.logger)),
        );
      },
    )
    .command(
      'preview <type> <query..>',
      'Show up to 10 matching records (one credit each; two with --auto-trace)',
      (c) =>
        searchOptions(typeAndQuery(connectionOptions(c)))
          .option(
            'records',
            numberFlag(
              'records',
              { min: 0, max: PREVIEW_MAX },
              'Records to show, 0 to 10',
              PREVIEW_MAX,
            ),
          )
          .option('columns', {
            type: 'string',
            array: true,
            coerce: listArg,
            describe:
              'Columns of the table, e.g. id,address,city (dotted paths reach nested fields)',
          }),
      async (args) => {
        warnDeprecated(args, ctx);
        await withClient(args, ctx, (client) =>
          previewCommand(client, args, ctx.io, ctx.signal, fieldCheck(args, ctx.logger)),
        );
      },
    );
}
