import type { Destination } from '../../load/destination.js';
import type { Logger } from '../../log.js';
import { budgetStandings } from '../guard/budget.js';
import { accountCredits } from '../guard/estimate.js';
import type { Credits, RunSummary } from '../outcome.js';
import { clientFor, openPipelineDestination } from '../run/run.js';
import type { PipelineSpec } from '../spec/spec.js';
import type { NotifyTarget } from '../spec/spec-notify.js';
import { type Delivery, deliver, targetHost } from './deliver.js';
import { type Alert, alertsOf, type BudgetPassage, type RunEnd, routesOf } from './events.js';
import { alertMessage, testMessage } from './message.js';

export type { Delivery } from './deliver.js';
export type { RunEnd } from './events.js';

/**
 * Alerts at the end of a run (`notify:`): after the run has ended and its summary is recorded,
 * so that nothing here can change what it did, its summary or its exit code. What goes wrong
 * here is logged as a warning and recorded in `_sluice_alerts`, and the command ends as the run
 * did.
 */

export interface NotifyOptions {
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** Time as the run saw it (budgets' periods). */
  now?: () => number;
}

export interface SentAlert extends Delivery {
  event: Alert['event'];
}

export async function notifyRun(
  spec: PipelineSpec,
  end: RunEnd,
  options: NotifyOptions,
): Promise<SentAlert[]> {
  const { notify } = spec;
  if (notify.pipeline === undefined && Object.keys(notify.jobs).length === 0) return [];
  // A replay did nothing now: the run it stands for sent its alerts.
  if ('summary' in end && end.summary.replayed) return [];
  const log = options.logger.child({ pipeline: spec.name });
  let destination: Destination | undefined;
  try {
    const summary = 'summary' in end ? end.summary : undefined;
    const saved = summary ? await savedFacts(spec, summary, options, log) : undefined;
    destination = saved?.destination;
    const routes = routesOf(notify, alertsOf(end, saved?.previous, saved?.budgets ?? []));
    if (routes.length === 0) return [];
    const left = summary ? await creditsLeft(spec, log) : undefined;
    const facts = { pipeline: spec.name, file: spec.file, end, left };
    const sent = await Promise.all(
      routes.map(async ({ alert, target }) => {
        const delivery = await deliver(target, alertMessage(alert, facts));
        logDelivery(log, alert.event, delivery);
        return { ...delivery, event: alert.event, sentAt: new Date().toISOString() };
      }),
    );
    if (destination) {
      await destination.ensureState();
      await destination.state.recordAlerts(
        sent.map((s) => ({
          run_id: summary?.run_id ?? null,
          pipeline: spec.name,
          event: s.event,
          target_kind: s.kind,
          target: s.host,
          sent_at: s.sentAt,
          ok: String(s.ok),
          attempts: s.attempts,
          error: s.ok ? null : s.answer,
        })),
      );
    }
    return sent.map(({ sentAt: _, ...s }) => s);
  } catch (error) {
    log.warn(
      `alerts: ${(error as Error).message ?? String(error)} (the run's outcome is unchanged)`,
    );
    return [];
  } finally {
    await destination?.close().catch(() => undefined);
  }
}

/**
 * What the state tables say beyond the summary: the run before (for `recovered`) and the
 * budgets (for `budget`), and the destination left open to record the alerts. A database that
 * cannot be read now (the run may have failed for it) loses those two events, not the others.
 */
async function savedFacts(
  spec: PipelineSpec,
  summary: RunSummary,
  options: NotifyOptions,
  log: Logger,
): Promise<{ destination?: Destination; previous?: string; budgets: BudgetPassage[] }> {
  let destination: Destination | undefined;
  try {
    destination = await openPipelineDestination(spec, options.env, { logger: log });
    const state = destination.state;
    const previous = (await state.latestRun(spec.name, summary.run_id))?.status;
    const now = options.now?.() ?? Date.now();
    const budgets = (await budgetStandings(spec, state, now)).map((b) => ({
      type: b.type,
      period: b.period,
      limit: b.limit,
      after: b.spent,
      before: b.spent - (summary.credits[b.type] ?? 0),
    }));
    return { destination, ...(previous === undefined ? {} : { previous }), budgets };
  } catch (error) {
    await destination?.close().catch(() => undefined);
    log.warn(
      `alerts: the state tables cannot be read (${(error as Error).message}): alerts go without them and are not recorded`,
    );
    return { budgets: [] };
  }
}

function logDelivery(log: Logger, event: string, d: Delivery): void {
  const tries = `${d.attempts} ${d.attempts === 1 ? 'try' : 'tries'}`;
  if (d.ok) log.info(`alert '${event}' sent to ${d.kind} ${d.host}: ${d.answer}`);
  else {
    log.warn(
      `alert '${event}' to ${d.kind} ${d.host} not delivered after ${tries}: ${d.answer} (the run's outcome is unchanged)`,
    );
  }
}

/** What the account has left, for the alert; nothing when the service does not say in time. */
async function creditsLeft(spec: PipelineSpec, log: Logger): Promise<Credits | undefined> {
  if (spec.source.api !== 'v4' || !spec.source.url) return undefined;
  const client = clientFor(spec);
  try {
    const account = await accountCredits(client, AbortSignal.timeout(2_000));
    return account.plan === 'per-type' ? account.left : undefined;
  } catch (error) {
    log.debug(`alerts: the credits left are unknown: ${(error as Error).message}`);
    return undefined;
  } finally {
    await client.close();
  }
}

/** Every target of the pipeline's `notify:` blocks (and the environment's default), once. */
export function notifyTargets(spec: PipelineSpec): NotifyTarget[] {
  const blocks = [spec.notify.pipeline, ...Object.values(spec.notify.jobs)];
  const targets = new Map<string, NotifyTarget>();
  for (const block of blocks) {
    for (const target of block?.targets ?? []) targets.set(JSON.stringify(target), target);
  }
  return [...targets.values()];
}

/** One alert target of a pipeline as `validate` lists it: its host, never its path or secret. */
export interface AlertTargetDocument {
  /** `pipeline`, or the job whose own `notify:` it is. */
  for: string;
  kind: NotifyTarget['kind'];
  host: string;
  on: string[];
  budget_threshold: number;
}

/** Where a pipeline's alerts go: the file's (or the environment's) `notify:`, then each job's. */
export function alertTargets(spec: PipelineSpec): AlertTargetDocument[] {
  const blocks = [
    ...(spec.notify.pipeline ? [['pipeline', spec.notify.pipeline] as const] : []),
    ...Object.entries(spec.notify.jobs),
  ];
  return blocks.flatMap(([owner, block]) =>
    block.targets.map((target) => ({
      for: owner,
      kind: target.kind,
      host: targetHost(target),
      on: [...block.on],
      budget_threshold: block.budgetThreshold,
    })),
  );
}

/** `sluice notify test`: a sample alert to each target, and what each answered. */
export function testTargets(spec: PipelineSpec): Promise<Delivery[]> {
  const message = testMessage(spec.name, spec.file);
  return Promise.all(notifyTargets(spec).map((target) => deliver(target, message)));
}
