import { ApiError, NetworkError, SluiceError } from '../errors.js';

/** An operation the chosen API version does not have (views on v3, people searches on v3, ...). */
export class UnsupportedError extends SluiceError {
  readonly api: 'v4' | 'v3';
  readonly operation: string;

  constructor(api: 'v4' | 'v3', operation: string, hint?: string) {
    super(`the ${api} API has no ${operation}${hint ? `; ${hint}` : ''}`, {
      code: 'SLUICE_UNSUPPORTED',
    });
    this.name = 'UnsupportedError';
    this.api = api;
    this.operation = operation;
  }
}

/**
 * A connection failure, with whether the request may have reached the service. Only a failure
 * before the request was written (refused, unreachable, connect timeout) is known to have done
 * nothing; anything later is ambiguous, which matters for requests that spend credits.
 */
export class ConnectionError extends NetworkError {
  readonly requestSent: boolean;

  constructor(message: string, requestSent: boolean, cause?: unknown) {
    super(message, cause);
    this.name = 'NetworkError';
    this.requestSent = requestSent;
  }
}

/**
 * A download start failed in a way that leaves open whether the service started it, and the
 * client could not find out. Not retryable: a blind retry may pay for the download twice.
 */
export class DownloadUncertainError extends SluiceError {
  constructor(message: string, cause?: unknown) {
    super(message, { code: 'SLUICE_DOWNLOAD_UNCERTAIN', cause });
    this.name = 'DownloadUncertainError';
  }
}

/**
 * The service's 401 to a call made with the account's API token, saying what it means and what
 * to do (`also`: the other way in, where there is one). The same code (SLUICE_API_401, a mistake
 * to fix): no login can mend a token, so none is tried.
 */
export function apiTokenRefused(error: ApiError, also?: string): ApiError {
  return new ApiError({
    status: error.status,
    method: error.method,
    path: error.path,
    body: error.body,
    details: [
      ...error.details,
      `the API token was refused: it is wrong or has expired; copy the current one from the web portal into SLUICE_API_TOKEN (or --token, or token: in the pipeline file)${also ? `, ${also}` : ''}`,
    ],
  });
}

/** The API version a service URL's path names (`.../v4`, `.../api/v3/`), or undefined. */
export function urlApiVersion(url: string): 'v3' | 'v4' | undefined {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return undefined;
  }
  const named = path.split('/').filter((s) => s === 'v3' || s === 'v4');
  return named.length === 1 ? (named[0] as 'v3' | 'v4') : undefined;
}

/**
 * A 404 from a service whose URL names the other API version than the one spoken: the likely
 * cause is that the two disagree (a v3 pipeline given a `/v4` URL), which the 404's own "no such
 * operation" does not say. Any other error is returned as it is.
 */
export function versionHint(error: unknown, api: 'v3' | 'v4', baseUrl: string): unknown {
  if (!(error instanceof ApiError) || error.status !== 404) return error;
  const named = urlApiVersion(baseUrl);
  if (named === undefined || named === api) return error;
  return new ApiError({
    status: error.status,
    method: error.method,
    path: error.path,
    body: error.body,
    details: [
      ...error.details,
      `the service URL ${baseUrl} names the ${named} API, but sluice speaks ${api} to it (api: ${api}): make them agree, api: ${named} or the ${api} root URL`,
    ],
  });
}
