import { readFileSync } from 'node:fs';
import yargs, { type Argv } from 'yargs';
import { contextOf, SluiceError, UsageError } from '../errors.js';
import type { LogFormat } from '../log.js';
import { registerAccount } from './commands/account.js';
import { registerDownloads } from './commands/downloads.js';
import { type EmulatorArgs, emulatorOptions, runEmulator } from './commands/emulator.js';
import { registerFields } from './commands/fields.js';
import { registerGet } from './commands/get.js';
import { registerHealth } from './commands/health.js';
import { registerInit } from './commands/init/init.js';
import { registerNotify } from './commands/notify.js';
import { registerPipeline } from './commands/pipeline.js';
import { registerRealTime } from './commands/realtime.js';
import { registerSearch } from './commands/search.js';
import { registerUi } from './commands/ui.js';
import { registerViews } from './commands/views.js';
import type { CliContext } from './context.js';
import { useEnvFiles } from './env-files.js';
import { ARGUMENTS_CODE, describeError, EXIT, errorDocument, exitCodeFor } from './exit-codes.js';
import { dropOutputWhenReaderGoes, processIo, writeJson, writeLine, wroteJson } from './output.js';
import { Terminal } from './terminal.js';

export type { CliContext } from './context.js';

/**
 * Declares the commands; each handler is a thin call into a library function. Over 80 lines: the
 * global flags and the help epilogue are declarations, kept in the order `--help` shows them.
 */
export function buildCli(argv: string[], ctx: CliContext): Argv {
  let cli: Argv = yargs(argv)
    .scriptName('sluice')
    .usage('$0 <command> [options]')
    .option('json', {
      type: 'boolean',
      global: true,
      describe: 'Print one JSON document on stdout, whatever happens (errors too)',
    })
    .option('log-format', {
      type: 'string',
      choices: ['pretty', 'json'],
      global: true,
      describe: 'Logs on stderr: readable lines or JSON lines [SLUICE_LOG_FORMAT]',
    })
    .option('log-level', {
      type: 'string',
      choices: ['error', 'warn', 'info', 'debug', 'trace', 'silent'],
      global: true,
      describe: 'Least important log lines to show (default info) [SLUICE_LOG_LEVEL]',
    })
    .option('verbose', {
      alias: 'v',
      type: 'count',
      global: true,
      describe: 'More log lines: -v debug, -vv trace',
    })
    .option('env-file', {
      type: 'string',
      global: true,
      describe:
        'Read variables from this file (KEY=value lines) before the .env beside the pipeline file; the environment wins over both',
    })
    .middleware((argv) => useEnvFiles(argv, ctx))
    .group(
      ['json', 'log-format', 'log-level', 'verbose', 'env-file', 'help', 'version'],
      'Global options:',
    )
    .example('$0 count properties "city:Austin AND province:TX"', 'count matches, free')
    .example('$0 run pipelines/demo.yaml --json', 'run a pipeline, one JSON document out')
    .epilogue(
      'Exit codes: 0 done, 1 failed (worth a retry), 2 a mistake to fix, 3 refused before anything was spent (credit guard, budget, 402), 4 done with less than asked (a download cancelled, a job refused after others spent), 130 interrupted (run again).',
    );
  // The analyst's commands: each module declares its own and calls one plain function.
  for (const register of [
    registerHealth,
    registerAccount,
    registerViews,
    registerSearch,
    registerDownloads,
    registerRealTime,
    registerFields,
    registerPipeline,
    registerGet,
    registerInit,
    registerNotify,
    registerUi,
  ]) {
    cli = register(cli, ctx);
  }
  return (
    cli
      .command(
        'emulator',
        'Run a local emulator of the data-search service (v4 and v3)',
        (y) => emulatorOptions(y),
        (args) => runEmulator(args as unknown as EmulatorArgs, ctx),
      )
      .completion(
        'completion',
        'Print a shell completion script (bash, zsh): sluice completion >> ~/.bashrc',
      )
      .demandCommand(1, 'Name a command: see sluice --help')
      .strict()
      .recommendCommands()
      .help()
      .alias('h', 'help')
      // `--version` is answered before the command line is parsed (see `main`): yargs would read
      // the version of whatever package.json it finds first, the host project's when sluice is
      // installed as a dependency.
      .version(false)
      .option('version', { type: 'boolean', describe: 'Show the version of sluice' })
      .wrap(Math.min(110, process.stdout.columns ?? 100))
      .fail((message, error) => {
        // Validation failures from yargs arrive as a message, a flag's refused value (its coerce
        // threw) as a YError with that message; errors from handlers pass through.
        if (error?.name === 'YError') throw new UsageError(error.message, ARGUMENTS_CODE);
        throw error ?? new UsageError(arguments_(message, argv), ARGUMENTS_CODE);
      })
  );
}

