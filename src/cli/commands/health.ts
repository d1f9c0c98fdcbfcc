import type { Argv } from 'yargs';
import type { ServiceClient } from '../../client/types.js';
import { connectionOptions, type JsonArgs, withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import { type Io, writeJson, writeLine } from '../output.js';

export interface HealthDocument {
  status: string;
  api: 'v4' | 'v3';
  url: string;
}

/** `sluice health`: the service's own status, and where it was asked. */
export async function healthCommand(
  client: ServiceClient,
  args: JsonArgs,
  io: Io,
  signal?: AbortSignal,
): Promise<HealthDocument> {
  const { status } = await client.health({ signal });
  const doc: HealthDocument = { status, api: client.api, url: client.baseUrl };
  if (args.json) writeJson(io.stdout, doc);
  else writeLine(io.stdout, `${status} (${doc.url}, API ${doc.api})`);
  return doc;
}

export function registerHealth(y: Argv, ctx: CliContext): Argv {
  return y.command(
    'health',
    'Check that the service answers',
    (c) => connectionOptions(c),
    async (args) => {
      await withClient(args, ctx, (client) => healthCommand(client, args, ctx.io, ctx.signal));
    },
  );
}
