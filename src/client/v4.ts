// Longer than most files on purpose: one class per API version keeps every v4 wire form (and
// its variants from the real service) in one place beside v3.ts; split, they would scatter.
import type { Readable } from 'node:stream';
import { CREDIT_TYPES, isDataType } from '../catalog.js';
import { ApiError, UsageError } from '../errors.js';
import { apiTokenRefused, versionHint } from './errors.js';
import { type EventSink, eventSink } from './events.js';
import { openDownloadFile } from './files.js';
import { type HttpMethod, type HttpTransport, type JsonResponse, pathOf } from './http.js';
import { readPages } from './pages.js';
import { startDownloadOnce } from './recovery.js';
import {
  checkDownloadSize,
  checkPreviewSize,
  checkSearchQuery,
  propertyOptionsUsed,
} from './request-checks.js';
import {
  asObject,
  badResponse,
  downloadStatus,
  idOf,
  itemOf,
  optionalNumber,
  optionalString,
  recordsOf,
  resultFiles,
  totalCost,
} from './responses.js';
import type {
  AccountChanges,
  AccountInfo,
  AccountPlan,
  CallOptions,
  CountResult,
  DownloadInfo,
  DownloadRequest,
  DownloadStart,
  PreviewResult,
  RealTimeRequest,
  ResultFileRef,
  ScrapeResult,
  SearchRequest,
  ServiceClient,
  StartDownloadOptions,
  TargetedUpdateInfo,
  ViewInfo,
} from './types.js';

/**
 * How a v4 client authenticates: an email and a password it logs in with (`POST /auth`), or the
 * account's API token, sent as the bearer token as it is.
 */
export type V4Credentials =
  | { login: { email: string; password: string }; token?: undefined }
  | { token: string; login?: undefined };

export type V4ClientInit = V4Credentials & {
  /** The v4 root without credentials, e.g. `https://host/v4`. */
  baseUrl: string;
  http: HttpTransport;
  maxFileResumes?: number;
  maxFileRefreshes?: number;
  onEvent?: EventSink | undefined;
};

interface Call {
  json?: unknown;
  idempotent?: boolean;
  signal?: AbortSignal | undefined;
  maxWaitMs?: number | undefined;
}

/**
 * The v4 API: bearer tokens, JSON bodies. With an email and a password the token comes from
 * `POST /auth` on first use, is kept in memory only, and is renewed once per call when the
 * service answers 401. With the account's API token, that token is the bearer token: there is
 * no login, and a 401 says the token itself is wrong or expired, which only its owner can mend.
 */
export class V4Client implements ServiceClient {
  readonly api = 'v4' as const;
  readonly baseUrl: string;
  readonly #http: HttpTransport;
  /** What `POST /auth` takes; undefined when the client holds an API token instead. */
  #credentials: { email: string; password: string } | undefined;
  /** The account's API token, sent as it is; never renewed. */
  readonly #apiToken: string | undefined;
  /** The session token from the last login. */
  #token: string | undefined;
  /** The login in flight, shared by every call that needs a token meanwhile. */
  #login: Promise<string> | undefined;
  readonly #fileOptions: { maxResumes?: number; maxRefreshes?: number; onEvent: EventSink };
  readonly #emit: EventSink;