/** What yargs said of a command line, as a person can act on it. */
function arguments_(message: string, argv: readonly string[]): string {
  const command = argv.find((a) => !a.startsWith('-'));
  const missing = /^Not enough non-option arguments: got (\d+), need at least (\d+)/.exec(message);
  if (missing && command !== undefined) {
    return PIPELINE_COMMANDS.includes(command)
      ? `sluice ${command} needs a pipeline file: e.g. sluice ${command} pipelines/demo.yaml`
      : `sluice ${argv.filter((a) => !a.startsWith('-')).join(' ')}: needs ${missing[2]} argument${missing[2] === '1' ? '' : 's'} here, got ${missing[1]}: see sluice ${command} --help`;
  }
  if (argv.includes('--dry-run')) {
    return 'unknown option --dry-run: to see what a run would do and cost without spending anything, use sluice plan FILE';
  }
  return message;
}

const PIPELINE_COMMANDS = ['validate', 'plan', 'run', 'status'];

/** sluice's own version, from its package.json (two folders up from src/cli or dist/cli). */
export function sluiceVersion(): string {
  const file = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/** The global flags that decide how a command reports, read before the command line is. */
export interface ReportFlags {
  json: boolean;
  logFormat: LogFormat;
  logLevel: string;
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * `--json`, `--log-format`, `--log-level` and `-v`, from the raw arguments (and SLUICE_LOG_*),
 * so that even a command line yargs refuses gets its error in the form asked for.
 */
export function reportFlags(argv: readonly string[], env: NodeJS.ProcessEnv): ReportFlags {
  const value = (name: string): string | undefined => {
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i]!;
      if (arg === `--${name}`) return argv[i + 1];
      if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3);
    }
    return undefined;
  };
  const json = argv.some((a) => a === '--json' || a === '--json=true');
  const format = value('log-format') ?? env.SLUICE_LOG_FORMAT;
  let level = value('log-level') ?? env.SLUICE_LOG_LEVEL;
  const verbose = argv.reduce(
    (n, a) => n + (a === '--verbose' ? 1 : /^-v+$/.test(a) ? a.length - 1 : 0),
    0,
  );
  if (verbose > 0) level = verbose > 1 ? 'trace' : 'debug';
  return {
    json,
    logFormat: format === 'json' ? 'json' : 'pretty',
    logLevel: level !== undefined && LEVELS.includes(level) ? level : 'info',
  };
}

/** Runs the CLI and returns its exit code; never throws. */
export async function main(argv: string[], partial: Partial<CliContext> = {}): Promise<number> {
  const controller = new AbortController();
  const io = partial.io ?? processIo;
  const env = partial.env ?? process.env;
  const flags = reportFlags(argv, env);
  dropOutputWhenReaderGoes(io.stdout);
  dropOutputWhenReaderGoes(io.stderr);
  const terminal =
    partial.terminal ??
    new Terminal(io.stderr, {
      format: flags.logFormat,
      level: flags.logLevel,
      color: !env.NO_COLOR,
    });
  const ctx: CliContext = {
    io,
    signal: partial.signal ?? controller.signal,
    env,
    logger: partial.logger ?? terminal.logger,
    logFormat: flags.logFormat,
    terminal,
    ...(partial.clock ? { clock: partial.clock } : {}),
  };
  const onSignal = () => controller.abort();
  const ownsSignals = partial.signal === undefined;
  if (ownsSignals) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  try {
    if (argv.includes('--version') || argv.includes('--version=true')) {
      const version = sluiceVersion();
      if (flags.json) writeJson(io.stdout, { name: 'sluice', version });
      else writeLine(io.stdout, version);
      return EXIT.ok;
    }
    await buildCli(argv, ctx).parseAsync();
    return ctx.exitCode ?? EXIT.ok;
  } catch (caught) {
    const interrupted = ctx.signal.aborted && !(caught instanceof UsageError);
    const error = interrupted
      ? new SluiceError('interrupted; run again to pick up where it stopped', {
          code: 'SLUICE_INTERRUPTED',
        })
      : caught;
    report(ctx, flags, error);
    return interrupted ? EXIT.interrupted : exitCodeFor(error);
  } finally {
    if (ownsSignals) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
}

/**
 * Says what stopped a command: with `--json`, one error document on stdout (unless the command
 * already wrote its document); on stderr a line for people, or a JSON log line.
 */
function report(ctx: CliContext, flags: ReportFlags, error: unknown): void {
  const doc = errorDocument(error);
  if (flags.json && !wroteJson(ctx.io.stdout)) writeJson(ctx.io.stdout, doc);
  if (flags.logFormat === 'json') {
    const { message, ...fields } = doc.error;
    const stack =
      doc.error.code === 'SLUICE_INTERNAL' && error instanceof Error ? error.stack : undefined;
    ctx.logger.error({ ...fields, ...contextOf(error), ...(stack ? { stack } : {}) }, message);
    return;
  }
  if (doc.error.code === 'SLUICE_INTERRUPTED') return;
  writeLine(ctx.io.stderr, `sluice: ${describeError(error)}`);
  // Only for mistakes in the command line itself: after "SLUICE_EMAIL is not set" it is noise.
  if (error instanceof UsageError && error.code === ARGUMENTS_CODE) {
    writeLine(ctx.io.stderr, 'Run sluice --help for usage.');
  }
}
