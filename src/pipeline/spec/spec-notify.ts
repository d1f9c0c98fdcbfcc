import { z } from 'zod';
import { PipelineSpecError } from '../../errors.js';
import type { EnvLookup } from '../../util/env-layers.js';

/**
 * `notify:` in a pipeline file (and under a job, for that job's own events), or a default for
 * every pipeline in the environment (`SLUICE_NOTIFY_*`): where a run's alerts go, and on what.
 * Delivery is in pipeline/notify/.
 */

/** What a run can alert on. `budget`: a budget passed its `budget_threshold` in this run. */
export const NOTIFY_EVENTS = [
  'failed',
  'refused',
  'incomplete',
  'interrupted',
  'recovered',
  'budget',
  'success',
] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** Every event but success: a run that went as planned tells nobody. */
export const DEFAULT_EVENTS: readonly NotifyEvent[] = NOTIFY_EVENTS.filter((e) => e !== 'success');
export const DEFAULT_BUDGET_THRESHOLD = 80;

const httpUrl = z
  .string()
  .url('expected an http(s) URL, e.g. https://hooks.example.com/sluice')
  .refine((v) => /^https?:\/\//i.test(v), 'expected an http(s) URL');

const address = z.email('expected an e-mail address, e.g. ops@example.com');

const event = z.enum(NOTIFY_EVENTS);

export const notifySchema = z
  .strictObject({
    webhook: httpUrl.optional().describe('a URL sluice POSTs a JSON alert to'),
    secret: z
      .string()
      .min(1)
      .optional()
      .describe(
        'signs the webhook body (HMAC-SHA256, header X-Sluice-Signature-256): use ${VAR} or ${file:PATH}',
      ),
    slack: httpUrl.optional().describe("a Slack (or compatible) incoming webhook's URL"),
    email: z
      .union([address, z.array(address).min(1)], {
        error: 'expected an e-mail address, or a list of them',
      })
      .optional()
      .describe('who gets the alert by e-mail (needs smtp:)'),
    smtp: z
      .string()
      .refine(
        (v) => /^smtps?:\/\/[^/]+/i.test(v),
        'expected smtp://host:port or smtps://user:pass@host:465',
      )
      .optional()
      .describe('the mail server: smtp://host:587, smtps://user:${SMTP_PASSWORD}@host:465'),
    from: address.optional().describe('the sender address (default sluice@<smtp host>)'),
    on: z
      .union([event, z.array(event).min(1)], {
        error: `expected events among ${NOTIFY_EVENTS.join(', ')}`,
      })
      .optional()
      .describe(`what to alert on (default: all but success): ${NOTIFY_EVENTS.join(', ')}`),
    budget_threshold: z
      .preprocess(
        (v) => (typeof v === 'string' && /^\d+%?$/.test(v.trim()) ? Number.parseInt(v, 10) : v),
        z
          .number()
          .int()
          .min(1, 'expected a percent from 1 to 100')
          .max(100, 'expected a percent from 1 to 100'),
      )
      .optional()
      .describe('alert when a budget passes this percent of its limit (default 80)'),
  })
  .describe('where alerts go: { webhook: URL }, { slack: URL }, { email: ADDRESS, smtp: URL }');

export type RawNotify = z.output<typeof notifySchema>;

export type NotifyTarget =
  | { kind: 'webhook'; url: string; secret?: string }
  | { kind: 'slack'; url: string }
  | { kind: 'email'; to: string[]; smtp: string; from?: string };

/** A `notify:` block, checked, with its defaults. */
export interface NotifySpec {
  targets: NotifyTarget[];
  on: NotifyEvent[];
  /** Percent of a budget past which the run alerts (`budget`). */
  budgetThreshold: number;
}

export interface PipelineNotify {
  /** The file's `notify:`, or the environment's default (`SLUICE_NOTIFY_*`). */
  pipeline?: NotifySpec;
  /** Jobs with their own `notify:`, by job name: their events go there instead. */
  jobs: Record<string, NotifySpec>;
}

/**
 * A pipeline file's `notify:` blocks, the environment's default where the file has none at the
 * top. `fail` reports a mistake at a path of the file.
 */
export function pipelineNotify(
  raw: { notify?: RawNotify | undefined; jobs: Record<string, { notify?: RawNotify | undefined }> },
  fail: (message: string, path: string[]) => never,
  lookup: EnvLookup,
  file: string,
): PipelineNotify {
  const smtp = lookup('SLUICE_NOTIFY_SMTP')?.value.trim() || undefined;
  const resolveAt = (block: RawNotify, path: string[]) =>
    resolveNotify(block, (message, field) => fail(message, field ? [...path, field] : path), smtp);
  const jobs: Record<string, NotifySpec> = {};
  for (const [name, job] of Object.entries(raw.jobs)) {
    if (job.notify !== undefined) jobs[name] = resolveAt(job.notify, ['jobs', name, 'notify']);
  }
  const pipeline =
    raw.notify === undefined ? envNotify(lookup, file) : resolveAt(raw.notify, ['notify']);
  return { ...(pipeline ? { pipeline } : {}), jobs };
}

/** The environment's default for pipelines whose file has no `notify:`. */
const ENV_KEYS: Record<string, keyof RawNotify> = {
  SLUICE_NOTIFY_WEBHOOK: 'webhook',
  SLUICE_NOTIFY_SECRET: 'secret',
  SLUICE_NOTIFY_SLACK: 'slack',
  SLUICE_NOTIFY_EMAIL: 'email',
  SLUICE_NOTIFY_SMTP: 'smtp',
  SLUICE_NOTIFY_FROM: 'from',
  SLUICE_NOTIFY_ON: 'on',
  SLUICE_NOTIFY_BUDGET_THRESHOLD: 'budget_threshold',
};

/**
 * A `notify:` block as a run uses it. `fail` reports a mistake at a field of the block; `smtp`
 * is the environment's mail server, for an `email:` without its own.
 */
export function resolveNotify(
  raw: RawNotify,
  fail: (message: string, field?: string) => never,
  smtp?: string,
): NotifySpec {
  const targets: NotifyTarget[] = [];
  if (raw.webhook !== undefined) {
    targets.push({
      kind: 'webhook',
      url: raw.webhook,
      ...(raw.secret === undefined ? {} : { secret: raw.secret }),
    });
  } else if (raw.secret !== undefined) {
    fail('secret signs the webhook body: give webhook: URL beside it', 'secret');
  }
  if (raw.slack !== undefined) targets.push({ kind: 'slack', url: raw.slack });
  if (raw.email !== undefined) {
    const server = raw.smtp ?? smtp;
    if (server === undefined) {
      fail(
        'e-mail needs a mail server: smtp: smtp://host:587 beside it, or SLUICE_NOTIFY_SMTP',
        'email',
      );
    }
    targets.push({
      kind: 'email',
      to: typeof raw.email === 'string' ? [raw.email] : raw.email,
      smtp: server,
      ...(raw.from === undefined ? {} : { from: raw.from }),
    });
  } else if (raw.smtp !== undefined) {
    fail('smtp is the mail server of email: give email: ADDRESS beside it', 'smtp');
  }
  if (targets.length === 0) {
    fail('no target: give webhook: URL, slack: URL, or email: ADDRESS with smtp: URL');
  }
  return {
    targets,
    on: raw.on === undefined ? [...DEFAULT_EVENTS] : typeof raw.on === 'string' ? [raw.on] : raw.on,
    budgetThreshold: raw.budget_threshold ?? DEFAULT_BUDGET_THRESHOLD,
  };
}

/**
 * The environment's `notify:` (`SLUICE_NOTIFY_WEBHOOK`, `_SLACK`, `_EMAIL` with `_SMTP`,
 * `_SECRET`, `_ON` as a comma list, `_BUDGET_THRESHOLD`, `_FROM`), or undefined when none of
 * its targets is set. A mistake names the variable.
 */
export function envNotify(lookup: EnvLookup, file: string): NotifySpec | undefined {
  const raw: Record<string, unknown> = {};
  const from: Partial<Record<keyof RawNotify, string>> = {};
  for (const [variable, key] of Object.entries(ENV_KEYS)) {
    const value = lookup(variable)?.value.trim();
    if (value === undefined || value === '') continue;
    from[key] = variable;
    raw[key] =
      key === 'on' || key === 'email'
        ? value
            .split(',')
            .map((v) => v.trim())
            .filter(Boolean)
        : value;
  }
  if (raw.webhook === undefined && raw.slack === undefined && raw.email === undefined) {
    return undefined;
  }
  const fail = (message: string, variable = 'SLUICE_NOTIFY_*'): never => {
    throw new PipelineSpecError(`${variable}: ${message}`, { file, path: '' });
  };
  const parsed = notifySchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0]) as keyof RawNotify;
    fail(issue.message, from[key]);
  }
  return resolveNotify(parsed.data!, (message, field) =>
    fail(message, field === undefined ? undefined : from[field as keyof RawNotify]),
  );
}
