import { randomBytes, randomInt } from 'node:crypto';
import { CREDIT_TYPE_OF, CREDIT_TYPES, type CreditType, type DataType } from '../catalog.js';
import type { EmulatorClock } from './emulator-clock.js';
import type { AccountPlan } from './options.js';
import type { View } from './views.js';
import type { ExtraFields } from './world/extra-fields.js';
import type { MatchSet } from './world/search.js';

/** An error the emulator answers with; routes throw it and the error handler shapes the body. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details: { field: string; message: string }[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export interface Account {
  email: string;
  password: string;
  first_name: string;
  last_name: string;
  /**
   * `per-type`: each data type has its allotment (`allotted`, `used`). `legacy`: the older
   * plans, with no allotment per data type (those fields answer 0) and one total for every
   * type instead (`total`), which `num_credits_used` counts. The per-type figures are kept
   * meanwhile, for a switch back.
   */
  plan: AccountPlan;
  allotted: Record<CreditType, number>;
  used: Record<CreditType, number>;
  /** A legacy plan's total: the credits it allows, and what was used of them. */
  total: { allotted: number; used: number };
}

export type DownloadStatus = 'queued' | 'in_progress' | 'completed' | 'cancelled';

export interface Download {
  /** Integer id: the v3 request id, and the v4 id where the wire form has integer ids. */
  seq: number;
  /** String id of the v4 contract form. */
  publicId: string;
  api: 'v3' | 'v4';
  type: DataType;
  query: string;
  view: string;
  viewFields: string[] | undefined;
  format: 'csv' | 'json';
  autoTrace: boolean;
  addressMatching: string;
  onlyTraceable: boolean;
  /** What the caller asked for (v3 `records`), empty when all. */
  recordsParam: string;
  /** Records this download will deliver: min(requested, found). */
  target: number;
  numFound: number;
  /** The records found as of `createdAt`, which the files hold as they were then. */
  matches: MatchSet;
  /** The extra fields served when it started, which its files hold. */
  extras: ExtraFields;
  createdAt: number;
  /** Records delivered when it was cancelled. */
  cancelled?: { at: number; delivered: number };
  /** Records already charged for. */
  charged: number;
}

export interface TargetedUpdate {
  id: string;
  query: string;
  data_type: DataType;
  num_records: number;
  createdAt: number;
  total_cost: number;
}

export interface LoggedRequest {
  method: string;
  path: string;
  time: string;
  /** 0 when no answer was sent (the connection was dropped). */
  status: number;
  duration_ms: number;
  /**
   * What a search asked for, as received: the JSON body of a v4 search (never a login's or an
   * account's, which carry a password), the query parameters of a v3 data request.
   */
  sent?: Record<string, unknown>;
}

export interface OutboxMessage {
  to: string;
  subject: string;
  body: string;
  time: string;
}

/** Everything the emulator remembers; `reset()` returns it to the state it started in. */
export class EmulatorState {
  account!: Account;
  readonly views = new Map<string, View>();
  readonly downloads: Download[] = [];
  readonly updates: TargetedUpdate[] = [];
  readonly outbox: OutboxMessage[] = [];
  readonly requests: LoggedRequest[] = [];
  /** Bearer token -> when it expires, and the password generation it was issued for. */
  readonly tokens = new Map<string, { expiresAt: number; generation: number }>();
  /** Bumped on a password change so every older token stops working. */
  passwordGeneration = 0;
  /** File URLs of an older generation answer 403; `POST /_emulator/expire-files` bumps it. */
  fileUrlGeneration = 0;
  /**
   * Mixed into download ids, drawn anew at start and on reset: like the real service's, an id is
   * never reused, so a client's state from an earlier emulator never matches a new download.
   */
  idSalt = 0;
  #nextSeq = 1;

  constructor(
    readonly clock: EmulatorClock,
    private readonly initial: {
      email: string;
      password: string;
      credits: Record<CreditType, number>;
      plan: AccountPlan;
      totalCredits: number;
      queueMs: number;
      rate: number;
    },
  ) {
    this.reset();
  }

  reset(): void {
    this.account = {
      email: this.initial.email,
      password: this.initial.password,
      first_name: 'Demo',
      last_name: 'User',
      plan: this.initial.plan,
      allotted: { ...this.initial.credits },
      used: { business: 0, people: 0, product: 0, property: 0 },
      total: { allotted: this.initial.totalCredits, used: 0 },
    };
    this.views.clear();
    this.downloads.length = 0;
    this.updates.length = 0;
    this.outbox.length = 0;
    this.requests.length = 0;
    this.tokens.clear();
    this.passwordGeneration = 0;
    // Never back to 0: URLs issued before a reset must not open the files of new downloads.
    this.fileUrlGeneration += 1;
    this.idSalt = randomInt(0x7fffffff);
    this.#nextSeq = 1;
  }

  nextSeq(): number {
    return this.#nextSeq++;
  }

