import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { Agent, type Dispatcher, request } from 'undici';
import { ApiError, SluiceError } from '../errors.js';
import { ConnectionError } from './errors.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface TransportOptions {
  /** Sockets kept per origin. */
  connections?: number;
  keepAliveTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** Time to wait for the response headers after the request was sent. */
  headersTimeoutMs?: number;
  /** Longest silence between two chunks of a response body. */
  bodyTimeoutMs?: number;
  /** Attempts per request, the first included. */
  maxAttempts?: number;
  /**
   * No retry is started that would end later than this after the first attempt began, unless a
   * request allows more (`maxWaitMs`). A `Retry-After` that ends past it fails the request at
   * once, saying how long the service asked to wait.
   */
  maxRetryTimeMs?: number;
  /** Upper bound of the first backoff; it doubles per attempt up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Injected by tests so retries do not wait; must reject when the signal aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Uniform in [0, 1); the jitter source. */
  random?: () => number;
  /** Milliseconds clock for the total-time bound and HTTP-date `Retry-After`. */
  now?: () => number;
  userAgent?: string;
  /** Called before each backoff sleep; the event carries no URL query, header or body. */
  onRetry?: (event: RetryEvent) => void;
  /**
   * Called once, when the service's clock (its `Date` header) is found at least
   * CLOCK_SKEW_WORTH_SAYING_MS away from `now`: `offsetMs` is the service's time less this one's.
   */
  onClockSkew?: (offsetMs: number) => void;
  /**
   * Called after each attempt of a request, answered or not (for the debug log): its method,
   * path and query (values that may be secrets redacted), status, and how long it took.
   */
  onExchange?: (event: ExchangeEvent) => void;
}

/** One attempt of a request, as the debug log shows it: never a header, a body or a secret. */
export interface ExchangeEvent {
  method: HttpMethod;
  /** Path and query string, values of parameters that may be secrets (`sig`, `token`) redacted. */
  path: string;
  /** The answer's status; undefined when none came (`error` says why). */
  status?: number;
  /** The network error code when no answer came. */
  error?: string;
  /** From sending the request to its answer's headers (a body is read afterwards). */
  ms: number;
  attempt: number;
}

/**
 * A difference between this machine's clock and the service's worth saying: the times sluice
 * writes (state tables, logs) are this machine's, the times the service sends are its own.
 */
export const CLOCK_SKEW_WORTH_SAYING_MS = 60_000;

export interface RetryEvent {
  method: HttpMethod;
  /** URL path without its query string. */
  path: string;
  /** The attempt that failed (1 for the first). */
  attempt: number;
  delayMs: number;
  /** `HTTP 503` or the network error code. */
  reason: string;
}

export interface HttpRequest {
  method: HttpMethod;
  /** Absolute URL. Never put credentials in it: they would reach error messages. */
  url: string;
  headers?: Record<string, string>;
  /** Sent as a JSON body with `content-type: application/json`. */
  json?: unknown;
  /**
   * False for requests that must not run twice (download starts): they are not retried after a
   * failure that leaves open whether the service did the work. 429 and 503 say the service
   * refused before working, so those are retried either way. Default true.
   */
  idempotent?: boolean;
  signal?: AbortSignal;
  /** This request's time bound for retries and their waits, in place of `maxRetryTimeMs`. */
  maxWaitMs?: number | undefined;
  /**
   * For `json()`: a redirect (3xx) is this request's answer, as the v3 download start's 303 to
   * its request is. Any other JSON call refuses a 3xx: the service's API never redirects one.
   */
  redirectIsAnswer?: boolean;
}

export interface JsonResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body; undefined for an empty body (and for a redirect's non-JSON body). */
  body: unknown;
}

export interface StreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

export const DEFAULT_TRANSPORT_OPTIONS = {
  connections: 8,
  keepAliveTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 60_000,
  bodyTimeoutMs: 120_000,
  maxAttempts: 6,
  maxRetryTimeMs: 120_000,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
} as const;

/**
 * Statuses worth another try: the service is overloaded, a gateway lost its upstream, or the
 * service failed (500). Only 429 and 503 are retried for requests that must not run twice: after
 * a 500, 502 or 504 the work may have been done.
 */
