import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp, loadFastify } from './app.js';
import { Dataset } from './data/dataset.js';
import { EmulatorClock } from './emulator-clock.js';
import { FaultInjector } from './faults.js';
import { type EmulatorOptions, resolveOptions } from './options.js';
import { FileSpool } from './render.js';
import type { EmulatorContext } from './service.js';
import { UrlSigner } from './signing.js';
import { EmulatorState } from './state.js';
import { WIRE_FORMS } from './wire.js';
import { ExtraFields } from './world/extra-fields.js';
import { SearchEngine } from './world/search.js';
import { World } from './world/world.js';

export {
  type AccountPlan,
  DEFAULT_CREDENTIALS,
  DEFAULT_OPTIONS,
  type EmulatorOptions,
  type WireMode,
} from './options.js';

export interface RunningEmulator {
  /** `http://host:port`, the origin. */
  url: string;
  /** The v4 root (`.../v4`) and the v3 root (`.../v3`). */
  v4Url: string;
  v3Url: string;
  options: EmulatorOptions;
  /** The emulator's own state, for in-process tests and tools. */
  context: EmulatorContext;
  close(): Promise<void>;
}

export async function createEmulator(partial: Partial<EmulatorOptions> = {}): Promise<{
  app: FastifyInstance;
  context: EmulatorContext;
}> {
  const options = resolveOptions(partial);
  const clock = new EmulatorClock();
  const context: EmulatorContext = {
    options,
    forms: WIRE_FORMS[options.wire],
    clock,
    state: new EmulatorState(clock, {
      email: options.email,
      password: options.password,
      credits: options.credits,
      plan: options.plan,
      totalCredits: options.totalCredits,
      queueMs: options.queueMs,
      rate: options.rate,
    }),
    engine: new SearchEngine(
      new World(
        new Dataset({ seed: options.seed, scale: options.scale }),
        options.churn,
        clock.startedAt,
        ExtraFields.parse(options.extraFields),
      ),
    ),
    spool: new FileSpool(options.spoolDir ?? mkdtempSync(join(tmpdir(), 'sluice-emulator-'))),
    faults: new FaultInjector(options.faults, options.seed),
    signer: new UrlSigner(options.signingKey ?? randomBytes(32).toString('hex')),
  };
  return { app: buildApp(context, await loadFastify()), context };
}

/** Starts the emulator on `host:port` (port 0 picks a free one). */
export async function startEmulator(
  partial: Partial<EmulatorOptions> = {},
): Promise<RunningEmulator> {
  const { app, context } = await createEmulator({ port: 0, ...partial });
  const { host, port } = context.options;
  await app.listen({ host, port });
  const address = app.server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const url = `http://${hostPart}:${actualPort}`;
  return {
    url,
    v4Url: `${url}/v4`,
    v3Url: `${url}/v3`,
    options: context.options,
    context,
    async close() {
      await app.close();
      await context.spool.clear();
    },
  };
}
