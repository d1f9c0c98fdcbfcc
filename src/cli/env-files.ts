import { dirname, resolve } from 'node:path';
import { commandEnv } from './command-env.js';
import { isPipelineFile } from './commands/fields.js';
import type { CliContext } from './context.js';

/** What yargs parsed, as far as the env files care. */
interface ParsedArgs {
  _: (string | number)[];
  'env-file'?: string;
  file?: unknown;
  files?: unknown;
  type?: unknown;
  dir?: unknown;
}

/**
 * Before a command's handler: reads its env files and makes `ctx.env` the environment with
 * them. A command given pipeline files reads the `.env` beside each (a scheduled run started
 * from any folder finds it, as it finds its database file); `init` the one of the folder it
 * writes into; any other command the one of the current folder. `--env-file PATH` comes between
 * the environment and those.
 */
export function useEnvFiles(argv: ParsedArgs, ctx: CliContext): void {
  if (ctx.settings) return;
  const cwd = process.cwd();
  const settings = commandEnv(ctx.env, {
    ...(argv['env-file'] === undefined ? {} : { envFile: argv['env-file'] }),
    folders: foldersOf(argv, cwd),
    cwd,
  });
  ctx.settings = settings;
  ctx.env = settings.env;
  for (const warning of settings.warnings) ctx.logger.warn(warning);
}

function foldersOf(argv: ParsedArgs, cwd: string): string[] {
  if (argv._[0] === 'init') return [resolve(cwd, typeof argv.dir === 'string' ? argv.dir : '.')];
  const files = [
    ...(Array.isArray(argv.files) ? argv.files : []),
    ...(typeof argv.file === 'string' ? [argv.file] : []),
    ...(argv._[0] === 'fields' && typeof argv.type === 'string' && isPipelineFile(argv.type)
      ? [argv.type]
      : []),
  ].filter((f): f is string => typeof f === 'string');
  return files.length > 0 ? files.map((f) => dirname(resolve(cwd, f))) : [cwd];
}
