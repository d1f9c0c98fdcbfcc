import type { Argv } from 'yargs';
// The emulator (Fastify and the data generator) loads only when this command runs.
import type { RunningEmulator } from '../../emulator/index.js';
import {
  DEFAULT_OPTIONS,
  type EmulatorOptions,
  parseChurn,
  WIRE_MODES,
} from '../../emulator/options.js';
import { UsageError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { numberFlag } from '../format.js';
import { writeJson, writeLine } from '../output.js';

export interface EmulatorArgs {
  host: string;
  port: number;
  seed: number;
  scale: number;
  wire: string;
  'page-size': number;
  faults: string;
  email: string;
  password: string;
  token: string;
  'token-ttl': number;
  'file-ttl': number;
  'file-records': number;
  rate: number;
  'queue-ms': number;
  churn: string;
  credits?: number;
  plan: string;
  'total-credits': number;
  gzip: boolean;
  'extra-field'?: string[];
  quiet: boolean;
  json?: boolean;
}

/**
 * The emulator's flags (over 80 lines: one declaration per flag, read top to bottom as the
 * `--help` text they make; splitting them would only scatter that text).
 */
export function emulatorOptions(yargs: Argv): Argv<EmulatorArgs> {
  const d = DEFAULT_OPTIONS;
  return yargs
    .option('host', { type: 'string', default: d.host, describe: 'Address to listen on' })
    .option('port', numberFlag('port', { min: 0, max: 65535 }, 'Port (0 picks a free one)', d.port))
    .option(
      'seed',
      numberFlag('seed', { min: 0 }, 'Seed of the synthetic data and of faults', d.seed),
    )
    .option(
      'scale',
      numberFlag(
        'scale',
        { over: 0, whole: false },
        'Data size: 1 = 20k properties, 10k businesses, 5k products, 15k people',
        d.scale,
      ),
    )
    .option('wire', {
      type: 'string',
      choices: WIRE_MODES,
      default: d.wire,
      describe:
        "The forms it answers in: the live service's (live), the interface contract's (contract), or live plus every older variant real clients have met (real)",
    })
    .option(
      'page-size',
      numberFlag(
        'page-size',
        { min: 0 },
        'Page the lists (downloads, views, v3 requests) N items a page: ?page=N, a Link rel="next" header (0: no paging)',
        d.pageSize,
      ),
    )
    .option('faults', {
      type: 'string',
      default: '',
      describe: 'Fault rates, e.g. 503=0.1,429=0.05,cut=0.2,slow=0.1,slow_ms=800,retry_after=1',
    })
    .option('email', { type: 'string', default: d.email, describe: 'v4 login email' })
    .option('password', { type: 'string', default: d.password, describe: 'v4 login password' })
    .option('token', { type: 'string', default: d.token, describe: 'v3 API token' })
    .option(
      'token-ttl',
      numberFlag(
        'token-ttl',
        { over: 0, whole: false },
        'Lifetime of a v4 token, seconds',
        d.tokenTtlMs / 1000,
      ),
    )
    .option(
      'file-ttl',
      numberFlag(
        'file-ttl',
        { over: 0, whole: false },
        'Lifetime of a result-file URL, seconds',
        d.fileTtlMs / 1000,
      ),
    )
    .option(
      'file-records',
      numberFlag('file-records', { min: 1 }, 'Records per result file', d.fileRecords),
    )
    .option(
      'rate',
      numberFlag(
        'rate',
        { over: 0, whole: false },
        'Download progress, records per second',
        d.rate,
      ),
    )
    .option(
      'queue-ms',
      numberFlag('queue-ms', { min: 0 }, 'Time a download stays queued, ms', d.queueMs),
    )
    .option('churn', {
      type: 'string',
      default: `${d.churn * 100}%/day`,
      describe:
        'How fast the data changes with emulator time: the share of records updated per day, and of new records added (0.2%/day, 0.002, 0 for none)',
    })
    .option(
      'credits',
      numberFlag('credits', { min: 0 }, 'Credits allotted to each data type (default 1,000,000)'),
    )
    .option('plan', {
      type: 'string',
      choices: ['per-type', 'legacy'],
      default: d.plan,
      describe:
        "The account's plan: an allotment per data type, or a legacy plan with one total for every type (its per-type fields answer 0)",
    })
    .option(
      'total-credits',
      numberFlag(
        'total-credits',
        { min: 0 },
        "A legacy plan's total credits: past it, searches are refused with 402",
        d.totalCredits,
      ),
    )
    .option('gzip', {
      type: 'boolean',
      default: false,
      describe: 'Serve result files gzip-encoded',
    })
    .option('extra-field', {
      type: 'string',
      array: true,
      describe:
        'Serve a field beyond the core ones (repeatable): TYPE.FIELD[:KIND][=VALUE|VALUE...], e.g. properties.buildingName, properties.transactions.ownerType=individual|company, businesses.solarPanels:boolean',
    })
    .option('quiet', {
      type: 'boolean',
      default: false,
      describe: 'Do not log each request',
    }) as unknown as Argv<EmulatorArgs>;
}

export function toEmulatorOptions(
  args: EmulatorArgs,
  log: (line: string) => void,
): Partial<EmulatorOptions> {
  const options: Partial<EmulatorOptions> = {
    host: args.host,
    port: args.port,
    seed: args.seed,
    scale: args.scale,
    wire: args.wire as EmulatorOptions['wire'],
    pageSize: args['page-size'],
    faults: args.faults,
    email: args.email,
    password: args.password,
    token: args.token,
    tokenTtlMs: args['token-ttl'] * 1000,
    fileTtlMs: args['file-ttl'] * 1000,
    fileRecords: args['file-records'],
    rate: args.rate,
    queueMs: args['queue-ms'],
    churn: parseChurn(args.churn),
    gzipFiles: args.gzip,
    plan: args.plan as EmulatorOptions['plan'],
    totalCredits: args['total-credits'],
    extraFields: args['extra-field'] ?? [],
  };
  if (args.credits !== undefined) {
    const n = args.credits;
    options.credits = { business: n, people: n, product: n, property: n };
  }
  if (!args.quiet) options.log = log;
  return options;
}

/** `sluice emulator`: runs until interrupted. */
export async function runEmulator(args: EmulatorArgs, ctx: CliContext): Promise<void> {
  const { io, signal } = ctx;
  let emulator: RunningEmulator;
  // Its request log: lines for people, or JSON lines with the rest of the log.
  const log =
    ctx.logFormat === 'json'
      ? (line: string) => ctx.logger.info({ emulator: true }, line)
      : (line: string) => writeLine(io.stderr, line);
  try {
    const { startEmulator } = await import('../../emulator/index.js');
    emulator = await startEmulator(toEmulatorOptions(args, log));
  } catch (error) {
    if (error instanceof RangeError) throw new UsageError(error.message);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      throw new UsageError(`port ${args.port} is in use: pick another with --port`);
    throw error;
  }
  const { options } = emulator;
  const { dataCounts, emulatorSummary, serveUntil } = await import('../../emulator/serve.js');
  const counts = Object.entries(dataCounts(emulator))
    .map(([t, n]) => `${n.toLocaleString('en-US')} ${t}`)
    .join(', ');
  const out = io.stdout;
  if (args.json) {
    // One document, as soon as it listens: where it is and how to log in.
    writeJson(out, emulatorSummary(emulator));
    await serveUntil(emulator, signal);
    return;
  }
  writeLine(
    out,
    `sluice emulator listening on ${emulator.url} (wire: ${options.wire}, seed ${options.seed})`,
  );
  writeLine(
    out,
    `  v4       ${emulator.v4Url}   email ${options.email}   password ${options.password}`,
  );
  writeLine(out, `  v3       ${emulator.v3Url}   API token ${options.token}`);
  writeLine(
    out,
    `  control  ${emulator.url}/_emulator/   (reset, credits, plan, clock, records, fields, expire-files, faults, requests, outbox)`,
  );
  writeLine(out, `  data     ${counts}`);
  if (options.plan === 'legacy') {
    writeLine(
      out,
      `  account  legacy plan: one total of ${options.totalCredits.toLocaleString('en-US')} credits for every data type`,
    );
  }
  if (options.churn > 0) {
    writeLine(
      out,
      `  churn    ${+(options.churn * 100).toPrecision(6)}% of records updated a day, as many added`,
    );
  }
  if (options.faults) writeLine(out, `  faults   ${options.faults}`);
  if (options.extraFields.length > 0)
    writeLine(out, `  fields   also ${options.extraFields.join(', ')}`);
  if (options.pageSize > 0)
    writeLine(out, `  paging   ${options.pageSize} items a page (?page=N, Link rel="next")`);
  writeLine(out);
  writeLine(out, 'Try it:');
  writeLine(
    out,
    `  export SLUICE_API_URL=${emulator.v4Url} SLUICE_EMAIL=${options.email} SLUICE_PASSWORD=${options.password}`,
  );
  writeLine(out, "  sluice count properties 'city:Austin AND province:TX'");
  writeLine(out, 'Stop with Ctrl-C.');
  await serveUntil(emulator, signal);
}
