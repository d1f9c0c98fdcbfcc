import { hostname } from 'node:os';
import type { Credits, JobStatus, RunSummary } from '../outcome.js';
import type { NotifyEvent } from '../spec/spec-notify.js';
import type { Alert, RunEnd } from './events.js';

/**
 * What an alert says, the same facts for every target: the webhook gets them as JSON, Slack as
 * blocks, e-mail as text. Built from the run's summary (which holds no secret) and the
 * pipeline's name and file; never from its source or destination settings.
 */
export interface AlertMessage {
  /** The format's version, for receivers. */
  sluice_alert: 1;
  event: NotifyEvent | 'test';
  pipeline: string;
  /** As the run's `--json` document names it; null when the command failed before a run. */
  run_id: string | null;
  status: RunSummary['status'] | 'error' | 'test';
  /** One line a person reads first. */
  title: string;
  summary: string;
  what_to_do: string;
  file: string;
  host: string;
  started_at: string | null;
  seconds: number | null;
  jobs: { job: string; status: JobStatus; error_code: string | null; message: string | null }[];
  /** Credits this run spent, and what the account has left (null when the service did not say). */
  credits: { spent: Credits; left: Credits | null };
  budget: { type: string; period: string; limit: number; spent: number; percent: number } | null;
  error: { code: string; message: string } | null;
}

export interface MessageFacts {
  pipeline: string;
  file: string;
  end: RunEnd;
  left?: Credits | undefined;
}

const VERB: Record<NotifyEvent, string> = {
  failed: 'failed',
  refused: 'was refused',
  incomplete: 'ended incomplete',
  interrupted: 'was interrupted',
  recovered: 'succeeded again',
  budget: 'passed a budget threshold',
  success: 'succeeded',
};

export function alertMessage(alert: Alert, facts: MessageFacts): AlertMessage {
  const summary = 'summary' in facts.end ? facts.end.summary : undefined;
  const error = 'summary' in facts.end ? facts.end.summary.error : facts.end.error;
  const runId = summary?.run_id ?? null;
  const run = runId ? `run ${runId} of '${facts.pipeline}'` : `a run of '${facts.pipeline}'`;
  const budget = alert.budget
    ? {
        type: alert.budget.type,
        period: alert.budget.period,
        limit: alert.budget.limit,
        spent: alert.budget.after,
        percent: Math.floor((alert.budget.after / alert.budget.limit) * 100),
      }
    : null;
  const jobs = (summary?.jobs ?? []).map((j) => ({
    job: j.job,
    status: j.status,
    error_code: j.error?.code ?? null,
    message: j.error?.message ?? j.message ?? null,
  }));
  return {
    sluice_alert: 1,
    event: alert.event,
    pipeline: facts.pipeline,
    run_id: runId,
    status: summary?.status ?? 'error',
    title: budget
      ? `sluice: '${facts.pipeline}' has spent ${budget.percent}% of its ${budget.type} budget (${budget.limit}/${budget.period})`
      : `sluice: ${run} ${VERB[alert.event]}`,
    summary: summaryText(alert, run, facts, budget),
    what_to_do: whatToDo(alert, facts, error?.retryable),
    file: facts.file,
    host: hostname(),
    started_at: summary?.started_at ?? null,
    seconds: summary?.seconds ?? null,
    jobs,
    credits: { spent: summary?.credits ?? {}, left: facts.left ?? null },
    budget,
    error: error ? { code: error.code, message: error.message } : null,
  };
}

