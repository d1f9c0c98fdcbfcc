/**
 * Faults on request, so clients can be tested against what real networks and services do.
 *
 * Two sources, both deterministic:
 * - a rate spec (`--faults`, e.g. `503=0.1,429=0.05,cut=0.3,slow=0.1,slow_ms=800,retry_after=1`)
 *   drawn from a PRNG seeded with the emulator's seed, one draw per request in arrival order;
 * - a script of rules posted to `/_emulator/faults`, each applied to the next `times` requests it
 *   matches, for tests that need "exactly these two requests fail".
 */

export type FaultAction =
  /** Answer with an error status before doing anything. */
  | { kind: 'status'; status: number; retryAfter?: number }
  /** Drop the connection before doing anything. */
  | { kind: 'reset' }
  /** Do the work, then drop the connection instead of answering: an ambiguous failure. */
  | { kind: 'reset-after' }
  /** Result files only: send part of the body, then drop the connection. */
  | { kind: 'cut'; afterBytes?: number }
  | { kind: 'slow'; delayMs: number };

export interface FaultRule {
  /** `METHOD /path-prefix`, `/path-prefix`, or `*`. */
  match: string;
  action: FaultAction;
  /** How many more matching requests it applies to. */
  remaining: number;
}

export interface FaultSpec {
  statusRates: { status: number; rate: number }[];
  reset: number;
  cut: number;
  slow: number;
  slowMs: number;
  retryAfter: number;
  /** Share of records written malformed into result files (deterministic by position). */
  corrupt: number;
}

const STATUS_KEYS = new Set(['429', '500', '502', '503', '504']);

export function parseFaultSpec(spec: string): FaultSpec {
  const out: FaultSpec = {
    statusRates: [],
    reset: 0,
    cut: 0,
    slow: 0,
    slowMs: 1000,
    retryAfter: 1,
    corrupt: 0,
  };
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [key, raw] = part.split('=', 2).map((p) => p.trim());
    const value = Number(raw);
    if (!key || raw === undefined || raw === '' || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`bad fault '${part}': expected key=number, e.g. 503=0.1`);
    }
    const isRate = STATUS_KEYS.has(key) || ['reset', 'cut', 'slow', 'corrupt'].includes(key);
    if (isRate && value > 1) throw new RangeError(`bad fault '${part}': a rate is between 0 and 1`);
    if (STATUS_KEYS.has(key)) out.statusRates.push({ status: Number(key), rate: value });
    else if (key === 'reset') out.reset = value;
    else if (key === 'cut') out.cut = value;
    else if (key === 'slow') out.slow = value;
    else if (key === 'corrupt') out.corrupt = value;
    else if (key === 'slow_ms') out.slowMs = value;
    else if (key === 'retry_after') out.retryAfter = value;
    else {
      throw new RangeError(
        `unknown fault '${key}': use 429, 500, 502, 503, 504, reset, cut, slow, corrupt (rates) or slow_ms, retry_after`,
      );
    }
  }
  return out;
}

/** Parses one scripted rule as posted to the control API; throws RangeError with the reason. */
export function parseFaultRule(input: unknown): FaultRule {
  if (typeof input !== 'object' || input === null)
    throw new RangeError('a fault rule is an object');
  const rule = input as Record<string, unknown>;
  const match = typeof rule.match === 'string' ? rule.match : '*';
  const times = rule.times === undefined ? 1 : Number(rule.times);
  if (!Number.isInteger(times) || times < 1)
    throw new RangeError('times must be a positive integer');
  const action = String(rule.action ?? '');
  let parsed: FaultAction;
  if (/^\d{3}$/.test(action)) {
    const retryAfter = rule.retry_after === undefined ? undefined : Number(rule.retry_after);
    parsed = {
      kind: 'status',
      status: Number(action),
      ...(retryAfter === undefined ? {} : { retryAfter }),
    };
  } else if (action === 'reset' || action === 'reset-after') {
    parsed = { kind: action };
  } else if (action === 'cut') {
    const afterBytes = rule.after_bytes === undefined ? undefined : Number(rule.after_bytes);
    parsed = { kind: 'cut', ...(afterBytes === undefined ? {} : { afterBytes }) };
  } else if (action === 'slow') {
    parsed = { kind: 'slow', delayMs: Number(rule.delay_ms ?? 1000) };
  } else {
    throw new RangeError(
      `unknown fault action '${action}': use a status such as 503, reset, reset-after, cut or slow`,
    );
  }
  return { match, action: parsed, remaining: times };
}

/** Small, fast, seedable PRNG (mulberry32): the same seed gives the same fault sequence. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class FaultInjector {
  #spec: FaultSpec;
  #rules: FaultRule[] = [];
  #random: () => number;
  readonly #seed: number;

  constructor(spec: string, seed: number) {
    this.#spec = parseFaultSpec(spec);
    this.#seed = seed;
    this.#random = mulberry32(seed);
  }

  configure(spec: string | undefined, rules: FaultRule[] | undefined): void {
    if (spec !== undefined) this.#spec = parseFaultSpec(spec);
    if (rules !== undefined) this.#rules = rules;
    this.#random = mulberry32(this.#seed);
  }

  clear(): void {
    this.configure('', []);
  }

  /** Share of records to write malformed into result files rendered from now on. */
  get corruptRate(): number {
    return this.#spec.corrupt;
  }

  describe(): { spec: FaultSpec; rules: FaultRule[] } {
    return { spec: this.#spec, rules: this.#rules };
  }

  /** The fault for this request, if any. `isFile` marks result-file downloads. */
  pick(method: string, path: string, isFile: boolean): FaultAction | undefined {
    for (const rule of this.#rules) {
      if (rule.remaining > 0 && matches(rule.match, method, path)) {
        if (rule.action.kind === 'cut' && !isFile) continue;
        rule.remaining -= 1;
        return rule.action;
      }
    }
    const spec = this.#spec;
    // One draw per request whatever the spec, so the sequence depends only on the seed and order.
    const draw = this.#random();
    let edge = 0;
    for (const { status, rate } of spec.statusRates) {
      edge += rate;
      if (draw < edge) {
        return status === 429 || status === 503
          ? { kind: 'status', status, retryAfter: spec.retryAfter }
          : { kind: 'status', status };
      }
    }
    edge += spec.reset;
    if (draw < edge) return { kind: 'reset' };
    edge += spec.slow;
    if (draw < edge) return { kind: 'slow', delayMs: spec.slowMs };
    if (isFile && spec.cut > 0 && this.#random() < spec.cut) return { kind: 'cut' };
    return undefined;
  }
}

function matches(pattern: string, method: string, path: string): boolean {
  if (pattern === '*' || pattern === '') return true;
  const space = pattern.indexOf(' ');
  if (space > 0) {
    return (
      pattern.slice(0, space).toUpperCase() === method && path.startsWith(pattern.slice(space + 1))
    );
  }
  return path.startsWith(pattern);
}
