import type { FastifyInstance } from 'fastify';
import type { EmulatorContext } from '../service.js';
import { registerAccount } from './v4/account.js';
import { registerAuth } from './v4/auth.js';
import { registerDownloads } from './v4/downloads.js';
import { registerScrape } from './v4/scrape.js';
import { registerSearches } from './v4/searches.js';
import { registerTargetedUpdates } from './v4/targeted-updates.js';
import { registerViews } from './v4/views.js';

/** The v4 API under `/v4`, one resource a file (routes/v4/); the login and tokens first. */
export function registerV4(app: FastifyInstance, ctx: EmulatorContext): void {
  app.register(
    async (v4) => {
      registerAuth(v4, ctx);
      v4.get('/health', async () => ({ status: 'ok' }));
      registerAccount(v4, ctx);
      registerViews(v4, ctx);
      registerSearches(v4, ctx);
      registerDownloads(v4, ctx);
      registerTargetedUpdates(v4, ctx);
      registerScrape(v4, ctx);
    },
    { prefix: '/v4' },
  );
}
