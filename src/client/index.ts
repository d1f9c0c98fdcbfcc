import { UsageError } from '../errors.js';
import { type ClientEvent, eventSink } from './events.js';
import { HttpTransport, type TransportOptions } from './http.js';
import type { ConnectionSettings, ServiceClient } from './types.js';
import { V3Client } from './v3.js';
import { V4Client } from './v4.js';

export { DownloadUncertainError, UnsupportedError, urlApiVersion } from './errors.js';
export type { ClientEvent } from './events.js';
export { FILE_TRIES, isTransferFault } from './files.js';
export type { ExchangeEvent } from './http.js';
export type * from './types.js';

export interface ClientOptions extends TransportOptions {
  /** Range requests after connection cuts, per result file (default 5). */
  maxFileResumes?: number;
  /** Fresh URLs after 403 (expired), per result file (default 2). */
  maxFileRefreshes?: number;
  /**
   * Told of what the client does on its own: retries (the transport's `onRetry` too),
   * logins after a 401, fresh result-file URLs, resumed files, safeguard calls that failed and
   * recovered download starts. Never given a secret. What it throws is ignored.
   */
  onEvent?: (event: ClientEvent) => void;
}

/**
 * A client for the API version of the settings: `api`, or else the URL's last path segment
 * (`/v3` or `/v4`). Credentials are checked here, before any request: v4 needs an email and a
 * password (preferred when given: sluice logs in again when the session expires) or the API
 * token, v3 the API token. Credentials written into the URL (`https://token:@host/v3`) are
 * taken out of it and used as such.
 */
export function createServiceClient(
  settings: ConnectionSettings,
  options: ClientOptions = {},
): ServiceClient {
  const { url, userinfo } = splitUrl(settings.url);
  const api = settings.api ?? apiOfUrl(url);
  const { maxFileResumes, maxFileRefreshes, onEvent, ...transport } = options;
  const emit = eventSink(onEvent);
  const files = {
    ...(maxFileResumes === undefined ? {} : { maxFileResumes }),
    ...(maxFileRefreshes === undefined ? {} : { maxFileRefreshes }),
    onEvent: emit,
  };
  const { onRetry, onClockSkew } = transport;
  transport.onRetry = (event) => {
    onRetry?.(event);
    emit({ type: 'retry', ...event });
  };
  transport.onClockSkew = (offsetMs) => {
    onClockSkew?.(offsetMs);
    emit({ type: 'clock-skew', offsetMs });
  };
  if (api === 'v3') {
    const token = settings.token || userinfo.user;
    if (!token) {
      throw new UsageError(
        'the v3 API needs an API token: set SLUICE_API_TOKEN (or pass --token)',
        'SLUICE_CREDENTIALS',
      );
    }
    return new V3Client({ baseUrl: url, token, http: new HttpTransport(transport), ...files });
  }
  const email = settings.email || userinfo.user;
  const password = settings.password || userinfo.password;
  const v4 = { baseUrl: url, http: new HttpTransport(transport), ...files };
  if (email && password) return new V4Client({ ...v4, login: { email, password } });
  // The API token from the web portal is a bearer token on v4 too (the service's guides use it
  // so), and many customers hold only that. A URL's user without a password is a token, as v3
  // writes it (`https://TOKEN:@host`).
  const token = settings.token || (userinfo.password ? '' : userinfo.user);
  if (token) return new V4Client({ ...v4, token });
  const missing = [
    email ? undefined : 'SLUICE_EMAIL',
    password ? undefined : 'SLUICE_PASSWORD',
  ].filter(Boolean);
  throw new UsageError(
    `the v4 API needs an email and a password, or an API token: set ${missing.join(' and ')} (or pass --email/--password), or SLUICE_API_TOKEN (or pass --token)`,
    'SLUICE_CREDENTIALS',
  );
}

/**
 * Connection settings from SLUICE_API_URL, SLUICE_EMAIL, SLUICE_PASSWORD and SLUICE_API_TOKEN,
 * with `overrides` (command-line flags) taking precedence. Empty variables count as unset.
 */
export function connectionFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<ConnectionSettings> = {},
): ConnectionSettings {
  const pick = (override: string | undefined, name: string) => override || env[name] || undefined;
  const url = pick(overrides.url, 'SLUICE_API_URL');
  if (!url) {
    throw new UsageError(
      'no service URL: set SLUICE_API_URL (or pass --url), e.g. https://host/v4 or, for the emulator, http://127.0.0.1:8787/v4',
    );
  }
  const settings: ConnectionSettings = { url };
  if (overrides.api !== undefined) settings.api = overrides.api;
  const email = pick(overrides.email, 'SLUICE_EMAIL');
  const password = pick(overrides.password, 'SLUICE_PASSWORD');
  const token = pick(overrides.token, 'SLUICE_API_TOKEN');
  if (email !== undefined) settings.email = email;
  if (password !== undefined) settings.password = password;
  if (token !== undefined) settings.token = token;
  return settings;
}

function apiOfUrl(url: string): 'v4' | 'v3' {
  const path = new URL(url).pathname.replace(/\/+$/, '');
  if (/\/v3$/i.test(path)) return 'v3';
  if (/\/v4$/i.test(path)) return 'v4';
  throw new UsageError(
    `cannot tell the API version from ${url}: end the URL with /v4 or /v3, or set the API version`,
  );
}

/** The URL without credentials, and the credentials it carried. */
function splitUrl(raw: string): { url: string; userinfo: { user: string; password: string } } {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    // The text may hold credentials: leave it out of the message.
    throw new UsageError(
      'the service URL is not a valid absolute URL (expected e.g. https://host/v4)',
    );
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`the service URL must use http or https, not ${parsed.protocol}`);
  }
  const userinfo = { user: safeDecode(parsed.username), password: safeDecode(parsed.password) };
  parsed.username = '';
  parsed.password = '';
  parsed.search = '';
  parsed.hash = '';
  return { url: parsed.toString().replace(/\/+$/, ''), userinfo };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
