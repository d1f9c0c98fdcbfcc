import type { Readable } from 'node:stream';
import { type DataType, isDataType } from '../catalog.js';
import { ApiError } from '../errors.js';
import { apiTokenRefused, UnsupportedError, versionHint } from './errors.js';
import { type EventSink, eventSink } from './events.js';
import { openDownloadFile } from './files.js';
import type { HttpRequest, HttpTransport, JsonResponse } from './http.js';
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
  firstOf,
  idOf,
  listOf,
  optionalNumber,
  optionalString,
  recordsOf,
  resultFiles,
  type StatusReading,
  totalCost,
} from './responses.js';
import type {
  AccountInfo,
  CallOptions,
  CountResult,
  DownloadInfo,
  DownloadRequest,
  DownloadStart,
  DownloadState,
  PreviewResult,
  ResultFileRef,
  ScrapeResult,
  SearchRequest,
  ServiceClient,
  StartDownloadOptions,
  TargetedUpdateInfo,
  ViewInfo,
} from './types.js';

export interface V3ClientInit {
  /** The v3 root without credentials, e.g. `https://host/v3`. */
  baseUrl: string;
  token: string;
  http: HttpTransport;
  maxFileResumes?: number;
  maxFileRefreshes?: number;
  onEvent?: EventSink | undefined;
}

/** Data types the v3 `/data/{type}` operation serves. */
const V3_TYPES: readonly DataType[] = ['businesses', 'products', 'properties'];

const VIEWS_HINT =
  'views are managed in the web portal or through the v4 API; a v3 search can name an existing view';

/**
 * The v3 API: HTTP basic authentication with the API token as user name and an empty password,
 * searches as `GET /data/{type}`, downloads as the `requests` and `results` resources with
 * integer ids. What v3 does not have rejects with UnsupportedError before any request.
 */
export class V3Client implements ServiceClient {
  readonly api = 'v3' as const;
  readonly baseUrl: string;
  readonly #http: HttpTransport;
  readonly #authorization: string;
  readonly #fileOptions: { maxResumes?: number; maxRefreshes?: number; onEvent: EventSink };
  readonly #emit: EventSink;