const RETRY_STATUSES = new Set([429, 500, 502, 503, 504]);
/** Statuses that say the service refused before doing any work. */
const REFUSED_STATUSES = new Set([429, 503]);
/** Redirects a result file's GET follows; a storage service may send any of them. */
const FOLLOWED_REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Redirects followed per result-file GET: more is a loop, not a storage service's answer. */
const MAX_REDIRECTS = 5;
/** Headers that carry credentials: never sent on to another host than the one they were for. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
/** Network error codes raised before any byte of the request left this machine. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * HTTP for the client: one keep-alive pool per origin (an undici Agent keeps them), timeouts on
 * connect, headers and body, and retries with exponential backoff and full jitter on 429, 500,
 * 502, 503, 504 and network errors, honouring `Retry-After`, bounded by attempts and by total
 * time.
 */
export class HttpTransport {
  readonly #agent: Agent;
  /** Per origin: no request before this time, as the service asked (see `#send`). */
  readonly #pausedUntil = new Map<string, number>();
  readonly #options: Required<Omit<TransportOptions, 'onRetry' | 'onClockSkew' | 'onExchange'>> &
    Pick<TransportOptions, 'onRetry' | 'onClockSkew' | 'onExchange'>;
  /** The service's clock less `now`, from the `Date` header of its latest answer. */
  #serviceOffset: number | undefined;
  #skewSaid = false;

