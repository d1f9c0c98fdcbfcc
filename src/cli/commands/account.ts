import type { Argv } from 'yargs';
import { CREDIT_TYPES, type CreditType } from '../../catalog.js';
import type {
  AccountChanges,
  AccountInfo,
  AccountPlan,
  ServiceClient,
} from '../../client/types.js';
import { UsageError } from '../../errors.js';
import { connectionOptions, type JsonArgs, withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import { formatTable, type Io, writeJson, writeLine } from '../output.js';

export interface AccountDocument {
  email: string;
  first_name: string | null;
  last_name: string | null;
  /** `per-type` allotments, or a `legacy` plan with one total counter (`total_used`). */
  plan: AccountPlan;
  credits: Record<CreditType, { allotted: number; used: number; remaining: number }>;
  /** `num_credits_used` of legacy plans; null when the service does not send it. */
  total_used: number | null;
}

export function accountDocument(info: AccountInfo): AccountDocument {
  const credits = {} as AccountDocument['credits'];
  for (const type of CREDIT_TYPES) {
    const c = info.credits[type];
    credits[type] = { allotted: c.allotted, used: c.used, remaining: c.remaining };
  }
  return {
    email: info.email,
    first_name: info.firstName ?? null,
    last_name: info.lastName ?? null,
    plan: info.plan,
    credits,
    total_used: info.totalUsed ?? null,
  };
}

/** `sluice account`: who is signed in and the credits of each data type. */
export async function accountCommand(
  client: ServiceClient,
  args: JsonArgs,
  io: Io,
  signal?: AbortSignal,
): Promise<AccountDocument> {
  const doc = accountDocument(await client.account({ signal }));
  if (args.json) writeJson(io.stdout, doc);
  else printAccount(doc, io);
  return doc;
}

function printAccount(doc: AccountDocument, io: Io): void {
  const name = [doc.first_name, doc.last_name].filter(Boolean).join(' ');
  writeLine(io.stdout, `Account ${doc.email}${name ? ` (${name})` : ''}`);
  if (doc.plan === 'legacy') {
    // Its per-type fields are zeros: a table of them would say nothing is left of anything.
    writeLine(
      io.stdout,
      'Legacy plan: one total for every data type; the service does not say how much is left.',
    );
    writeLine(io.stdout, `Total used: ${(doc.total_used ?? 0).toLocaleString('en-US')} credits`);
    return;
  }
  writeLine(
    io.stdout,
    formatTable(
      ['credits', 'allotted', 'used', 'remaining'],
      CREDIT_TYPES.map((t) => [
        t,
        doc.credits[t].allotted,
        doc.credits[t].used,
        doc.credits[t].remaining,
      ]),
    ),
  );
  if (doc.total_used !== null) {
    writeLine(
      io.stdout,
      `Total used (legacy plan counter): ${doc.total_used.toLocaleString('en-US')}`,
    );
  }
}

export interface AccountUpdateArgs extends JsonArgs {
  'new-email'?: string;
  'new-password'?: string;
  'first-name'?: string;
  'last-name'?: string;
}

export interface AccountUpdateDocument {
  /** What was asked to change; never the new password itself. */
  changed: ('email' | 'password' | 'first_name' | 'last_name')[];
  account: AccountDocument;
}

/** `sluice account update`: changes only what is given; the password is never echoed. */
export async function accountUpdateCommand(
  client: ServiceClient,
  args: AccountUpdateArgs,
  io: Io,
  signal?: AbortSignal,
): Promise<AccountUpdateDocument> {
  const changes: AccountChanges = {};
  if (args['new-email'] !== undefined) changes.email = args['new-email'];
  if (args['new-password'] !== undefined) changes.password = args['new-password'];
  if (args['first-name'] !== undefined) changes.firstName = args['first-name'];
  if (args['last-name'] !== undefined) changes.lastName = args['last-name'];
  const changed = Object.keys(changes).map((key) =>
    key === 'firstName' ? 'first_name' : key === 'lastName' ? 'last_name' : key,
  ) as AccountUpdateDocument['changed'];
  if (changed.length === 0) {
    throw new UsageError(
      'nothing to change: give --new-email, --new-password, --first-name or --last-name',
    );
  }
  const account = accountDocument(await client.updateAccount(changes, { signal }));
  const doc: AccountUpdateDocument = { changed, account };
  if (args.json) {
    writeJson(io.stdout, doc);
    return doc;
  }
  const said: string[] = [];
  if (changes.email !== undefined) said.push(`email is now ${account.email}`);
  if (changes.password !== undefined) said.push('password changed');
  if (changes.firstName !== undefined || changes.lastName !== undefined) {
    said.push(`name is now ${[account.first_name, account.last_name].filter(Boolean).join(' ')}`);
  }
  writeLine(io.stdout, `Account updated: ${said.join('; ')}.`);
  if (changes.email !== undefined || changes.password !== undefined) {
    writeLine(io.stdout, 'The service sends a notice of the change to the previous email address.');
    if (changes.password !== undefined) {
      writeLine(io.stdout, 'Use the new password from now on (SLUICE_PASSWORD or --password).');
    }
  }
  return doc;
}

export function registerAccount(y: Argv, ctx: CliContext): Argv {
  return y.command('account', 'Show the account and its credits, or update it', (account) =>
    connectionOptions(account)
      .command(
        '$0',
        'Show the account: allotted, used and remaining credits per data type',
        (c) => c,
        async (args) => {
          await withClient(args, ctx, (client) => accountCommand(client, args, ctx.io, ctx.signal));
        },
      )
      .command(
        'update',
        'Change the email, password or name of the account',
        (c) =>
          c
            .option('new-email', { type: 'string', describe: 'New email address' })
            .option('new-password', {
              type: 'string',
              describe: 'New password (at least 8 characters)',
            })
            .option('first-name', { type: 'string', describe: 'First name' })
            .option('last-name', { type: 'string', describe: 'Last name' }),
        async (args) => {
          await withClient(args, ctx, (client) =>
            accountUpdateCommand(client, args, ctx.io, ctx.signal),
          );
        },
      ),
  );
}
