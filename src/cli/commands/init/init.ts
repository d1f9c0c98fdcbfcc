import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { DATA_TYPES, type DataType } from '../../../catalog.js';
import { ApiError, SluiceError, UsageError } from '../../../errors.js';
import {
  defaultDestination,
  destinationEntryOf,
  destinationExamples,
} from '../../../load/index.js';
import { parsePipeline } from '../../../pipeline/index.js';
import {
  type ConnectionArgs,
  connectionOptions,
  type JsonArgs,
  withClient,
} from '../../connection.js';
import type { CliContext } from '../../context.js';
import { describeError, EXIT } from '../../exit-codes.js';
import {
  checkQueryArg,
  countOf,
  dataTypeArg,
  fieldCheck,
  intArg,
  queryArg,
  strictFieldsFlag,
} from '../../format.js';
import { writeJson, writeLine } from '../../output.js';
import { type InitAnswers, initFiles } from './files.js';
import { type Asker, answer, askerOn } from './questions.js';

export interface InitArgs extends ConnectionArgs, JsonArgs {
  type?: string;
  query?: string;
  records?: string;
  destination?: string;
  name?: string;
  dir?: string;
  yes?: boolean;
  force?: boolean;
  'strict-fields'?: boolean;
}

const EXAMPLES: Record<DataType, string> = {
  properties: 'city:Austin AND province:TX',
  businesses: 'city:Austin AND province:TX',
  products: 'brand:Apple',
  people: 'city:Austin AND province:TX',
};

/**
 * `sluice init`: a first pipeline in one command. It asks (or takes from flags, all of them with
 * `--yes`) the data type, a query, a record count and a destination; checks the query offline,
 * counts it (free) when the credentials are there, and writes the pipeline file, a
 * `.env.example` and the cron line and systemd units that run it. Files that exist are left as
 * they are, unless `--force`.
 */
export async function initCommand(args: InitArgs, ctx: CliContext): Promise<number> {
  const dir = resolve(args.dir ?? '.');
  const name = pipelineName(args.name, dir);
  const asker = args.yes ? undefined : askerOn(process.stdin, ctx.io.stderr, ctx.signal);
  try {
    // Before any question: answers to a file that cannot be written are answers in vain.
    if (asker && !args.force && existsSync(join(dir, `${name}.yaml`))) {
      throw refusal([`${name}.yaml`], args);
    }
    const answers = await ask(args, ctx, name, asker);
    const files = initFiles(answers, dir);
    // What init writes, `validate` accepts: checked before anything is written.
    parsePipeline(
      files[0]!.text,
      join(dir, files[0]!.name),
      {},
      {
        source: 'optional',
        views: 'offline',
      },
    );
    const written = writeFiles(dir, files, args);
    report(answers, written, args, ctx);
    return EXIT.ok;
  } finally {
    asker?.close();
  }
}

async function ask(
  args: InitArgs,
  ctx: CliContext,
  name: string,
  asker: Asker | undefined,
): Promise<InitAnswers & { note?: string }> {
  const type = await answer(
    args.type,
    {
      text: `Data type (${DATA_TYPES.join(', ')})`,
      fallback: 'properties',
      flag: '--type',
      check: dataTypeArg,
    },
    asker,
  );
  const fields = fieldCheck(args, ctx.logger);
  let counted: { found?: number; note?: string } = {};
  const query = await answer(
    args.query,
    {
      text: `Query (e.g. ${EXAMPLES[type]})`,
      flag: '--query',
      // Offline first (a syntax error costs nothing), then the service's free count.
      check: async (text) => {
        const query = queryArg(text);
        checkQueryArg(type, query, fields);
        counted = await count(type, query, args, ctx);
        return query;
      },
    },
    asker,
  );
  asker?.say(
    `  ${counted.note ? `not counted: ${counted.note}` : `${countOf(counted.found!, type)} match (a free count)`}`,
  );
  const records = await answer(
    args.records,
    {
      text: 'Records to buy each run (a number, or all)',
      fallback: '100',
      flag: '--records',
      check: recordsArg,
    },
    asker,
  );
  const destination = await answer(
    args.destination,
    {
      text: 'Destination (sqlite:PATH, duckdb:PATH or a PostgreSQL URL; a path starts at the pipeline file)',
      fallback: defaultDestination(name),
      flag: '--destination',
      check: destinationArg,
    },
    asker,
  );
  const url = args.url ?? ctx.env.SLUICE_API_URL;
  const api = args.api ?? (url !== undefined && /\/v3\/*$/i.test(url) ? 'v3' : 'v4');
  const login = Boolean(args.email ?? ctx.env.SLUICE_EMAIL);
  const token = Boolean(args.token ?? ctx.env.SLUICE_API_TOKEN);
  return {
    name,
    type,
    query,
    records,
    destination,
    api,
    auth: api === 'v3' || (token && !login) ? 'token' : 'login',
    ...(url ? { url } : {}),
    ...counted,
  };
}

/** The query's matches, at no cost, when the credentials are there; else why not. */
async function count(
  type: DataType,
  query: string,
  args: InitArgs,
  ctx: CliContext,
): Promise<{ found?: number; note?: string }> {
  try {
    return await withClient(args, ctx, async (client) => ({
      found: (await client.count({ type, query }, { signal: ctx.signal })).numFound,
    }));
  } catch (error) {
    // The service refusing the query is the query's mistake: asked again, or the error.
    if (error instanceof ApiError && (error.status === 400 || error.status === 422)) throw error;
    if (!(error instanceof SluiceError) || error.code === 'SLUICE_INTERRUPTED') throw error;
    return { note: describeError(error) };
  }
}

function recordsArg(text: string): number | 'all' {
  const value = text.trim().toLowerCase();
  return value === 'all' ? 'all' : intArg(value, 'records', 1);
}

function destinationArg(text: string): string {
  const url = text.trim();
  if (destinationEntryOf(url) === undefined) {
    throw new UsageError(`destination '${url}' is not understood: use ${destinationExamples()}`);
  }
  return url;
}

/** `--name`, or the folder's name as a pipeline name may spell it. */
function pipelineName(given: string | undefined, dir: string): string {
  if (given !== undefined) {
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(given)) {
      throw new UsageError(
        `--name '${given}': a pipeline name is letters, digits, '.', '-' and '_' (at most 100)`,
      );
    }
    return given;
  }
  const fromFolder = basename(dir)
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 100);
  return fromFolder === '' ? 'pipeline' : fromFolder;
}

