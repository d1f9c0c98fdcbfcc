import { setTimeout as delay } from 'node:timers/promises';

/** Waits `ms`, or rejects with the signal's reason as soon as it is aborted. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  await delay(ms, undefined, signal ? { signal } : {});
}