  constructor(init: V3ClientInit) {
    this.baseUrl = init.baseUrl.replace(/\/+$/, '');
    this.#http = init.http;
    // A header, never `token:@host` in the URL, so the token cannot reach a message.
    this.#authorization = `Basic ${Buffer.from(`${init.token}:`).toString('base64')}`;
    this.#emit = eventSink(init.onEvent);
    this.#fileOptions = {
      ...(init.maxFileResumes === undefined ? {} : { maxResumes: init.maxFileResumes }),
      ...(init.maxFileRefreshes === undefined ? {} : { maxRefreshes: init.maxFileRefreshes }),
      onEvent: this.#emit,
    };
  }

  /**
   * v3 has no health operation. Listing the download requests is the cheapest call that shows
   * both that the service answers and that the token is accepted.
   */
  async health(options?: CallOptions): Promise<{ status: string }> {
    listOf((await this.#get('/requests', options)).body, 'health', 'requests');
    return { status: 'ok' };
  }

  account(_options?: CallOptions): Promise<AccountInfo> {
    return unsupported(
      'account operation',
      'the account is shown in the web portal or through the v4 API',
    );
  }

  updateAccount(): Promise<AccountInfo> {
    return unsupported('account update', 'use the web portal or the v4 API');
  }

  listViews(): Promise<ViewInfo[]> {
    return unsupported('view operations', VIEWS_HINT);
  }

  getView(): Promise<ViewInfo> {
    return unsupported('view operations', VIEWS_HINT);
  }

  createView(): Promise<ViewInfo> {
    return unsupported('view operations', VIEWS_HINT);
  }

  updateView(): Promise<ViewInfo> {
    return unsupported('view operations', VIEWS_HINT);
  }

  deleteView(): Promise<void> {
    return unsupported('view operations', VIEWS_HINT);
  }

  async preview(
    request: SearchRequest & { numRecords: number },
    options?: CallOptions,
  ): Promise<PreviewResult> {
    checkPreviewSize(request.numRecords);
    const body = asObject(
      (await this.#data(request, request.numRecords, false, options)).body,
      'preview',
    );
    const found = recordsOf(body);
    return {
      numFound: numFoundOf(body, 'preview'),
      // The older form has no total_cost; a preview costs one credit per record returned.
      totalCost: totalCost(body) ?? found.length,
      records: found,
    };
  }

  async count(request: SearchRequest, options?: CallOptions): Promise<CountResult> {
    const body = asObject((await this.#data(request, 0, false, options)).body, 'count');
    return { numFound: numFoundOf(body, 'count') };
  }

  async startDownload(
    request: DownloadRequest,
    options?: StartDownloadOptions,
  ): Promise<DownloadStart> {
    checkDownloadSize(request.numRecords);
    this.#dataQuery(request, request.numRecords, true);
    const format = request.format ?? 'json';
    const { verify, ...callOptions } = options ?? {};
    return startDownloadOnce({
      what: `${request.type} download`,
      list: () => this.listDownloads(callOptions),
      isOurs: (d) =>
        d.query === request.query &&
        d.type === request.type &&
        (d.format === undefined || d.format === format),
      verify,
      now: () => this.#http.serviceTime(),
      onEvent: this.#emit,
      signal: callOptions.signal,
      start: async () =>
        toDownloadStart(await this.#data(request, request.numRecords, true, callOptions)),
    });
  }

  async getDownload(id: string, options?: CallOptions): Promise<DownloadInfo> {
    const operation = 'get download';
    // The single-request page answers with an array holding the one request.
    const request = firstOf(
      (await this.#get(`/requests/${encodeURIComponent(id)}`, options)).body,
      operation,
      'requests',
    );
    const info = toDownload(request, operation);
    if (info.state !== 'completed') return info;
    const results = await this.#list(
      `/results/${encodeURIComponent(id)}`,
      'results',
      'results',
      options,
    );
    const files = resultFiles(
      results.map((r) => (r && typeof r === 'object' ? (r as { url?: unknown }).url : r)),
      'results',
    ).map((file, i) => {
      const expiresAt = fileExpiry(results[i]);
      return expiresAt === undefined ? file : { ...file, expiresAt };
    });
    return { ...info, files };
  }

  /** The requests, without their result files (those take one more call per download). */
  async listDownloads(options?: CallOptions): Promise<DownloadInfo[]> {
    const requests = await this.#list('/requests', 'list downloads', 'requests', options);
    return requests.map((r) => toDownload(r, 'list downloads'));
  }

  cancelDownload(): Promise<void> {
    return unsupported('download cancellation', 'a v3 download runs until it completes');
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

  createTargetedUpdate(): Promise<TargetedUpdateInfo> {
    return unsupported('targeted updates', 'use the v4 API');
  }

  listTargetedUpdates(): Promise<TargetedUpdateInfo[]> {
    return unsupported('targeted updates', 'use the v4 API');
  }

  scrape(): Promise<ScrapeResult> {
    return unsupported('scrape operation', 'use the v4 API');
  }

  serviceTime(localMs?: number): number {
    return this.#http.serviceTime(localMs);
  }

  async close(): Promise<void> {
    await this.#http.close();
  }

  #dataQuery(
    request: SearchRequest,
    numRecords: number | undefined,
    download: boolean,
  ): URLSearchParams {
    if (!V3_TYPES.includes(request.type)) {
      throw new UnsupportedError(
        'v3',
        `${request.type} data`,
        `it serves ${V3_TYPES.join(', ')}; use the v4 API`,
      );
    }
    const used = propertyOptionsUsed(request);
    if (used.length > 0) throw new UnsupportedError('v3', used.join(', '), 'use the v4 API');
    checkSearchQuery(request.query, request.type);
    const params = new URLSearchParams({ q: request.query });
    if (request.view !== undefined && request.view !== '') params.set('view', request.view);
    if (request.format !== undefined) params.set('format', request.format);
    params.set('download', String(download));
    if (numRecords !== undefined) params.set('records', String(numRecords));
    return params;
  }

  #data(
    request: SearchRequest,
    numRecords: number | undefined,
    download: boolean,
    options?: CallOptions,
  ) {
    const params = this.#dataQuery(request, numRecords, download);
    return this.#send({
      method: 'GET',
      url: `${this.baseUrl}/data/${request.type}?${params}`,
      headers: { authorization: this.#authorization },
      // A GET, but a download start spends credits all the same.
      idempotent: !download,
      // The real service answers a download start with a 303 to the request it made.
      redirectIsAnswer: download,
      signal: options?.signal,
      maxWaitMs: options?.maxWaitMs,
    });
  }

  /** Every item of a list the service may answer in pages (pages.ts). */
  #list(path: string, operation: string, key: string, options?: CallOptions) {
    return readPages({
      operation,
      key,
      url: this.baseUrl + path,
      get: (url) => this.#getUrl(url, options),
    });
  }

  #get(path: string, options?: CallOptions): Promise<JsonResponse> {
    return this.#getUrl(this.baseUrl + path, options);
  }

  #getUrl(url: string, options?: CallOptions): Promise<JsonResponse> {
    return this.#send({
      method: 'GET',
      url,
      headers: { authorization: this.#authorization },
      signal: options?.signal,
      maxWaitMs: options?.maxWaitMs,
    });
  }

  /** A request to the service; its 401 says what it means: the token is wrong or expired. */
  async #send(request: HttpRequest): Promise<JsonResponse> {
    try {
      return await this.#http.json(request);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) throw apiTokenRefused(error);
      throw versionHint(error, 'v3', this.baseUrl);
    }
  }
}

