import type { FastifyInstance } from 'fastify';
import type { EmulatorContext } from '../../service.js';
import { HttpProblem } from '../../state.js';
import { bodySchema, text } from './body-schemas.js';

/**
 * Bearer tokens on every v4 operation but the login, and the login (`POST /auth`) that issues
 * them. The check runs on onRequest, not preHandler: credentials are checked before the body is
 * parsed or validated.
 */
export function registerAuth(v4: FastifyInstance, ctx: EmulatorContext): void {
  v4.addHook('onRequest', async (request) => {
    if (request.method === 'POST' && request.routeOptions.url === '/v4/auth') return;
    const header = request.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match)
      throw new HttpProblem(
        401,
        'Missing bearer token: send Authorization: Bearer <token>, with a token from POST /auth or your API token',
      );
    // The account's API token (the one v3 takes) is a bearer token too, as the service's
    // guides use it: many customers hold only that token, copied from the web portal.
    if (match[1] !== ctx.options.token && !ctx.state.tokenIsValid(match[1]!))
      throw new HttpProblem(401, 'Invalid or expired token: authenticate again with POST /auth');
  });

  v4.post<{ Body: { email: string; password: string } }>(
    '/auth',
    {
      schema: {
        body: bodySchema(ctx.forms, ['email', 'password'], {
          email: text(320),
          password: text(1000),
        }),
      },
    },
    async (request) => {
      const { email, password } = request.body;
      const account = ctx.state.account;
      if (email.toLowerCase() !== account.email.toLowerCase() || password !== account.password) {
        throw new HttpProblem(401, 'Invalid email or password');
      }
      return { token: ctx.state.issueToken(ctx.options.tokenTtlMs) };
    },
  );
}
