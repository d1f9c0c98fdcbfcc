import type { FastifyInstance } from 'fastify';
import type { EmulatorContext } from '../../service.js';
import { type Account, accountBody } from '../../state.js';
import { bodySchema, text } from './body-schemas.js';

interface AccountChange {
  email?: string;
  password?: string;
  first_name?: string;
  last_name?: string;
}

/** `GET /account` and `PUT /account`, which tells the account's old address what changed. */
export function registerAccount(v4: FastifyInstance, ctx: EmulatorContext): void {
  v4.get('/account', async () => accountBody(ctx.state.account));

  v4.put<{ Body: AccountChange }>(
    '/account',
    {
      schema: {
        body: bodySchema(ctx.forms, [], {
          email: { type: 'string', minLength: 3, maxLength: 320, pattern: '^[^@\\s]+@[^@\\s]+$' },
          password: { type: 'string', minLength: 8, maxLength: 1000 },
          first_name: text(200),
          last_name: text(200),
        }),
      },
    },
    async (request) => {
      const account = ctx.state.account;
      const previous = account.email;
      const changes = changeAccount(ctx, account, request.body);
      if (changes.length > 0) {
        ctx.state.outbox.push({
          to: previous,
          subject: 'Your account details were changed',
          body: `The following changes were made to your account: ${changes.join(', ')}.`,
          time: new Date(ctx.clock.now()).toISOString(),
        });
      }
      return accountBody(account);
    },
  );
}

/** Applies a change to the account; what it says of the email and password changes. */
function changeAccount(ctx: EmulatorContext, account: Account, change: AccountChange): string[] {
  const { email, password, first_name, last_name } = change;
  const changes: string[] = [];
  if (email !== undefined && email !== account.email) {
    account.email = email;
    changes.push(`email changed to ${email}`);
  }
  if (password !== undefined) {
    account.password = password;
    ctx.state.passwordGeneration += 1;
    changes.push('password changed');
  }
  if (first_name !== undefined) account.first_name = first_name;
  if (last_name !== undefined) account.last_name = last_name;
  return changes;
}