  constructor(init: V4ClientInit) {
    this.baseUrl = init.baseUrl.replace(/\/+$/, '');
    this.#http = init.http;
    this.#credentials = init.login && { ...init.login };
    this.#apiToken = init.token;
    this.#emit = eventSink(init.onEvent);
    this.#fileOptions = {
      ...(init.maxFileResumes === undefined ? {} : { maxResumes: init.maxFileResumes }),
      ...(init.maxFileRefreshes === undefined ? {} : { maxRefreshes: init.maxFileRefreshes }),
      onEvent: this.#emit,
    };
  }

  async health(options?: CallOptions): Promise<{ status: string }> {
    const body = asObject((await this.#call('GET', '/health', options)).body, 'health');
    return { status: optionalString(body.status) ?? 'unknown' };
  }

  async account(options?: CallOptions): Promise<AccountInfo> {
    return toAccount((await this.#call('GET', '/account', options)).body);
  }

  async updateAccount(changes: AccountChanges, options?: CallOptions): Promise<AccountInfo> {
    const body: Record<string, string> = {};
    if (changes.email !== undefined) body.email = changes.email;
    if (changes.password !== undefined) body.password = changes.password;
    if (changes.firstName !== undefined) body.first_name = changes.firstName;
    if (changes.lastName !== undefined) body.last_name = changes.lastName;
    const res = await this.#call('PUT', '/account', { ...options, json: body });
    // Later logins (a token renewal, say) must use the new credentials; a password change
    // also ends every token issued before it. An API token is not a login's: it stays.
    if (this.#credentials) {
      if (changes.email !== undefined) this.#credentials.email = changes.email;
      if (changes.password !== undefined) {
        this.#credentials.password = changes.password;
        this.#token = undefined;
      }
    }
    return toAccount(res.body);
  }

  async listViews(options?: CallOptions): Promise<ViewInfo[]> {
    const views = await this.#list('/views', 'list views', 'views', options);
    return views.map((v) => toView(v, 'list views'));
  }

  async getView(name: string, options?: CallOptions): Promise<ViewInfo> {
    return toView((await this.#call('GET', viewPath(name), options)).body, 'get view');
  }

  async createView(
    view: { name: string; fields: string[] },
    options?: CallOptions,
  ): Promise<ViewInfo> {
    const res = await this.#call('POST', '/views', {
      ...options,
      json: { name: view.name, fields: view.fields },
    });
    return toView(res.body, 'create view');
  }

  async updateView(
    name: string,
    changes: { name?: string; fields?: string[] },
    options?: CallOptions,
  ): Promise<ViewInfo> {
    const json: Record<string, unknown> = {};
    if (changes.name !== undefined) json.name = changes.name;
    if (changes.fields !== undefined) json.fields = changes.fields;
    return toView(
      (await this.#call('PUT', viewPath(name), { ...options, json })).body,
      'update view',
    );
  }

  async deleteView(name: string, options?: CallOptions): Promise<void> {
    await this.#call('DELETE', viewPath(name), options);
  }

  async preview(
    request: SearchRequest & { numRecords: number },
    options?: CallOptions,
  ): Promise<PreviewResult> {
    checkPreviewSize(request.numRecords);
    const body = asObject(
      (await this.#search(request, request.numRecords, false, options)).body,
      'preview',
    );
    return {
      numFound: optionalNumber(body.num_found) ?? 0,
      totalCost: totalCost(body) ?? 0,
      records: recordsOf(body),
    };
  }

  async count(request: SearchRequest, options?: CallOptions): Promise<CountResult> {
    const body = asObject((await this.#search(request, 0, false, options)).body, 'count');
    const numFound = optionalNumber(body.num_found);
    if (numFound === undefined) throw badResponse('count', 'no num_found');
    return { numFound };
  }

  async startDownload(
    request: DownloadRequest,
    options?: StartDownloadOptions,
  ): Promise<DownloadStart> {
    checkDownloadSize(request.numRecords);
    this.#searchBody(request, 0, true);
    const { verify, ...callOptions } = options ?? {};
    return startDownloadOnce({
      what: `${request.type} download`,
      list: () => this.listDownloads(callOptions),
      // v4 downloads do not say what they searched: any new one is taken as ours, unless the
      // caller can tell (verify).
      isOurs: () => true,
      verify,
      now: () => this.#http.serviceTime(),
      onEvent: this.#emit,
      signal: callOptions.signal,
      start: async () => {
        // The interface requires num_records on a v4 search: a download of every match asks for
        // the matches counted now (free), never a made-up large number, which a service may
        // refuse or check its credits against.
        const numRecords =
          request.numRecords ?? Math.max(1, (await this.count(request, callOptions)).numFound);
        const res = await this.#search(request, numRecords, true, callOptions);
        return toDownloadStart(res);
      },
    });
  }

  async getDownload(id: string, options?: CallOptions): Promise<DownloadInfo> {
    const body = (await this.#call('GET', downloadPath(id), options)).body;
    return toDownload(itemOf(body, 'get download', 'download'), 'get download');
  }

  async listDownloads(options?: CallOptions): Promise<DownloadInfo[]> {
    const downloads = await this.#list('/downloads', 'list downloads', 'downloads', options);
    return downloads.map((d) => toDownload(d, 'list downloads'));
  }

  async cancelDownload(id: string, options?: CallOptions): Promise<void> {
    await this.#call('DELETE', downloadPath(id), options);
  }

  openResultFile(
    downloadId: string,
    file: ResultFileRef,
    options?: CallOptions,
  ): Promise<Readable> {
    return openDownloadFile(
      { http: this.#http, ...this.#fileOptions },
      downloadId,
      file,
      (id, callOptions) => this.getDownload(id, callOptions),
      options,
    );
  }

  async createTargetedUpdate(
    request: RealTimeRequest,
    options?: CallOptions,
  ): Promise<TargetedUpdateInfo> {
    checkSearchQuery(request.query, request.type ?? 'properties');
    const res = await this.#call('POST', '/targeted-updates', {
      ...options,
      json: realTimeBody(request),
      // It spends credits: a blind retry after a lost answer could pay twice.
      idempotent: false,
    });
    return toTargetedUpdate(res.body);
  }

  async listTargetedUpdates(options?: CallOptions): Promise<TargetedUpdateInfo[]> {
    const updates = await this.#list(
      '/targeted-updates',
      'list targeted updates',
      'targeted_updates',
      options,
    );
    return updates.map(toTargetedUpdate);
  }

  async scrape(request: RealTimeRequest, options?: CallOptions): Promise<ScrapeResult> {
    checkSearchQuery(request.query, request.type ?? 'properties');
    const res = await this.#call('POST', '/scrape', {
      ...options,
      json: realTimeBody(request),
      idempotent: false,
    });
    const body = asObject(res.body, 'scrape');
    const found = recordsOf(body);
    return {
      id: idOf(body.id, 'scrape'),
      status: optionalString(body.status) ?? 'unknown',
      numRecords: optionalNumber(body.num_records) ?? found.length,
      ...optional('totalCost', totalCost(body)),
      records: found,
    };
  }

  serviceTime(localMs?: number): number {
    return this.#http.serviceTime(localMs);
  }

  async close(): Promise<void> {
    await this.#http.close();
  }

  #searchBody(
    request: SearchRequest,
    numRecords: number,
    download: boolean,
  ): Record<string, unknown> {
    checkSearchQuery(request.query, request.type);
    const body: Record<string, unknown> = {
      query: request.query,
      num_records: numRecords,
      download,
    };
    if (request.format !== undefined) body.format = request.format;
    if (request.view !== undefined && request.view !== '') body.view = request.view;
    if (request.type === 'properties') {
      if (request.autoTrace !== undefined) body.auto_trace = request.autoTrace;
      if (request.addressMatching !== undefined) body.address_matching = request.addressMatching;
      if (request.onlyTraceable !== undefined) body.only_traceable = request.onlyTraceable;
    } else {
      const used = propertyOptionsUsed(request);
      if (used.length > 0) {
        throw new UsageError(
          `${used.join(', ')} apply to property searches only, not ${request.type}`,
        );
      }
    }
    return body;
  }

  #search(request: SearchRequest, numRecords: number, download: boolean, options?: CallOptions) {
    const json = this.#searchBody(request, numRecords, download);
    return this.#call('POST', `/${request.type}/search`, {
      ...options,
      json,
      idempotent: !download,
    });
  }

  #call(method: HttpMethod, path: string, call: Call = {}): Promise<JsonResponse> {
    return this.#callUrl(method, this.baseUrl + path, call);
  }

  /** Every item of a list the service may answer in pages (pages.ts). */
  async #list(path: string, operation: string, key: string, options?: CallOptions) {
    return readPages({
      operation,
      key,
      url: this.baseUrl + path,
      get: (url) => this.#callUrl('GET', url, options),
    });
  }

  async #callUrl(method: HttpMethod, url: string, call: Call = {}): Promise<JsonResponse> {
    try {
      return await this.#callAuthorized(method, url, call);
    } catch (error) {
      throw versionHint(error, 'v4', this.baseUrl);
    }
  }

  async #callAuthorized(method: HttpMethod, url: string, call: Call): Promise<JsonResponse> {
    const send = (token: string) =>
      this.#http.json({
        method,
        url,
        headers: { authorization: `Bearer ${token}` },
        json: call.json,
        idempotent: call.idempotent ?? true,
        signal: call.signal,
        maxWaitMs: call.maxWaitMs,
      });
    const token = await this.#tokenFor(call.signal);
    try {
      return await send(token);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) throw error;
      // Nothing to log in with: the token the customer gave is the one refused.
      if (this.#apiToken !== undefined) {
        throw apiTokenRefused(
          error,
          'or use an email and a password (SLUICE_EMAIL, SLUICE_PASSWORD), with which sluice logs in again by itself',
        );
      }
      // A 401 is decided before any work, so even a download start may be sent again.
      if (this.#token === token) this.#token = undefined;
      const renewed = await this.#tokenFor(call.signal);
      this.#emit({ type: 'reauthenticated', method, path: pathOf(url) });
      return await send(renewed);
    }
  }

  async #tokenFor(signal: AbortSignal | undefined): Promise<string> {
    if (this.#apiToken !== undefined) return this.#apiToken;
    if (this.#token !== undefined) return this.#token;
    if (!this.#login) {
      const login = this.#authenticate();
      this.#login = login;
      login.then(
        () => this.#clearLogin(login),
        () => this.#clearLogin(login),
      );
    }
    return untilAborted(this.#login, signal);
  }

  #clearLogin(login: Promise<string>): void {
    if (this.#login === login) this.#login = undefined;
  }

  async #authenticate(): Promise<string> {
    // Only a client with credentials gets here (#tokenFor returns an API token first).
    const { email, password } = this.#credentials!;
    // Not tied to one caller's signal: other calls may be waiting on the same login.
    const res = await this.#http.json({
      method: 'POST',
      url: `${this.baseUrl}/auth`,
      json: { email, password },
    });
    const token = optionalString(asObject(res.body, 'login').token);
    if (!token) throw badResponse('login', 'no token');
    this.#token = token;
    return token;
  }
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function viewPath(name: string): string {
  return `/views/${encodeURIComponent(name)}`;
}

