import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Argv } from 'yargs';
import type { ConnectionSettings } from '../../client/types.js';
import { UsageError } from '../../errors.js';
import {
  destinationPassword,
  type OneJob,
  type OriginalRun,
  oneJobPipeline,
  oneJobRunKey,
  oneJobTable,
  parsePipeline,
  runPipeline,
} from '../../pipeline/index.js';
import { checkQuery } from '../../query/index.js';
import {
  type ConnectionArgs,
  connectionOptions,
  type JsonArgs,
  settingsFrom,
} from '../connection.js';
import type { CliContext } from '../context.js';
import { exitCodeOfRun } from '../exit-codes.js';
import { dataTypeArg, intArg, plural, queryArg, strictFieldsFlag } from '../format.js';
import { writeJson, writeLine } from '../output.js';
import { withTelemetry } from '../telemetry/telemetry.js';
import { printSummary } from './pipeline.js';

export interface GetArgs extends ConnectionArgs, JsonArgs {
  type: string;
  query: string | string[];
  records?: string | number;
  into?: string;
  schema?: string;
  table?: string;
  view?: string;
  format?: 'json' | 'csv';
  write?: 'append' | 'replace' | 'merge';
  fresh?: boolean;
  save?: string;
  wait?: boolean;
  progress?: boolean;
  'strict-fields'?: boolean;
}

/** The name the pipeline of a `get` is known by in messages when it is not saved. */
const UNSAVED = 'sluice get';

/**
 * `sluice get TYPE QUERY --records N --into DEST`: one job from flags, run as a pipeline file's
 * job is (the same runPipeline). The same command again, after it succeeded, buys nothing and
 * says when it was loaded (`--fresh` buys again); after it failed, it resumes. See one-job.ts
 * for what "the same command" is.
 */
export async function getCommand(args: GetArgs, ctx: CliContext): Promise<number> {
  const settings = settingsFrom(args, ctx.env);
  const job = oneJobOf(args, settings);
  const cwd = process.cwd();
  const file = args.save ?? UNSAVED;
  const text = oneJobPipeline(job, file, cwd);
  if (args.save !== undefined) {
    await mkdir(dirname(args.save), { recursive: true });
    await writeFile(args.save, text);
    ctx.logger.info(`wrote ${args.save}: sluice run ${args.save} runs this job as it runs here`);
  }
  // The file's `${VAR}`s are what this command was given, flags first; SLUICE_DESTINATION does
  // not move a destination the command names.
  const { SLUICE_DESTINATION: _ignored, ...env } = ctx.env;
  const given = {
    ...env,
    SLUICE_API_URL: settings.url,
    ...(settings.email === undefined ? {} : { SLUICE_EMAIL: settings.email }),
    ...(settings.password === undefined ? {} : { SLUICE_PASSWORD: settings.password }),
    ...(settings.token === undefined ? {} : { SLUICE_API_TOKEN: settings.token }),
    ...(destinationPassword(job.into) === undefined
      ? {}
      : { PGPASSWORD: destinationPassword(job.into) }),
  };
  const spec = parsePipeline(text, file, given, {
    source: 'required',
    strictFields: args['strict-fields'] === true,
  });
  for (const warning of spec.warnings) ctx.logger.warn({ pipeline: spec.name }, warning);
  const summary = await withTelemetry(ctx, undefined, async (telemetry) => {
    const ran = await telemetry.traced(() =>
      runPipeline(spec, {
        env,
        fresh: args.fresh === true,
        wait: args.wait === true,
        runKey: oneJobRunKey(job),
        signal: ctx.signal,
        logger: ctx.logger,
        progress: ctx.terminal.progress(args.progress !== false),
        ...(ctx.clock ? { clock: ctx.clock } : {}),
      }),
    );
    telemetry.ran(spec, ran);
    return ran;
  });
  // A run key that ended is not run again: the summary is a replay of that run (`original`).
  if (args.json) writeJson(ctx.io.stdout, summary);
  else if (summary.original) writeLine(ctx.io.stdout, replayText(job, summary.original));
  else printSummary(summary, ctx);
  return exitCodeOfRun(summary);
}

