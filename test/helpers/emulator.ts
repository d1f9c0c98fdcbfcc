import {
  type EmulatorOptions,
  type RunningEmulator,
  startEmulator,
  type WireMode,
} from '../../src/emulator/index.js';
import { WIRE_MODES } from '../../src/emulator/options.js';

export interface FaultRuleInput {
  /** `METHOD /path-prefix`, `/path-prefix` or `*`. */
  match: string;
  /** A status (`'503'`), `reset`, `reset-after`, `cut` or `slow`. */
  action: string;
  times?: number;
  retry_after?: number;
  delay_ms?: number;
  after_bytes?: number;
}

export interface LoggedRequest {
  method: string;
  path: string;
  status: number;
  time: string;
  duration_ms: number;
  /** What a search sent: a v4 search's JSON body, a v3 data request's query parameters. */
  sent?: Record<string, unknown>;
}

/**
 * The wire mode of emulators whose test does not name one: SLUICE_TEST_WIRE, or the emulator's
 * default (live). CI runs the end-to-end files once more with SLUICE_TEST_WIRE=contract, so that
 * sluice is shown to work against both the live service's forms and the contract's.
 */
export function testWire(env: NodeJS.ProcessEnv = process.env): WireMode | undefined {
  const wire = env.SLUICE_TEST_WIRE;
  if (wire === undefined || wire === '') return undefined;
  if (!(WIRE_MODES as readonly string[]).includes(wire))
    throw new Error(`SLUICE_TEST_WIRE must be one of ${WIRE_MODES.join(', ')}, got '${wire}'`);
  return wire as WireMode;
}

/**
 * A running emulator on a free port, driven through its control API over real HTTP, as a user's
 * tests would drive it. Tests start one per file in `before()` and close it in `after()`.
 */
export class EmulatorHarness {
  private constructor(readonly emulator: RunningEmulator) {}

  static async start(options: Partial<EmulatorOptions> = {}): Promise<EmulatorHarness> {
    return new EmulatorHarness(
      await startEmulator({ port: 0, queueMs: 50, rate: 100_000, wire: testWire(), ...options }),
    );
  }

  get url(): string {
    return this.emulator.url;
  }
  get v4Url(): string {
    return this.emulator.v4Url;
  }
  get v3Url(): string {
    return this.emulator.v3Url;
  }
  get credentials() {
    const { email, password, token } = this.emulator.options;
    return { email, password, token };
  }

  async control<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.url}/_emulator/${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`control ${method} ${path} -> ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  }

  reset(): Promise<unknown> {
    return this.control('POST', 'reset');
  }
  setCredits(credits: Record<string, number>): Promise<unknown> {
    return this.control('PUT', 'credits', credits);
  }
  advanceClock(ms: number): Promise<unknown> {
    return this.control('POST', 'clock', { advance_ms: ms });
  }
  expireFiles(): Promise<unknown> {
    return this.control('POST', 'expire-files');
  }
  faults(rules: FaultRuleInput[], spec?: string): Promise<unknown> {
    return this.control('POST', 'faults', spec === undefined ? { rules } : { rules, spec });
  }
  clearFaults(): Promise<unknown> {
    return this.control('DELETE', 'faults');
  }
  requests(): Promise<LoggedRequest[]> {
    return this.control('GET', 'requests');
  }
  outbox(): Promise<{ to: string; subject: string; body: string }[]> {
    return this.control('GET', 'outbox');
  }

  /** Cancels a download as its owner would on the service (logged in over v4): not by sluice. */
  async cancelDownload(publicId: string): Promise<number> {
    const { email, password } = this.credentials;
    const login = await fetch(`${this.v4Url}/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const { token } = (await login.json()) as { token: string };
    const cancelled = await fetch(`${this.v4Url}/downloads/${publicId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });
    return cancelled.status;
  }

  close(): Promise<void> {
    return this.emulator.close();
  }

  /**
   * A clock for a run that moves this emulator's time instead of waiting: each sleep of the
   * run advances both at once, so polling a slow download takes no real time. `pace`: the part
   * of each sleep the clocks move (below 1, a run's jobs poll more often for the same time, so
   * that the real time other work takes meanwhile weighs less).
   */
  clock(pace = 1): { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<void> } {
    let offset = 0;
    return {
      now: () => Date.now() + offset,
      sleep: async (ms, signal) => {
        signal?.throwIfAborted();
        const step = Math.ceil(ms * pace);
        offset += step;
        await this.advanceClock(step);
      },
    };
  }
}
