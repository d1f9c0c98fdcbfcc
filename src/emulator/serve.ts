import type { RunningEmulator } from './index.js';

/** Serving the emulator from the command line: what it says of itself, and until when it runs. */

const DATA_TYPES = ['properties', 'businesses', 'products', 'people'] as const;

/** Records of each data type the emulator holds. */
export function dataCounts(emulator: RunningEmulator): Record<(typeof DATA_TYPES)[number], number> {
  const { dataset } = emulator.context.engine;
  return Object.fromEntries(DATA_TYPES.map((t) => [t, dataset.count(t)])) as Record<
    (typeof DATA_TYPES)[number],
    number
  >;
}

/** Where a running emulator is and how to log in: one document, as soon as it listens. */
export function emulatorSummary(emulator: RunningEmulator) {
  const { options } = emulator;
  return {
    url: emulator.url,
    v4_url: emulator.v4Url,
    v3_url: emulator.v3Url,
    control_url: `${emulator.url}/_emulator/`,
    email: options.email,
    password: options.password,
    token: options.token,
    seed: options.seed,
    wire: options.wire,
    plan: options.plan,
    ...(options.plan === 'legacy' ? { total_credits: options.totalCredits } : {}),
    page_size: options.pageSize,
    churn_per_day: options.churn,
    extra_fields: options.extraFields,
    data: dataCounts(emulator),
  };
}

/** Serves until `signal` aborts, then closes the emulator. */
export async function serveUntil(emulator: RunningEmulator, signal: AbortSignal): Promise<void> {
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await emulator.close();
}