function summaryText(
  alert: Alert,
  run: string,
  facts: MessageFacts,
  budget: AlertMessage['budget'],
): string {
  if (budget) {
    return `${run} brought the ${budget.type} budget to ${budget.spent} of ${budget.limit} credits this ${budget.period} (${budget.percent}%).`;
  }
  if (!('summary' in facts.end)) return `${run} ${VERB[alert.event]}: ${facts.end.error.message}`;
  const { summary } = facts.end;
  const counts = new Map<string, number>();
  for (const j of summary.jobs) counts.set(j.status, (counts.get(j.status) ?? 0) + 1);
  const jobs = [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
  const why = summary.error
    ? `: ${summary.error.message}`
    : alert.jobs.length > 0
      ? `: ${alert.jobs.join(', ')}`
      : '';
  return `${run} ${VERB[alert.event]} in ${summary.seconds}s${why}${jobs ? ` (jobs: ${jobs})` : ''}.`;
}

/** The next step for the person who reads it: the command to run, or what to change. */
function whatToDo(alert: Alert, facts: MessageFacts, retryable: boolean | undefined): string {
  const run = `sluice run ${facts.file}`;
  switch (alert.event) {
    case 'failed':
      return retryable === false
        ? `fix what the error says, then run \`${run}\` again; \`sluice status ${facts.file}\` shows the runs`
        : `run \`${run}\` again (or let the schedule do it): it resumes where this run stopped and never buys a download twice; \`sluice status ${facts.file}\` shows the runs`;
    case 'refused':
      return `nothing was spent: \`sluice plan ${facts.file}\` shows what the jobs need and what is left; raise max_credits or the budget in the file, or add credits to the account`;
    case 'incomplete':
      return `a download was cancelled on the service and what it held is loaded; run \`${run}\` again to download the rest`;
    case 'interrupted':
      return `run \`${run}\` again: it re-attaches to the downloads already paid for and finishes them`;
    case 'budget':
      return `check \`sluice plan ${facts.file}\` before the next runs; raise the budget in the file if this spending is expected`;
    case 'recovered':
    case 'success':
      return 'nothing';
  }
}

/** A sample message for `sluice notify test`. */
export function testMessage(pipeline: string, file: string): AlertMessage {
  return {
    sluice_alert: 1,
    event: 'test',
    pipeline,
    run_id: null,
    status: 'test',
    title: `sluice: a test alert of '${pipeline}'`,
    summary: `This is a test of the alerts of pipeline '${pipeline}' (sluice notify test ${file}): nothing ran.`,
    what_to_do: 'nothing: alerts reach this target',
    file,
    host: hostname(),
    started_at: null,
    seconds: null,
    jobs: [],
    credits: { spent: {}, left: null },
    budget: null,
    error: null,
  };
}

/** Slack's blocks (also taken by Mattermost and others): the facts a person reads at a glance. */
export function slackBody(message: AlertMessage): Record<string, unknown> {
  const fields = [
    `*Pipeline*\n${message.pipeline}`,
    `*Run*\n${message.run_id ?? '-'}`,
    `*Status*\n${message.status}`,
    `*Credits spent*\n${creditsText(message.credits.spent)}`,
  ];
  if (message.credits.left) fields.push(`*Credits left*\n${creditsText(message.credits.left)}`);
  const failing = message.jobs.filter((j) => j.error_code !== null);
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: message.title.slice(0, 150) } },
    { type: 'section', text: { type: 'mrkdwn', text: message.summary } },
    { type: 'section', fields: fields.map((text) => ({ type: 'mrkdwn', text })) },
  ];
  if (failing.length > 0) {
    blocks.push({
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: failing
          .slice(0, 10)
          .map((j) => `• *${j.job}* ${j.status} \`${j.error_code}\`: ${j.message ?? ''}`)
          .join('\n'),
      },
    });
  }
  blocks.push({
    type: 'section',
    text: { type: 'mrkdwn', text: `*What to do:* ${message.what_to_do}` },
  });
  blocks.push({
    type: 'context',
    elements: [{ type: 'mrkdwn', text: `${message.file} on ${message.host}` }],
  });
  return { text: message.title, blocks };
}

/** The e-mail: its subject, and a plain text body. */
export function emailText(message: AlertMessage): { subject: string; text: string } {
  const lines = [
    message.summary,
    '',
    `What to do: ${message.what_to_do}`,
    '',
    `Pipeline:      ${message.pipeline} (${message.file} on ${message.host})`,
    `Run:           ${message.run_id ?? '-'}`,
    `Status:        ${message.status}`,
    `Credits spent: ${creditsText(message.credits.spent)}`,
  ];
  if (message.credits.left) lines.push(`Credits left:  ${creditsText(message.credits.left)}`);
  if (message.jobs.length > 0) {
    lines.push('', 'Jobs:');
    for (const j of message.jobs) {
      lines.push(
        `  ${j.job}: ${j.status}${j.error_code ? ` (${j.error_code})` : ''}${j.message ? `: ${j.message}` : ''}`,
      );
    }
  }
  return { subject: message.title, text: `${lines.join('\n')}\n` };
}

function creditsText(credits: Credits): string {
  const parts = Object.entries(credits).map(([type, n]) => `${n} ${type}`);
  return parts.length > 0 ? parts.join(', ') : '0';
}