function unsupported<T>(operation: string, hint: string): Promise<T> {
  return Promise.reject(new UnsupportedError('v3', operation, hint));
}

function numFoundOf(body: Record<string, unknown>, operation: string): number {
  // `estimated total` (with a space) is the older form of the same count.
  const n = optionalNumber(body.num_found ?? body['estimated total']);
  if (n === undefined) throw badResponse(operation, 'no num_found or estimated total');
  return n;
}

/** A request object in an array (contract), or a 303 to `/requests/{id}` (real service). */
function toDownloadStart(res: JsonResponse): DownloadStart {
  if (res.status >= 300 && res.status < 400) {
    const location = res.headers.location;
    const id = /\/requests\/([^/?#]+)/.exec(
      Array.isArray(location) ? (location[0] ?? '') : (location ?? ''),
    )?.[1];
    if (!id)
      throw badResponse('start download', `a ${res.status} without a /requests/{id} location`);
    return { id: decodeURIComponent(id), recovered: false };
  }
  const info = toDownload(firstOf(res.body, 'start download', 'requests'), 'start download');
  return {
    id: info.id,
    ...(info.numFound === undefined ? {} : { numFound: info.numFound }),
    recovered: false,
  };
}

function toDownload(value: unknown, operation: string): DownloadInfo {
  const body = asObject(value, operation);
  const error = optionalString(body.error) ?? '';
  // v3's STARTED is a request at work (the download's records come in under it); other words
  // read as v4's do, an unknown one as still in progress.
  const reading: StatusReading =
    optionalString(body.status)?.trim().toUpperCase() === 'STARTED'
      ? { state: 'running' }
      : downloadStatus(body.status);
  const state: DownloadState = error.trim() !== '' ? 'failed' : reading.state;
  const format = optionalString(body.dataFormat)?.toLowerCase();
  const createdAt = v3DateToIso(optionalString(body.date_started));
  const numFound = optionalNumber(body.numFound);
  return {
    id: idOf(body.id, operation),
    state,
    ...(state === 'running' && reading.unlisted !== undefined
      ? { unlistedStatus: reading.unlisted }
      : {}),
    numRecords: optionalNumber(body.numDownloaded) ?? 0,
    ...(numFound === undefined ? {} : { numFound }),
    files: [],
    ...(createdAt === undefined ? {} : { createdAt }),
    ...(isDataType(body.dataType) ? { type: body.dataType } : {}),
    ...(typeof body.query === 'string' ? { query: body.query } : {}),
    ...(format === 'csv' || format === 'json' ? { format } : {}),
    ...(error.trim() === '' ? {} : { error }),
  };
}

/**
 * How long the service keeps a v3 result file: "the result file will expire 7 days after"
 * its `date_created` (the vendor's results reference); its URL answers 403 after that.
 */
const V3_FILE_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

/** When a v3 result object's file expires (ISO 8601), if it says when it was created. */
function fileExpiry(result: unknown): string | undefined {
  if (!result || typeof result !== 'object') return undefined;
  const created = v3DateToIso(optionalString((result as { date_created?: unknown }).date_created));
  if (created === undefined) return undefined;
  return new Date(Date.parse(created) + V3_FILE_LIFETIME_MS).toISOString();
}

/** v3 dates (`2017-3-7 17:44:05`, UTC, month and day not padded) as ISO 8601. */
export function v3DateToIso(value: string | undefined): string | undefined {
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{2}):(\d{2})/.exec(value?.trim() ?? '');
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m;
  const pad = (v: string | undefined) => (v ?? '').padStart(2, '0');
  return `${y}-${pad(mo)}-${pad(d)}T${pad(h)}:${mi}:${s}Z`;
}
