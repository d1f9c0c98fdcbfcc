import type { Argv } from 'yargs';
import { connectionFromEnv, createServiceClient } from '../client/index.js';
import type { ConnectionSettings, ServiceClient } from '../client/types.js';
import { logClientEvent, logExchange } from '../pipeline/run/client-log.js';
import type { CliContext } from './context.js';

/** Flags every command that talks to the service takes; each falls back to the environment. */
export interface ConnectionArgs {
  url?: string;
  api?: 'v4' | 'v3';
  email?: string;
  password?: string;
  token?: string;
}

export interface JsonArgs {
  json?: boolean;
}

const GROUP = 'Connection (flags override SLUICE_* environment variables):';

export function connectionOptions<T>(y: Argv<T>): Argv<T & ConnectionArgs & JsonArgs> {
  return y
    .option('url', {
      type: 'string',
      group: GROUP,
      describe: 'Service root, e.g. https://host/v4 [SLUICE_API_URL]',
    })
    .option('api', {
      type: 'string',
      choices: ['v4', 'v3'],
      group: GROUP,
      describe: 'API version (default: from the URL)',
    })
    .option('email', { type: 'string', group: GROUP, describe: 'v4 login email [SLUICE_EMAIL]' })
    .option('password', {
      type: 'string',
      group: GROUP,
      describe: 'v4 login password [SLUICE_PASSWORD]',
    })
    .option('token', {
      type: 'string',
      group: GROUP,
      describe: 'API token: v3, or v4 instead of email and password [SLUICE_API_TOKEN]',
    })
    .option('json', {
      type: 'boolean',
      default: false,
      describe: 'Print one JSON document on stdout',
    }) as Argv<T & ConnectionArgs & JsonArgs>;
}

/** Settings from flags first, then the context's environment (never process.env directly). */
export function settingsFrom(args: ConnectionArgs, env: NodeJS.ProcessEnv): ConnectionSettings {
  const overrides: Partial<ConnectionSettings> = {};
  if (args.url !== undefined) overrides.url = args.url;
  if (args.api !== undefined) overrides.api = args.api;
  if (args.email !== undefined) overrides.email = args.email;
  if (args.password !== undefined) overrides.password = args.password;
  if (args.token !== undefined) overrides.token = args.token;
  return connectionFromEnv(env, overrides);
}

/**
 * Builds a client from the flags and environment, runs one command with it and closes it,
 * whatever happens. Credential problems surface as UsageError before any request is made.
 */
export async function withClient<R>(
  args: ConnectionArgs,
  ctx: CliContext,
  run: (client: ServiceClient) => Promise<R>,
): Promise<R> {
  const clock = ctx.clock;
  const client = createServiceClient(settingsFrom(args, ctx.env), {
    onEvent: logClientEvent(ctx.logger),
    onExchange: logExchange(ctx.logger),
    ...(clock ? { now: () => clock.now() } : {}),
  });
  try {
    return await run(client);
  } finally {
    await client.close();
  }
}