  constructor(options: TransportOptions = {}) {
    this.#options = Object.freeze({
      ...DEFAULT_TRANSPORT_OPTIONS,
      sleep: abortableSleep,
      random: Math.random,
      now: Date.now,
      userAgent: 'sluice',
      ...definedOnly(options),
    });
    const o = this.#options;
    this.#agent = new Agent({
      connections: o.connections,
      keepAliveTimeout: o.keepAliveTimeoutMs,
      connectTimeout: o.connectTimeoutMs,
      headersTimeout: o.headersTimeoutMs,
      bodyTimeout: o.bodyTimeoutMs,
    });
  }

  /**
   * A JSON exchange. A status of 400 or more throws ApiError; a redirect throws
   * SLUICE_API_NOT_JSON, naming where it points, unless the request takes it as its answer
   * (`redirectIsAnswer`); a body that is not JSON throws SLUICE_API_NOT_JSON saying what came
   * instead, and JSON that does not parse SLUICE_API_BAD_JSON. An empty body is an answer (a
   * DELETE's, say): `body` is undefined.
   */
  async json(req: HttpRequest): Promise<JsonResponse> {
    const res = await this.#send(req);
    if (res.statusCode >= 400) throw await toApiError(req, res);
    const redirect = res.statusCode >= 300 && res.statusCode < 400;
    if (redirect && !req.redirectIsAnswer) {
      await discard(res);
      throw unexpectedRedirect(req, res);
    }
    const text = await res.body.text();
    // A redirect's body is a note for browsers (HTML or nothing); its Location is the answer.
    const body = redirect ? lenientBody(text) : parseBody(req, res, text);
    return { status: res.statusCode, headers: res.headers, body };
  }

  /**
   * A streamed exchange, for result files. The body is the caller's to consume or destroy; a
   * status of 400 or more throws ApiError with the body read. Redirects are followed (storage
   * services send them), at most MAX_REDIRECTS, with the request's headers (a Range stays a
   * Range) less any credentials when the host changes; a redirect that cannot be followed
   * throws SLUICE_API_BAD_RESPONSE, so a 3xx is never taken for the file.
   */
  async stream(req: HttpRequest): Promise<StreamResponse> {
    let hop = req;
    for (let redirects = 0; ; redirects++) {
      const res = await this.#send(hop);
      if (res.statusCode >= 400) throw await toApiError(hop, res);
      if (res.statusCode < 300 || res.statusCode >= 400) {
        return { status: res.statusCode, headers: res.headers, body: res.body };
      }
      await discard(res);
      hop = redirectedRequest(req, hop, res, redirects);
    }
  }

  /** The transport's clock (the `now` option), in milliseconds. */
  now(): number {
    return this.#options.now();
  }

  /**
   * The service's time at `localMs` of this transport's clock: shifted by how far the service's
   * clock was from this one when it last answered (its `Date` header); unshifted until it has.
   * Times the service sends (a file's expiry, when a download was made) are compared with this,
   * never with this machine's clock, which may be days off.
   */
  serviceTime(localMs: number = this.#options.now()): number {
    return localMs + (this.#serviceOffset ?? 0);
  }

  /** Notes the service's clock from an answer's `Date` header (whole seconds). */
  #noteServiceClock(date: string | string[] | undefined): void {
    const text = Array.isArray(date) ? date[0] : date;
    const ms = text === undefined ? Number.NaN : Date.parse(text);
    if (Number.isNaN(ms)) return;
    // The header drops the milliseconds: the middle of its second is the best guess.
    const offset = ms + 500 - this.#options.now();
    this.#serviceOffset = offset;
    if (!this.#skewSaid && Math.abs(offset) >= CLOCK_SKEW_WORTH_SAYING_MS) {
      this.#skewSaid = true;
      this.#options.onClockSkew?.(offset);
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  /**
   * One request, with its retries: each attempt first waits out a pause the service asked of
   * its origin, then a retryable failure is retried after its backoff (or the `Retry-After` the
   * service named) while attempts and the time bound allow.
   */
  async #send(req: HttpRequest): Promise<Dispatcher.ResponseData> {
    const o = this.#options;
    const idempotent = req.idempotent !== false;
    const budgetMs = req.maxWaitMs ?? o.maxRetryTimeMs;
    const deadline = o.now() + budgetMs;
    const { headers, body } = requestContent(req, o.userAgent);
    const origin = originOf(req.url);
    /** Until when this request has already waited (its own backoff, a pause). */
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      waited = await this.#waitOutPause(origin, waited, deadline, req.signal);
      const outcome = await this.#attempt(req, headers, body, origin, idempotent, attempt);
      if ('response' in outcome) return outcome.response;
      const { failure, retryAfterMs, reason } = outcome;
      if (attempt >= o.maxAttempts) throw failure;
      const delayMs = retryAfterMs ?? backoffDelay(attempt, o.baseDelayMs, o.maxDelayMs, o.random);
      // Sleeping past the deadline would only postpone the same failure. When the service named
      // the wait, say so: "failed with 429" alone hides that waiting longer would have worked.
      if (o.now() + delayMs > deadline) {
        if (retryAfterMs !== undefined && failure instanceof ApiError)
          throw askedToWait(failure, retryAfterMs, budgetMs);
        throw failure;
      }
      o.onRetry?.({ method: req.method, path: pathOf(req.url), attempt, delayMs, reason });
      waited = Math.max(waited, o.now() + delayMs);
      await o.sleep(delayMs, req.signal);
    }
  }

  /**
   * The service asked a request to wait (429 or 503 with Retry-After): every request to it
   * waits as long (within its own time bound), not only the one it answered. Jobs run at once
   * poll together; one told to slow down slows them all. Returns the new `waited`.
   */
  async #waitOutPause(
    origin: string,
    waited: number,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<number> {
    const o = this.#options;
    const paused = (this.#pausedUntil.get(origin) ?? 0) - Math.max(o.now(), waited);
    if (paused <= 0) return waited;
    const wait = Math.min(paused, Math.max(0, deadline - o.now()));
    const until = Math.max(waited, o.now() + wait);
    await o.sleep(wait, signal);
    return until;
  }

  /**
   * One attempt: the answer when it is final (success, or a failure not worth retrying), else
   * the failure to retry, the service's `Retry-After` and the reason the retry event gives. A
   * failure that must not be retried (an abort, a non-idempotent request that reached the
   * service) throws.
   */
  async #attempt(
    req: HttpRequest,
    headers: Record<string, string>,
    body: string | undefined,
    origin: string,
    idempotent: boolean,
    attempt: number,
  ): Promise<
    | { response: Dispatcher.ResponseData }
    | { failure: SluiceError; retryAfterMs: number | undefined; reason: string }
  > {
    const o = this.#options;
    const sent = performance.now();
    const exchanged = (outcome: { status: number } | { error: string }) =>
      o.onExchange?.({
        method: req.method,
        path: loggedPath(req.url),
        ...outcome,
        ms: Math.round(performance.now() - sent),
        attempt,
      });
    // Kept when reading the refusal's body fails after it: the wait the service named stands.
    let retryAfterMs: number | undefined;
    try {
      let res: Dispatcher.ResponseData;
      try {
        res = await request(req.url, {
          method: req.method,
          headers,
          body,
          signal: req.signal,
          dispatcher: this.#agent,
        });
      } catch (error) {
        exchanged({ error: errorCode(error) ?? (req.signal?.aborted ? 'aborted' : 'error') });
        throw error;
      }
      exchanged({ status: res.statusCode });
      this.#noteServiceClock(res.headers.date);
      const retryable =
        RETRY_STATUSES.has(res.statusCode) && (idempotent || REFUSED_STATUSES.has(res.statusCode));
      if (!retryable) return { response: res };
      // An HTTP date in Retry-After is the service's time: read against its clock.
      retryAfterMs = parseRetryAfter(res.headers['retry-after'], this.serviceTime());
      if (retryAfterMs !== undefined && REFUSED_STATUSES.has(res.statusCode)) {
        const until = o.now() + retryAfterMs;
        if (until > (this.#pausedUntil.get(origin) ?? 0)) this.#pausedUntil.set(origin, until);
      }
      const failure = await toApiError(req, res);
      return { failure, retryAfterMs, reason: `HTTP ${res.statusCode}` };
    } catch (error) {
      if (req.signal?.aborted) throw req.signal.reason;
      const connection = toConnectionError(req, error);
      if (!idempotent && connection.requestSent) throw connection;
      return { failure: connection, retryAfterMs, reason: errorCode(error) ?? 'network error' };
    }
  }
}

/** A request's headers (ours, then its own) and its body: JSON, when it carries any. */
function requestContent(
  req: HttpRequest,
  userAgent: string,
): { headers: Record<string, string>; body: string | undefined } {
  const headers: Record<string, string> = {
    'user-agent': userAgent,
    accept: 'application/json',
    ...req.headers,
  };
  let body: string | undefined;
  if (req.json !== undefined) {
    body = JSON.stringify(req.json);
    headers['content-type'] = 'application/json';
  }
  return { headers, body };
}

/**
 * Full jitter: uniform in [0, min(max, base * 2^(attempt-1))], so clients that failed together
 * do not come back together.
 */
export function backoffDelay(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number,
): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/** `Retry-After` as milliseconds from now: delay-seconds or an HTTP date; undefined if absent or bad. */
export function parseRetryAfter(
  value: string | string[] | undefined,
  nowMs: number,
): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // Only the date forms: Date.parse would also read "5 minutes" as something.
  if (!/[a-z]{3}.*\d{2}:\d{2}:\d{2}/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** A sleep that ends early, rejecting with the signal's reason, when the signal aborts. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * True when a failed request may still have been carried out by the service: the connection
 * broke after the request was sent, or a 500, 502 or 504 (the work may have run behind it).
 */
export function isAmbiguousFailure(error: unknown): boolean {
  if (error instanceof ConnectionError) return error.requestSent;
  return error instanceof ApiError && [500, 502, 504].includes(error.status);
}

/**
 * The messages in an error body, from every shape the service uses: v4 `{error, message, code,
 * details[{field, message}]}`, the real-world `{"errors": ["..."]}`, v3 `{error}`, and the XML of
 * storage services (`<Message>`). Each said once: a detail that only repeats the message (or an
 * earlier detail) is left out, one that adds to it is kept (see `repeats`).
 */
export function errorMessages(body: unknown, text: string): string[] {
  const out: string[] = [];
  const add = (value: unknown) => {
    const message = typeof value === 'string' ? value.trim() : '';
    if (!message || out.some((m) => repeats(message, m))) return;
    // A message that says all an earlier one did, and more, takes its place.
    const covered = out.findIndex((m) => repeats(m, message));
    if (covered < 0) out.push(clip(message));
    else out.splice(covered, 1, clip(message));
  };
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    if (Array.isArray(b.errors)) {
      for (const entry of b.errors) {
        if (typeof entry === 'string') add(entry);
        else if (entry && typeof entry === 'object')
          add(detailText(entry as Record<string, unknown>));
      }
    }
    add(typeof b.message === 'string' && b.message.trim() ? b.message : b.error);
    if (Array.isArray(b.details)) {
      for (const d of b.details)
        if (d && typeof d === 'object') add(detailText(d as Record<string, unknown>));
    }
    return out;
  }
  const xml = /<Message>([\s\S]*?)<\/Message>/.exec(text);
  if (xml?.[1]) add(xml[1]);
  else if (text.trim() && !/^\s*</.test(text)) add(text);
  return out;
}

function detailText(d: Record<string, unknown>): string {
  const message = typeof d.message === 'string' ? d.message : '';
  const field = typeof d.field === 'string' ? d.field : '';
  if (!message) return field;
  // "view: no such view", but not "num_records: required property 'num_records' is missing".
  const named = message.startsWith(field) || message.includes(`'${field}'`);
  return field && !named ? `${field}: ${message}` : message;
}

/**
 * Whether `text` says nothing that `said` does not: each of its words is one of said's, case,
 * quotes, punctuation and a plural's `s` aside, a word of four letters or more also as the start
 * of one (`name` in `named`). Numbers (`-1`, `2.5`) and signs (`<=`) are words too, so a detail
 * with another limit or operator is kept: "view 'x' does not exist" repeats "view does not exist: x";
 * "num_records: must be <= 10" does not repeat "Invalid request".
 */
function repeats(text: string, said: string): boolean {
  const have = words(said);
  return [...words(text)].every(
    (w) =>
      have.has(w) ||
      (w.length >= 4 && /^\p{L}+$/u.test(w) && [...have].some((h) => h.startsWith(w))),
  );
}

function words(text: string): Set<string> {
  const found =
    text.toLowerCase().match(/-?\p{N}+(?:\.\p{N}+)*|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_'"`.,;:()]+/gu) ??
    [];
  return new Set(found.map((w) => (w.length > 3 && w.endsWith('s') ? w.slice(0, -1) : w)));
}

function clip(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}...` : text;
}

/** The URL path alone: the query string of a pre-signed URL is its signature. */
export function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url.split('?')[0] ?? '';
  }
}

/** Query parameters whose values may be secrets: a signed URL's signature, a key, a token. */
const SECRET_PARAM = /sig|token|key|secret|pass|credential|auth|session/i;

/**
 * A URL's path and query for the log: the values of parameters that may be secrets (a signed
 * result-file URL's signature, an API key) are `[redacted]`, and the host is left out.
 */
export function loggedPath(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return pathOf(url);
  }
  const params = [...parsed.searchParams].map(([name, value]) =>
    SECRET_PARAM.test(name)
      ? `${name}=[redacted]`
      : new URLSearchParams({ [name]: value }).toString(),
  );
  return params.length === 0 ? parsed.pathname : `${parsed.pathname}?${params.join('&')}`;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** A URL for messages: no user, password, query or fragment (a signature, a token). */
function bareUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

function locationOf(res: Dispatcher.ResponseData): string | undefined {
  const value = res.headers.location;
  const location = (Array.isArray(value) ? value[0] : value)?.trim();
  return location ? location : undefined;
}

/** Where a redirect points, for messages; undefined when it points nowhere usable. */
function redirectTarget(req: HttpRequest, res: Dispatcher.ResponseData): URL | undefined {
  const location = locationOf(res);
  if (location === undefined) return undefined;
  try {
    return new URL(location, req.url);
  } catch {
    return undefined;
  }
}

/**
 * The request to send after redirect `res` to `hop` (the `redirects`th followed for `first`),
 * or the error that ends the exchange: no usable Location, not HTTP, or one redirect too many.
 */
function redirectedRequest(
  first: HttpRequest,
  hop: HttpRequest,
  res: Dispatcher.ResponseData,
  redirects: number,
): HttpRequest {
  const where = `${first.method} ${pathOf(first.url)}`;
  const status = res.statusCode;
  const target = redirectTarget(hop, res);
  const fail = (problem: string) =>
    new SluiceError(`${where}: ${problem}`, { code: 'SLUICE_API_BAD_RESPONSE' });
  if (!FOLLOWED_REDIRECTS.has(status)) {
    const to = target ? ` to ${bareUrl(target)}` : '';
    throw fail(`the server answered ${status}${to}, a redirect that is not followed`);
  }
  if (target === undefined) {
    throw fail(`the server answered ${status} without a usable Location to go to`);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw fail(`the server redirected to ${target.protocol} URL, which is not HTTP`);
  }
  if (redirects >= MAX_REDIRECTS) {
    throw fail(
      `the server redirected more than ${MAX_REDIRECTS} times (last to ${bareUrl(target)}); a redirect loop`,
    );
  }
  const headers = { ...hop.headers };
  if (target.origin !== new URL(hop.url).origin) {
    for (const name of Object.keys(headers)) {
      if (CREDENTIAL_HEADERS.includes(name.toLowerCase())) delete headers[name];
    }
  }
  return { ...hop, url: target.href, headers };
}

/** A redirect where the service's API never sends one: a login page, a proxy, http for https. */
function unexpectedRedirect(req: HttpRequest, res: Dispatcher.ResponseData): SluiceError {
  const target = redirectTarget(req, res);
  const to = target ? `a redirect to ${bareUrl(target)}` : 'a redirect without a Location';
  return new SluiceError(
    `${req.method} ${pathOf(req.url)}: expected JSON from the service, got ${res.statusCode}, ${to}; check that the service URL points at the service's API`,
    { code: 'SLUICE_API_NOT_JSON' },
  );
}

