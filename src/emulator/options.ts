import type { CreditType } from '../catalog.js';

/**
 * What the emulator answers in (wire.ts has the forms of each):
 * - `live`: the forms the live service sends its customers today, the ones the vendor's guides
 *   and the clients written from them expect; it also accepts what those clients send.
 * - `contract`: the forms of the interface document, strictly, in and out.
 * - `real`: `live`, plus every older variant real clients have met, all at once.
 */
export const WIRE_MODES = ['live', 'contract', 'real'] as const;
export type WireMode = (typeof WIRE_MODES)[number];

/**
 * How the account is billed: an allotment per data type, or a legacy plan with one total for
 * every type (its per-type fields answer 0, `num_credits_used` counts the total).
 */
export type AccountPlan = 'per-type' | 'legacy';
export const ACCOUNT_PLANS: readonly AccountPlan[] = ['per-type', 'legacy'];

export interface EmulatorOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  seed: number;
  /** Multiplies the default data sizes (20k properties, 10k businesses, 5k products, 15k people). */
  scale: number;
  wire: WireMode;
  /**
   * Records per page of the lists (`GET /downloads`, `/views`, v3 `/requests`), or 0 for none:
   * a client that does not page then sees only the first (see routes/paging.ts).
   */
  pageSize: number;
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
  /**
   * How fast the data changes, as a fraction per day of emulator time: each record is updated
   * at this rate, and new records appear at this rate times the base size (see world/world.ts).
   */
  churn: number;
  /** Credits allotted per data type when the emulator starts or is reset. */
  credits: Record<CreditType, number>;
  /** The account's plan when the emulator starts or is reset. */
  plan: AccountPlan;
  /** A legacy plan's total for every data type: past it, a search is refused with 402. */
  totalCredits: number;
  /** Serve result files gzip-encoded to clients that accept it (the live service does not). */
  gzipFiles: boolean;
  /**
   * Fields served beyond the core ones, `TYPE.FIELD[:KIND][=VALUE|VALUE...]` (world/extra-fields.ts):
   * documented fields the emulator does not make up, or fields no catalogue lists. A bad one
   * is a RangeError when the emulator is made.
   */
  extraFields: string[];
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

/**
 * 0.2% a day: at the scale most tests use (0.05) about five updates and five new records a day
 * in all, the first of them hours after the start for the default seed (about ten minutes at
 * scale 1), so tests that move the clock by seconds or minutes see a still world.
 */
const DEFAULT_CHURN = 0.002;
/** Above 100% a day, reading a record years ahead would replay thousands of updates. */
const MAX_CHURN = 1;

export const DEFAULT_OPTIONS: EmulatorOptions = {
  host: '127.0.0.1',
  port: 8787,
  seed: 1,
  scale: 1,
  wire: 'live',
  pageSize: 0,
  faults: '',
  ...DEFAULT_CREDENTIALS,
  tokenTtlMs: 60 * 60 * 1000,
  fileTtlMs: 7 * 24 * 60 * 60 * 1000,
  fileRecords: 10_000,
  queueMs: 500,
  rate: 20_000,
  churn: DEFAULT_CHURN,
  gzipFiles: false,
  extraFields: [],
  credits: { business: 1_000_000, people: 1_000_000, product: 1_000_000, property: 1_000_000 },
  plan: 'per-type',
  totalCredits: 100_000_000,
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
  if (typeof options.churn !== 'number' || !(options.churn >= 0 && options.churn <= MAX_CHURN)) {
    throw new RangeError(
      `emulator option churn must be a fraction per day from 0 to ${MAX_CHURN}, got ${String(options.churn)}`,
    );
  }
  if (!ACCOUNT_PLANS.includes(options.plan)) {
    throw new RangeError(
      `emulator option plan must be ${ACCOUNT_PLANS.join(' or ')}, got ${String(options.plan)}`,
    );
  }
  if (!Number.isSafeInteger(options.totalCredits) || options.totalCredits < 0) {
    throw new RangeError(
      `emulator option totalCredits must be a whole number of credits, got ${String(options.totalCredits)}`,
    );
  }
  if (!(WIRE_MODES as readonly string[]).includes(options.wire)) {
    throw new RangeError(
      `emulator option wire must be one of ${WIRE_MODES.join(', ')}, got ${options.wire}`,
    );
  }
  if (!(Number.isInteger(options.pageSize) && options.pageSize >= 0)) {
    throw new RangeError(
      `emulator option pageSize must be a whole number, 0 for no paging, got ${String(options.pageSize)}`,
    );
  }
  return options;
}

const CHURN_UNITS: Record<string, number> = {
  hour: 24,
  day: 1,
  week: 1 / 7,
  month: 1 / 30,
  year: 1 / 365,
};

/**
 * A churn rate as written on the command line: a fraction (`0.002`) or a percentage (`0.2%`),
 * per day unless a unit follows (`1%/week`, `0.01/hour`); `0` turns changes off. Answers the
 * fraction per day; throws RangeError for anything else.
 */
export function parseChurn(text: string): number {
  const match =
    /^\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*(?:\/\s*(hour|day|week|month|year)s?)?\s*$/i.exec(text);
  if (!match) {
    throw new RangeError(
      `churn must be a fraction or percentage per day (0.002, 0.2%/day), got '${text}'`,
    );
  }
  const [, amount, percent, unit] = match;
  const value = Number(amount) / (percent ? 100 : 1);
  return value * CHURN_UNITS[(unit ?? 'day').toLowerCase()]!;
}