function downloadPath(id: string): string {
  return `/downloads/${encodeURIComponent(id)}`;
}

function realTimeBody(request: RealTimeRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { query: request.query, num_records: request.numRecords };
  if (request.type !== undefined) body.data_type = request.type;
  return body;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function toAccount(value: unknown): AccountInfo {
  const body = asObject(value, 'account');
  const email = optionalString(body.email);
  if (email === undefined) throw badResponse('account', 'no email');
  const credits = {} as AccountInfo['credits'];
  for (const type of CREDIT_TYPES) {
    const allotted = optionalNumber(body[`${type}_credits_allotted`]) ?? 0;
    const used = optionalNumber(body[`${type}_credits_used`]) ?? 0;
    credits[type] = { allotted, used, remaining: Math.max(0, allotted - used) };
  }
  const totalUsed = optionalNumber(body.num_credits_used);
  return {
    email,
    ...optional('firstName', optionalString(body.first_name)),
    ...optional('lastName', optionalString(body.last_name)),
    plan: accountPlan(credits, totalUsed),
    credits,
    ...optional('totalUsed', totalUsed),
  };
}

/**
 * A legacy plan has no allotment per data type, only the total counter (`num_credits_used`):
 * read as per-type, it would be an account with nothing left of anything, and the credit guard
 * would refuse every job it could pay for. An account with neither is per-type and empty.
 */
function accountPlan(credits: AccountInfo['credits'], totalUsed: number | undefined): AccountPlan {
  const allotments = CREDIT_TYPES.some((type) => credits[type].allotted > 0);
  return !allotments && totalUsed !== undefined ? 'legacy' : 'per-type';
}

function toView(value: unknown, operation: string): ViewInfo {
  const body = asObject(value, operation);
  const name = optionalString(body.name);
  if (name === undefined) throw badResponse(operation, 'a view without a name');
  const fields = Array.isArray(body.fields)
    ? body.fields.filter((f): f is string => typeof f === 'string')
    : [];
  return { name, fields, ...optional('createdAt', optionalString(body.created_at)) };
}

/**
 * Both forms of a started download: the search response with `download_id` (contract), or the
 * HTTP 202 download object itself (`id`, `status`, `num_downloaded`, `total_cost`).
 */
function toDownloadStart(res: JsonResponse): DownloadStart {
  const body = asObject(res.body, 'start download');
  const raw =
    body.download_id ?? (res.status === 202 || body.status !== undefined ? body.id : undefined);
  if (raw === undefined) throw badResponse('start download', 'no download_id');
  return {
    id: idOf(raw, 'start download'),
    ...optional('numFound', optionalNumber(body.num_found)),
    ...optional('totalCost', totalCost(body)),
    recovered: false,
  };
}

/**
 * A download object. The records so far are `num_downloaded` where the service sends it (its
 * `num_records` is then the number the download will hold), else `num_records` (the contract).
 */
function toDownload(value: unknown, operation: string): DownloadInfo {
  const body = asObject(value, operation);
  const status = downloadStatus(body.status);
  return {
    id: idOf(body.id ?? body.download_id, operation),
    state: status.state,
    ...optional('unlistedStatus', status.unlisted),
    numRecords: optionalNumber(body.num_downloaded ?? body.num_records) ?? 0,
    ...optional('numFound', optionalNumber(body.num_found)),
    files: resultFiles(body.results, operation),
    ...optional('createdAt', optionalString(body.created_at)),
    ...optional('format', formatOf(body.format)),
    ...optional('query', optionalString(body.query)),
    ...optional('type', isDataType(body.data_type) ? body.data_type : undefined),
    ...optional('error', optionalString(body.error) || undefined),
  };
}

function formatOf(value: unknown): 'csv' | 'json' | undefined {
  const text = typeof value === 'string' ? value.toLowerCase() : '';
  return text === 'csv' || text === 'json' ? text : undefined;
}

function toTargetedUpdate(value: unknown): TargetedUpdateInfo {
  const body = asObject(value, 'targeted update');
  return {
    id: idOf(body.id, 'targeted update'),
    query: optionalString(body.query) ?? '',
    ...optional('type', isDataType(body.data_type) ? body.data_type : undefined),
    numRecords: optionalNumber(body.num_records) ?? 0,
    ...optional('numUpdated', optionalNumber(body.num_updated)),
    status: optionalString(body.status) ?? 'unknown',
    state: downloadStatus(body.status).state,
    ...optional('totalCost', totalCost(body)),
    ...optional('createdAt', optionalString(body.created_at)),
  };
}