/** Reads what is left of a body that is not wanted, so its connection can be used again. */
async function discard(res: Dispatcher.ResponseData): Promise<void> {
  try {
    await res.body.dump();
  } catch {
    // The status is what matters; a body cut short adds nothing.
  }
}

async function toApiError(req: HttpRequest, res: Dispatcher.ResponseData): Promise<ApiError> {
  let text = '';
  try {
    text = await res.body.text();
  } catch {
    // The status is what matters; a body cut short adds nothing.
  }
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (an HTML gateway page, storage XML): keep the text.
  }
  const status = res.statusCode;
  return new ApiError({
    status,
    method: req.method,
    path: pathOf(req.url),
    body,
    details: errorMessages(body, text),
  });
}

/** The failure, saying that the service's `Retry-After` ends past what the request may wait. */
function askedToWait(failure: ApiError, retryAfterMs: number, budgetMs: number): ApiError {
  const seconds = (ms: number) => Math.ceil(ms / 1000);
  return new ApiError({
    status: failure.status,
    method: failure.method,
    path: failure.path,
    body: failure.body,
    details: [
      ...failure.details,
      `the service asked to wait ${seconds(retryAfterMs)} seconds (Retry-After), past the ${seconds(budgetMs)} s this call may wait`,
    ],
  });
}