type Written = { name: string; path: string; status: 'written' | 'unchanged' };

/** Writes the files, unless one exists with other content and `--force` was not given. */
function writeFiles(
  dir: string,
  files: readonly { name: string; text: string }[],
  args: InitArgs,
): Written[] {
  const existing = files.map((f) => {
    const path = join(dir, f.name);
    return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  });
  const clashes = files.filter((f, i) => existing[i] !== undefined && existing[i] !== f.text);
  if (clashes.length > 0 && !args.force)
    throw refusal(
      clashes.map((f) => f.name),
      args,
    );
  mkdirSync(dir, { recursive: true });
  return files.map((f, i) => {
    const path = join(dir, f.name);
    if (existing[i] === f.text) return { name: f.name, path, status: 'unchanged' as const };
    writeFileSync(path, f.text);
    return { name: f.name, path, status: 'written' as const };
  });
}

function refusal(names: readonly string[], args: InitArgs): UsageError {
  const shown = names.map((n) => shownPath(n, args));
  return new UsageError(
    `${shown.join(', ')} ${shown.length === 1 ? 'exists' : 'exist'}: nothing was written (--force replaces ${shown.length === 1 ? 'it' : 'them'}, or give another --name or --dir)`,
  );
}

/** A file of the new pipeline as the user would type it: from the folder they named. */
function shownPath(name: string, args: InitArgs): string {
  return args.dir === undefined ? name : join(args.dir, name);
}

function report(
  answers: InitAnswers & { note?: string },
  written: Written[],
  args: InitArgs,
  ctx: CliContext,
): void {
  const { stdout } = ctx.io;
  const file = shownPath(`${answers.name}.yaml`, args);
  if (args.json) {
    writeJson(stdout, {
      pipeline: answers.name,
      file: written[0]!.path,
      type: answers.type,
      query: answers.query,
      records: answers.records,
      destination: answers.destination,
      found: answers.found ?? null,
      ...(answers.note ? { not_counted: answers.note } : {}),
      files: written.map(({ path, status }) => ({ path, status })),
    });
    return;
  }
  writeLine(
    stdout,
    answers.found === undefined
      ? `not counted: ${answers.note}`
      : `${countOf(answers.found, answers.type)} match ${answers.query} (counted for free)`,
  );
  for (const status of ['written', 'unchanged'] as const) {
    const names = written.filter((w) => w.status === status).map((w) => w.name);
    if (names.length > 0) {
      writeLine(
        stdout,
        `${status === 'written' ? 'wrote' : 'left unchanged'} ${names.join(', ')}${args.dir === undefined ? '' : ` in ${args.dir}`}`,
      );
    }
  }
  writeLine(
    stdout,
    `next: copy .env.example to .env there and fill it in; then npx sluice plan ${file} (free), and run it`,
  );
  writeLine(
    stdout,
    `schedule it with ${answers.name}.cron (crontab) or sluice-${answers.name}.service and .timer (systemd): docs/scheduling.md`,
  );
}

export function registerInit(y: Argv, ctx: CliContext): Argv {
  return y.command(
    'init',
    'Write a new pipeline: asks the data type, a query, a record count and a destination (--yes: from flags), checks and counts the query, writes the pipeline file, .env.example, a cron line and systemd units',
    (c) =>
      connectionOptions(c)
        .option('type', {
          type: 'string',
          describe: `Data type: ${DATA_TYPES.join(', ')} (default properties)`,
        })
        .option('query', {
          type: 'string',
          describe: 'The search, e.g. "city:Austin AND province:TX"',
        })
        .option('records', {
          type: 'string',
          describe: 'Records to buy each run: a number, or all (default 100)',
        })
        .option('destination', {
          type: 'string',
          describe:
            'sqlite:PATH, duckdb:PATH or a PostgreSQL URL (default sqlite:data/NAME.sqlite, from the pipeline file)',
        })
        .option('name', { type: 'string', describe: "The pipeline's name (default: the folder's)" })
        .option('dir', { type: 'string', describe: 'The folder to write into (default: this one)' })
        .option('yes', {
          alias: 'y',
          type: 'boolean',
          default: false,
          describe: 'Ask nothing: flags and defaults only (for scripts)',
        })
        .option('force', { type: 'boolean', default: false, describe: 'Replace files that exist' })
        .option('strict-fields', strictFieldsFlag)
        .example('$0 init', 'asks, then writes the files here')
        .example(
          '$0 init --yes --query "city:Austin AND province:TX" --records 500 --dir austin',
          'asks nothing',
        ),
    async (args) => {
      ctx.exitCode = await initCommand(args as InitArgs, ctx);
    },
  );
}
