import { createHmac } from 'node:crypto';
import type { NotifyTarget } from '../spec/spec-notify.js';
import { type AlertMessage, emailText, slackBody } from './message.js';

/**
 * Sends an alert to one target, retried with backoff within a bound: at most `TRIES` tries, and
 * all of them within `BOUND_MS`, so that a dead target delays the end of a scheduled command by
 * seconds, never more. What is logged or recorded of a target is its host (`targetHost`): the
 * path of a Slack webhook and the password of a mail server are secrets.
 */

const TRIES = 3;
const BOUND_MS = 9_000;
const TRY_MS = 3_000;
const BACKOFF_MS = [500, 1_500];

export interface Delivery {
  kind: NotifyTarget['kind'];
  /** The target's host and port, never its path or credentials. */
  host: string;
  ok: boolean;
  attempts: number;
  /** What the target answered (`HTTP 200 ok`, `250 Accepted`), or why it did not take it. */
  answer: string;
}

/** The header of the webhook body's signature: `sha256=` and the HMAC-SHA256 in hex. */
export const SIGNATURE_HEADER = 'X-Sluice-Signature-256';

export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export function targetHost(target: NotifyTarget): string {
  try {
    return new URL(target.kind === 'email' ? target.smtp : target.url).host || '?';
  } catch {
    return '?';
  }
}

/** A try's outcome: taken, or not (and whether another try may help). */
type Answer = { ok: true; answer: string } | { ok: false; answer: string; retry: boolean };

export async function deliver(
  target: NotifyTarget,
  message: AlertMessage,
  options: { sleep?: (ms: number) => Promise<void> } = {},
): Promise<Delivery> {
  const sleep = options.sleep ?? ((ms) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = Date.now() + BOUND_MS;
  const host = targetHost(target);
  let attempts = 0;
  let last: Answer = { ok: false, answer: 'not tried', retry: false };
  while (attempts < TRIES) {
    const timeout = Math.min(TRY_MS, deadline - Date.now());
    if (timeout < 200) break;
    attempts++;
    try {
      last = await sendOnce(target, message, timeout);
    } catch (error) {
      last = { ok: false, answer: reasonOf(error), retry: true };
    }
    if (last.ok || !last.retry) break;
    const pause = BACKOFF_MS[attempts - 1] ?? 0;
    if (attempts >= TRIES || Date.now() + pause + 200 > deadline) break;
    await sleep(pause);
  }
  return {
    kind: target.kind,
    host,
    ok: last.ok,
    attempts,
    answer: redact(last.answer, target).slice(0, 300),
  };
}

async function sendOnce(
  target: NotifyTarget,
  message: AlertMessage,
  timeout: number,
): Promise<Answer> {
  if (target.kind === 'email') return sendEmail(target, message, timeout);
  const body = JSON.stringify(target.kind === 'slack' ? slackBody(message) : message);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'sluice-alerts',
    'x-sluice-event': message.event,
  };
  if (target.kind === 'webhook' && target.secret !== undefined) {
    headers[SIGNATURE_HEADER] = signature(target.secret, body);
  }
  const response = await fetch(target.url, {
    method: 'POST',
    headers,
    body,
    redirect: 'error',
    signal: AbortSignal.timeout(timeout),
  });
  const text = (await response.text().catch(() => '')).trim().slice(0, 100);
  const answer = `HTTP ${response.status}${text ? ` ${text}` : ''}`;
  if (response.ok) return { ok: true, answer };
  const status = response.status;
  return { ok: false, answer, retry: status >= 500 || status === 429 || status === 408 };
}

async function sendEmail(
  target: Extract<NotifyTarget, { kind: 'email' }>,
  message: AlertMessage,
  timeout: number,
): Promise<Answer> {
  // Loaded only when a pipeline sends e-mail: the other commands never pay for it.
  const { createTransport } = await import('nodemailer');
  const transport = createTransport({
    url: target.smtp,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  });
  try {
    const { subject, text } = emailText(message);
    const info = await transport.sendMail({
      from: target.from ?? `sluice <sluice@${new URL(target.smtp).hostname}>`,
      to: target.to,
      subject,
      text,
    });
    return { ok: true, answer: String(info.response ?? 'sent') };
  } catch (error) {
    // A refusal of the server (5xx: a wrong address, a wrong login) comes again on a retry.
    const code = (error as { responseCode?: number }).responseCode;
    return {
      ok: false,
      answer: reasonOf(error),
      retry: code === undefined || code < 500,
    };
  } finally {
    transport.close();
  }
}

function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (error.name === 'TimeoutError') return 'no answer in time';
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return `${error.message}${detail}`;
}

/** A target's secrets out of a text about it: its URL, its path, its login. */
export function redact(text: string, target: NotifyTarget): string {
  const secrets: string[] = [];
  const url = target.kind === 'email' ? target.smtp : target.url;
  secrets.push(url);
  try {
    const parsed = new URL(url);
    if (parsed.pathname.length > 1) secrets.push(parsed.pathname);
    if (parsed.search.length > 1) secrets.push(parsed.search);
    if (parsed.password) secrets.push(parsed.password, decodeURIComponent(parsed.password));
    if (parsed.username) secrets.push(parsed.username, decodeURIComponent(parsed.username));
  } catch {
    // Not a URL: only the whole of it is hidden.
  }
  if (target.kind === 'webhook' && target.secret) secrets.push(target.secret);
  let out = text;
  for (const secret of secrets.sort((a, b) => b.length - a.length)) {
    if (secret.length >= 3) out = out.replaceAll(secret, '[redacted]');
  }
  return out;
}