/**
 * The JSON of an answer. Text that begins as JSON does (`{` or `[`) and does not parse was cut
 * short or broken on the way: SLUICE_API_BAD_JSON, worth a retry. Any other text that does not
 * parse (an HTML page, a proxy's note) is not the service speaking: SLUICE_API_NOT_JSON, which
 * says what came instead.
 */
function parseBody(req: HttpRequest, res: Dispatcher.ResponseData, text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    const where = `${req.method} ${pathOf(req.url)}`;
    if (/^\s*[[{]/.test(text)) {
      throw new SluiceError(`${where}: the service sent a body that is not valid JSON`, {
        code: 'SLUICE_API_BAD_JSON',
        cause: error,
      });
    }
    const type = String(res.headers['content-type'] ?? '') || 'no content type';
    throw new SluiceError(
      `${where}: expected JSON from the service, got ${res.statusCode} (${type}): ${visiblePrefix(text)}; check that the service URL points at the service's API`,
      { code: 'SLUICE_API_NOT_JSON' },
    );
  }
}

/** A redirect's body: its JSON when it has some, else nothing. */
function lenientBody(text: string): unknown {
  try {
    return text.trim() === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The first characters of a body, quoted, with control characters shown as escapes. */
function visiblePrefix(text: string, length = 200): string {
  const head = text.slice(0, length).replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    return named[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
  return `"${head}"${text.length > length ? '...' : ''}`;
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function toConnectionError(req: HttpRequest, error: unknown): ConnectionError {
  const code = errorCode(error);
  const sent = code === undefined || !NOT_SENT_CODES.has(code);
  const host = hostOf(req.url);
  const detail = error instanceof Error ? error.message : String(error);
  const message = sent
    ? `${req.method} ${pathOf(req.url)}: the connection to ${host} failed before an answer (${code ?? 'error'}: ${detail})`
    : `${req.method} ${pathOf(req.url)}: could not connect to ${host} (${code}: ${detail})`;
  return new ConnectionError(message, sent, error);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the service';
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