/** The flags as a job, checked before anything is asked of the service. */
function oneJobOf(args: GetArgs, settings: ConnectionSettings): OneJob {
  const type = dataTypeArg(args.type);
  const query = queryArg(args.query);
  // A query mistake is told as `count` tells it, before the file is written; a field the
  // catalogue lacks is a warning of the pipeline's (below), or refused with --strict-fields.
  checkQuery(query, type, { strict: args['strict-fields'] === true });
  if (args.records === undefined) {
    throw new UsageError(
      'give --records N (or --records all): how many records to buy, one credit each',
    );
  }
  const records = String(args.records) === 'all' ? 'all' : intArg(args.records, '--records', 1);
  if (args.into === undefined || args.into === '') {
    throw new UsageError(
      'give --into DEST: the database to load, e.g. --into duckdb:austin.duckdb, --into sqlite:data/x.sqlite or a PostgreSQL URL',
    );
  }
  if (args.table !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(args.table)) {
    throw new UsageError(
      `--table ${args.table}: a table is named with letters, digits and underscores (at most 63), not starting with a digit`,
    );
  }
  const api = settings.api ?? (/\/v3\/*$/i.test(new URL(settings.url).pathname) ? 'v3' : 'v4');
  const login = settings.email !== undefined && settings.password !== undefined;
  if ((api === 'v3' || !login) && settings.token === undefined) {
    throw new UsageError(
      api === 'v3'
        ? 'no API token: set SLUICE_API_TOKEN (or pass --token)'
        : 'no credentials: set SLUICE_EMAIL and SLUICE_PASSWORD (or pass --email and --password), or SLUICE_API_TOKEN (--token)',
      'SLUICE_CREDENTIALS',
    );
  }
  const url = new URL(settings.url);
  url.username = '';
  url.password = '';
  return {
    type,
    query,
    records,
    into: args.into,
    ...(args.schema === undefined ? {} : { schema: args.schema }),
    ...(args.table === undefined ? {} : { table: args.table }),
    ...(args.view === undefined ? {} : { view: args.view }),
    format: args.format ?? 'json',
    write: args.write ?? 'merge',
    source: {
      api,
      url: url.toString().replace(/\/$/, ''),
      login: api === 'v4' && login,
      ...(settings.email === undefined ? {} : { email: settings.email }),
    },
  };
}

function replayText(job: OneJob, original: OriginalRun): string {
  const records = job.records === 'all' ? 'every record' : plural(job.records, 'record');
  return `${records} of ${job.type} matching ${job.query}: loaded into ${oneJobTable(job)} by run ${original.run_id} (${original.status} at ${original.finished_at ?? original.started_at}); nothing bought now. The same command buys nothing again; --fresh buys it again.`;
}

export function registerGet(y: Argv, ctx: CliContext): Argv {
  return y.command(
    'get <type> <query..>',
    'Buy records into a table in one command: a one-job pipeline from flags (the guard, state and resume of run)',
    (c) =>
      connectionOptions(c)
        .positional('type', {
          type: 'string',
          demandOption: true,
          describe: 'Data type: properties, businesses, products or people',
        })
        .positional('query', {
          type: 'string',
          array: true,
          // Else help says `[default: []]` of an argument it requires.
          default: undefined,
          demandOption: true,
          describe: 'Query, e.g. "city:Austin" (quote it)',
        })
        .option('records', {
          type: 'string',
          describe: 'How many records to buy, or all (required)',
          coerce: (value: unknown) =>
            String(value) === 'all' ? 'all' : String(intArg(value, '--records', 1)),
        })
        .option('into', {
          type: 'string',
          describe: 'Destination: duckdb:PATH, sqlite:PATH or a PostgreSQL URL (required)',
        })
        .option('schema', { type: 'string', describe: 'PostgreSQL schema (default public)' })
        .option('table', { type: 'string', describe: 'Table (default: the data type)' })
        .option('view', { type: 'string', describe: 'A view: pre-made, or one the service holds' })
        .option('format', { type: 'string', choices: ['json', 'csv'], default: 'json' })
        .option('write', {
          type: 'string',
          choices: ['merge', 'append', 'replace'],
          default: 'merge',
          describe: 'merge (upsert on id), append, or replace the table',
        })
        .option('fresh', {
          type: 'boolean',
          default: false,
          describe: 'Buy again what the same command loaded before',
        })
        .option('save', { type: 'string', describe: 'Write the pipeline file it runs here' })
        .option('wait', {
          type: 'boolean',
          default: false,
          describe: 'Wait for another run into the same table instead of exiting',
        })
        .option('progress', {
          type: 'boolean',
          default: true,
          describe: 'Progress bar on a terminal (--no-progress to hide)',
        })
        .option('strict-fields', strictFieldsFlag)
        .example(
          "$0 get properties 'city:Austin' --records 500 --into duckdb:austin.duckdb",
          'into the table properties; again: buys nothing',
        )
        .example(
          "$0 get businesses 'categories:pizza' --records 100 --into sqlite:x.sqlite --table pizza --save pipelines/pizza.yaml",
          'and keep the pipeline file',
        ) as Argv<GetArgs>,
    async (args) => {
      ctx.exitCode = await getCommand(args, ctx);
    },
  );
}
