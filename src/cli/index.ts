import yargs, { type Argv } from 'yargs';
import { UsageError } from '../errors.js';
import { registerAccount } from './commands/account.js';
import { registerDownloads } from './commands/downloads.js';
import { type EmulatorArgs, emulatorOptions, runEmulator } from './commands/emulator.js';
import { registerHealth } from './commands/health.js';
import { registerPipeline } from './commands/pipeline.js';
import { registerRealTime } from './commands/realtime.js';
import { registerSearch } from './commands/search.js';
import { registerViews } from './commands/views.js';
import type { CliContext } from './context.js';
import { describeError, EXIT, exitCodeFor } from './exit-codes.js';
import { processIo, writeLine } from './output.js';

export type { CliContext } from './context.js';

/** The code of the UsageError for what yargs itself rejects (unknown command, missing argument). */
const ARGUMENTS_CODE = 'SLUICE_USAGE_ARGUMENTS';

/** Declares the commands; each handler is a thin call into a library function. */
export function buildCli(argv: string[], ctx: CliContext): Argv {
  let cli = yargs(argv).scriptName('sluice').usage('$0 <command> [options]');
  // The analyst's commands: each module declares its own and calls one plain function.
  for (const register of [
    registerHealth,
    registerAccount,
    registerViews,
    registerSearch,
    registerDownloads,
    registerRealTime,
    registerPipeline,
  ]) {
    cli = register(cli, ctx);
  }
  return cli
    .command(
      'emulator',
      'Run a local emulator of the data-search service (v4 and v3)',
      (y) => emulatorOptions(y),
      (args) => runEmulator(args as unknown as EmulatorArgs, ctx.io, ctx.signal),
    )
    .demandCommand(1, 'Name a command: see sluice --help')
    .strict()
    .recommendCommands()
    .help()
    .alias('h', 'help')
    .version()
    .wrap(Math.min(110, process.stdout.columns ?? 100))
    .fail((message, error) => {
      // Validation failures from yargs arrive as a message; errors from handlers pass through.
      throw error ?? new UsageError(message, ARGUMENTS_CODE);
    });
}

/** Runs the CLI and returns its exit code; never throws. */
export async function main(argv: string[], partial: Partial<CliContext> = {}): Promise<number> {
  const controller = new AbortController();
  const ctx: CliContext = {
    io: partial.io ?? processIo,
    signal: partial.signal ?? controller.signal,
    env: partial.env ?? process.env,
    ...(partial.clock ? { clock: partial.clock } : {}),
  };
  const onSignal = () => controller.abort();
  const ownsSignals = partial.signal === undefined;
  if (ownsSignals) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  try {
    await buildCli(argv, ctx).parseAsync();
    return ctx.exitCode ?? EXIT.ok;
  } catch (error) {
    if (ctx.signal.aborted && !(error instanceof UsageError)) return EXIT.interrupted;
    writeLine(ctx.io.stderr, `sluice: ${describeError(error)}`);
    // Only for mistakes in the command line itself: after "SLUICE_EMAIL is not set" it is noise.
    if (error instanceof UsageError && error.code === ARGUMENTS_CODE) {
      writeLine(ctx.io.stderr, 'Run sluice --help for usage.');
    }
    return exitCodeFor(error);
  } finally {
    if (ownsSignals) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
}
