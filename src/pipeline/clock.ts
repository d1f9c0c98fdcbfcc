import { sleep } from '../util/sleep.js';

/**
 * Time as the run sees it: what time it is, and waiting. Injected so that tests move time
 * instead of waiting for it (a poll timeout of hours passes in milliseconds).
 */
export interface Clock {
  now(): number;
  /** Waits `ms` of this clock's time; rejects with the signal's reason when it is aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep,
};

export function isoAt(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}
