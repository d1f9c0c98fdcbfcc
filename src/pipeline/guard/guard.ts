import type { CreditType } from '../../catalog.js';
import type { SearchRequest, ServiceClient } from '../../client/types.js';
import type { JobSpec } from '../spec/spec.js';
import type { BudgetStanding } from './budget.js';
import {
  type AccountCredits,
  accountCredits,
  type CreditEstimate,
  checkCredits,
} from './estimate.js';
import { creditsFor, recordsToBuy } from './figures.js';

/**
 * The credit guard of a whole run, whose jobs start at once. The account's credits are read
 * once, and each job that buys a download reserves what it needs, so that every job's purchase
 * lowers what is left for the next, as `plan` computes it: two jobs started together never both
 * pass against the same credits.
 *
 * The jobs take their turns in the pipeline file's order (`turn`): a job's check, and the start
 * of its download, wait for the jobs before it to have started theirs (or to have found they
 * need none: re-attached, skipped, failed). So which job the guard refuses does not depend on
 * which answer came first, and downloads are recorded in the file's order. A turn costs one
 * count and one download start; the downloads are then prepared by the service at once.
 */
export class RunGuard {
  readonly #client: ServiceClient;
  /** Each job's turn ends when this resolves; jobs outside the order have none to wait for. */
  readonly #turns = new Map<string, { ended: Promise<void>; end: () => void }>();
  readonly #order: string[];
  #account: Promise<AccountCredits> | undefined;

  /** `order`: the jobs that take turns, in the file's order (owner lookups wait for others). */
  constructor(client: ServiceClient, order: readonly string[]) {
    this.#client = client;
    this.#order = [...order];
    for (const job of order) {
      let end: () => void = () => {};
      const ended = new Promise<void>((resolve) => (end = resolve));
      this.#turns.set(job, { ended, end });
    }
  }

  /** Waits for the jobs before `job` to end their turns. */
  async turn(job: string): Promise<void> {
    const at = this.#order.indexOf(job);
    if (at <= 0) return;
    await this.#turns.get(this.#order[at - 1]!)!.ended;
  }

  /** Ends `job`'s turn (again is harmless). */
  end(job: string): void {
    this.#turns.get(job)?.end();
  }

  /**
   * The guard's verdict for a job, from a free count: its max_credits, what the account has
   * left less what the jobs before it reserved, and the pipeline's `budgets` as they stand (in
   * the state tables, where the jobs before it recorded their downloads before their turns
   * ended). When it passes, what it needs is reserved for it.
   */
  async check(
    job: JobSpec,
    request: SearchRequest,
    signal: AbortSignal | undefined,
    budgets: readonly BudgetStanding[] = [],
  ): Promise<CreditEstimate> {
    const { numFound } = await this.#client.count(request, { signal });
    const records = recordsToBuy(job, numFound);
    const needed = creditsFor(job, records);
    this.#account ??= accountCredits(this.#client, signal);
    let account: AccountCredits;
    try {
      account = await this.#account;
    } catch (error) {
      this.#account = undefined; // asked again by the next job
      throw error;
    }
    const standing = budgets.map((b) => ({ ...b, planned: 0 }));
    const estimate = checkCredits(job, numFound, records, needed, account, standing);
    if (estimate.refusals.length === 0 && account.plan === 'per-type') {
      for (const [type, n] of Object.entries(needed) as [CreditType, number][]) {
        account.left[type] = (account.left[type] ?? 0) - n;
      }
    }
    return estimate;
  }
}