  issueToken(ttlMs: number): string {
    const token = randomBytes(24).toString('base64url');
    this.tokens.set(token, {
      expiresAt: this.clock.now() + ttlMs,
      generation: this.passwordGeneration,
    });
    return token;
  }

  tokenIsValid(token: string): boolean {
    const entry = this.tokens.get(token);
    return (
      entry !== undefined &&
      entry.expiresAt > this.clock.now() &&
      entry.generation === this.passwordGeneration
    );
  }

  remaining(type: CreditType): number {
    return this.account.allotted[type] - this.account.used[type];
  }

  /** Whether the account may search a data type: a legacy plan's total covers every type. */
  hasPlan(type: CreditType): boolean {
    return this.account.plan === 'legacy' || this.account.allotted[type] > 0;
  }

  /**
   * Credits that running downloads will still take. A new search must fit in what is left
   * after them, so two downloads cannot together overspend an allotment.
   */
  committed(type: CreditType): number {
    const now = this.clock.now();
    let sum = 0;
    for (const d of this.downloads) {
      if (d.cancelled || this.progress(d, now) >= d.target) continue;
      if (creditTypesOf(d.type, d.autoTrace).includes(type)) sum += d.target - d.charged;
    }
    return sum;
  }

  /** Refuses, before any record is delivered, a request that needs more credits than are left. */
  requireCredits(type: DataType, autoTrace: boolean, records: number): void {
    if (this.account.plan === 'legacy') {
      this.requireTotal(creditTypesOf(type, autoTrace).length * records);
      return;
    }
    for (const credit of creditTypesOf(type, autoTrace)) {
      const available = this.remaining(credit) - this.committed(credit);
      if (records > available) {
        throw new HttpProblem(
          402,
          `Not enough ${credit} credits: this request needs ${records}, ${Math.max(0, available)} remain`,
          [
            {
              field: 'num_records',
              message: `exceeds the ${credit} credits left (${Math.max(0, available)})`,
            },
          ],
        );
      }
    }
  }

  /** A legacy plan's refusal: the request would take the total past what the plan allows. */
  private requireTotal(needed: number): void {
    const { allotted, used } = this.account.total;
    const committed = CREDIT_TYPES.reduce((sum, t) => sum + this.committed(t), 0);
    const available = Math.max(0, allotted - used - committed);
    if (needed > available) {
      throw new HttpProblem(
        402,
        `Not enough credits: this request needs ${needed}, ${available} remain on the plan`,
        [{ field: 'num_records', message: `exceeds the credits left on the plan (${available})` }],
      );
    }
  }

  charge(type: DataType, autoTrace: boolean, records: number): void {
    for (const credit of creditTypesOf(type, autoTrace)) {
      if (this.account.plan === 'legacy') this.account.total.used += records;
      else this.account.used[credit] += records;
    }
  }

  progress(d: Download, now: number): number {
    if (d.cancelled) return d.cancelled.delivered;
    const running = now - d.createdAt - this.initial.queueMs;
    if (running < 0) return 0;
    return Math.min(d.target, Math.floor((running * this.initial.rate) / 1000));
  }

  status(d: Download, now: number): DownloadStatus {
    if (d.cancelled) return 'cancelled';
    if (now - d.createdAt < this.initial.queueMs) return 'queued';
    return this.progress(d, now) >= d.target ? 'completed' : 'in_progress';
  }

  /** Records whose files can be fetched: all once completed, those so far once cancelled. */
  deliverable(d: Download, now: number): number {
    const status = this.status(d, now);
    if (status === 'completed') return d.target;
    if (status === 'cancelled') return d.cancelled!.delivered;
    return 0;
  }

  /** Charges downloads for the records delivered since the last look. */
  settle(): void {
    const now = this.clock.now();
    for (const d of this.downloads) {
      const done = this.progress(d, now);
      if (done > d.charged) {
        this.charge(d.type, d.autoTrace, done - d.charged);
        d.charged = done;
      }
    }
  }

  cancel(d: Download): void {
    const now = this.clock.now();
    d.cancelled = { at: now, delivered: this.progress(d, now) };
    this.settle();
  }

  findDownload(id: string): Download | undefined {
    return this.downloads.find((d) => d.publicId === id || String(d.seq) === id);
  }
}

export function creditTypesOf(type: DataType, autoTrace: boolean): CreditType[] {
  return autoTrace ? ['property', 'people'] : [CREDIT_TYPE_OF[type]];
}

export function accountBody(account: Account): Record<string, unknown> {
  const legacy = account.plan === 'legacy';
  const body: Record<string, unknown> = {
    email: account.email,
    first_name: account.first_name,
    last_name: account.last_name,
    num_credits_used: legacy
      ? account.total.used
      : CREDIT_TYPES.reduce((sum, t) => sum + account.used[t], 0),
  };
  // A legacy plan's per-type fields are there, and zero: it has no allotment per data type.
  for (const t of CREDIT_TYPES) {
    body[`${t}_credits_allotted`] = legacy ? 0 : account.allotted[t];
    body[`${t}_credits_used`] = legacy ? 0 : account.used[t];
  }
  return body;
}
