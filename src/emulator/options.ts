import type { CreditType } from '../catalog.js';

export type WireMode = 'contract' | 'real';

export interface EmulatorOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  seed: number;
  /** Multiplies the default data sizes (20k properties, 10k businesses, 5k products, 15k people). */
  scale: number;
  wire: WireMode;
  /** Fault specification, see faults.ts (`503=0.1,429=0.05,cut=0.2`). */
  faults: string;
  email: string;
  password: string;
  /** The v3 API token (basic-auth user name). */
  token: string;
  /** Lifetime of a v4 bearer token. */
  tokenTtlMs: number;
  /** Lifetime of a signed result-file URL (the service's is 7 days). */
  fileTtlMs: number;
  /** Records per result file. */
  fileRecords: number;
  /** How long a new download stays queued before it runs. */
  queueMs: number;
  /** Download progress, in records per second of emulator time. */
  rate: number;
  /** Credits allotted per data type when the emulator starts or is reset. */
  credits: Record<CreditType, number>;
  /** Serve result files gzip-encoded to clients that accept it (the live service does not). */
  gzipFiles: boolean;
  /** Where result files are written before they are served; a fresh temp dir by default. */
  spoolDir?: string;
  /** Key for signing file URLs; random per start unless given. */
  signingKey?: string;
  /** Called once per request with a line for a log; quiet when absent. */
  log?: (line: string) => void;
}

export const DEFAULT_CREDENTIALS = {
  email: 'demo@sluice.test',
  password: 'sluice-demo',
  token: 'sluice-demo-token',
} as const;

export const DEFAULT_OPTIONS: EmulatorOptions = {
  host: '127.0.0.1',
  port: 8787,
  seed: 1,
  scale: 1,
  wire: 'contract',
  faults: '',
  ...DEFAULT_CREDENTIALS,
  tokenTtlMs: 60 * 60 * 1000,
  fileTtlMs: 7 * 24 * 60 * 60 * 1000,
  fileRecords: 10_000,
  queueMs: 500,
  rate: 20_000,
  gzipFiles: false,
  credits: { business: 1_000_000, people: 1_000_000, product: 1_000_000, property: 1_000_000 },
};

export function resolveOptions(partial: Partial<EmulatorOptions> = {}): EmulatorOptions {
  const defined = Object.fromEntries(
    Object.entries(partial).filter(([, value]) => value !== undefined),
  ) as Partial<EmulatorOptions>;
  const options = { ...DEFAULT_OPTIONS, ...defined };
  options.credits = { ...DEFAULT_OPTIONS.credits, ...defined.credits };
  const positive: (keyof EmulatorOptions)[] = ['scale', 'fileRecords', 'rate'];
  for (const key of positive) {
    const value = options[key];
    if (typeof value !== 'number' || !(value > 0)) {
      throw new RangeError(
        `emulator option ${key} must be a positive number, got ${String(value)}`,
      );
    }
  }
  if (options.wire !== 'contract' && options.wire !== 'real') {
    throw new RangeError(`emulator option wire must be contract or real, got ${options.wire}`);
  }
  return options;
}
