import type { Readable } from 'node:stream';
import type { CreditType, DataType } from '../catalog.js';

/**
 * The one interface the runner and the CLI use to talk to the service, in normalized terms.
 * v4 and v3 implement it (v4.ts, v3.ts) and accept every wire variant in shared/wire-notes.md.
 * Operations an API version does not have reject with an UnsupportedError.
 */
export interface ServiceClient {
  readonly api: 'v4' | 'v3';
  /** The root URL without credentials, for messages. */
  readonly baseUrl: string;

  health(options?: CallOptions): Promise<{ status: string }>;
  account(options?: CallOptions): Promise<AccountInfo>;
  updateAccount(changes: AccountChanges, options?: CallOptions): Promise<AccountInfo>;

  listViews(options?: CallOptions): Promise<ViewInfo[]>;
  getView(name: string, options?: CallOptions): Promise<ViewInfo>;
  createView(view: { name: string; fields: string[] }, options?: CallOptions): Promise<ViewInfo>;
  updateView(
    name: string,
    changes: { name?: string; fields?: string[] },
    options?: CallOptions,
  ): Promise<ViewInfo>;
  deleteView(name: string, options?: CallOptions): Promise<void>;

  /** At most 10 records; costs one credit per record returned (two with autotrace). */
  preview(
    request: SearchRequest & { numRecords: number },
    options?: CallOptions,
  ): Promise<PreviewResult>;
  /** The number of matching records, at no cost (`num_records: 0`). */
  count(request: SearchRequest, options?: CallOptions): Promise<CountResult>;

  /**
   * Starts a bulk download. Never blindly retried: after an ambiguous failure (the request may
   * have reached the service) the client looks for the download it may have created and returns
   * that one, so a crash or a dropped connection never pays twice. `options.verify` lets the
   * caller decide which new download is its own.
   */
  startDownload(request: DownloadRequest, options?: StartDownloadOptions): Promise<DownloadStart>;
  getDownload(id: string, options?: CallOptions): Promise<DownloadInfo>;
  listDownloads(options?: CallOptions): Promise<DownloadInfo[]>;
  cancelDownload(id: string, options?: CallOptions): Promise<void>;

  /**
   * One result file of a download as a byte stream (already decoded when gzip-encoded). A
   * connection cut mid-file is resumed with a range request; an expired URL (403) gets the
   * download again for a fresh one.
   */
  openResultFile(downloadId: string, file: ResultFileRef, options?: CallOptions): Promise<Readable>;

  createTargetedUpdate(
    request: RealTimeRequest,
    options?: CallOptions,
  ): Promise<TargetedUpdateInfo>;
  listTargetedUpdates(options?: CallOptions): Promise<TargetedUpdateInfo[]>;
  scrape(request: RealTimeRequest, options?: CallOptions): Promise<ScrapeResult>;

  /**
   * The service's time at `localMs` (default: now) of this client's clock, by the service's own
   * clock as its last answer gave it (the `Date` header); `localMs` itself until it answered.
   * What the service says about time (a download's `createdAt`, a file's expiry) is compared
   * with this, never with this machine's clock.
   */
  serviceTime(localMs?: number): number;

  /** Releases pooled connections. */
  close(): Promise<void>;
}

export interface CallOptions {
  signal?: AbortSignal;
  /**
   * How long this call may spend waiting on retries (backoff and `Retry-After`), in place of the
   * client's `maxRetryTimeMs`: e.g. polling that may wait as long as its own timeout. A
   * `Retry-After` ending past it fails the call at once with a retryable ApiError that says how
   * long the service asked to wait.
   */
  maxWaitMs?: number;
}

export interface StartDownloadOptions extends CallOptions {
  /**
   * Whether `download`, which appeared while an ambiguous start was in flight, is the one this
   * start created (e.g. by sampling its first records). Used instead of the client's own check
   * (v4 takes any new download, v3 compares query, type and format). A candidate it rejects or
   * that makes it throw is never adopted; when new downloads appeared and none passes, the start
   * fails with DownloadUncertainError naming them instead of being sent again.
   */
  verify?: (download: DownloadInfo) => Promise<boolean>;
}

export interface AccountInfo {
  email: string;
  firstName?: string;
  lastName?: string;
  /**
   * How the account is billed. `per-type`: each data type has an allotment of its own, and
   * `credits` says what is left of each. `legacy`: no data type has an allotment (all 0, or
   * none sent) and the service counts one total instead (`totalUsed`): what is left is not
   * said, and `credits` holds only what the service sent (zeros).
   */
  plan: AccountPlan;
  credits: Record<CreditType, { allotted: number; used: number; remaining: number }>;
  /** `num_credits_used`: the total of legacy plans, when the service sends it (any plan). */
  totalUsed?: number;
}

export type AccountPlan = 'per-type' | 'legacy';

export interface AccountChanges {
  email?: string;
  password?: string;
  firstName?: string;
  lastName?: string;
}

export interface ViewInfo {
  name: string;
  fields: string[];
  createdAt?: string;
}

export type AddressMatching = 'on' | 'off' | 'retry';

export interface SearchRequest {
  type: DataType;
  query: string;
  view?: string;
  format?: 'csv' | 'json';
  /** Properties only (v4): attach the matched owner's people record. */
  autoTrace?: boolean;
  /** Properties only (v4): `address_matching`. */
  addressMatching?: AddressMatching;
  /**
   * Properties only (v4): only records with people data, `only_traceable` on the wire (the
   * service's autotrace guide names it so).
   */
  onlyTraceable?: boolean;
}

export interface DownloadRequest extends SearchRequest {
  /** Undefined: every matching record. */
  numRecords?: number;
}

export interface PreviewResult {
  numFound: number;
  totalCost: number;
  records: Record<string, unknown>[];
}

export interface CountResult {
  numFound: number;
}

export interface DownloadStart {
  id: string;
  /** Matching records, when the service said at start. */
  numFound?: number;
  totalCost?: number;
  /** True when an ambiguous failure was recovered by finding the download already created. */
  recovered: boolean;
}

/**
 * Normalized download states: `started`/`running`/`STARTED` and the other words services use
 * all become one of these (client/responses.ts); a status none of them knows reads as `running`.
 */
export type DownloadState = 'queued' | 'running' | 'completed' | 'cancelled' | 'failed';

export interface ResultFileRef {
  /** Position of the file in the download's result list (0-based). */
  index: number;
  url: string;
  /** File name from the URL path (`<id>_<n>.csv`), for messages and state. */
  name: string;
  /**
   * When the service stops serving the file, where it says (v3: 7 days after `date_created`):
   * past it, no fresh URL brings the file back.
   */
  expiresAt?: string;
}

export interface DownloadInfo {
  id: string;
  state: DownloadState;
  /**
   * The status the service sent when sluice does not know the word (`state` is then `running`:
   * still in progress until the job's poll timeout), for the run to report.
   */
  unlistedStatus?: string;
  /** Records so far (grows while running). */
  numRecords: number;
  numFound?: number;
  files: ResultFileRef[];
  createdAt?: string;
  /** v3: type, query, format of the request, when the service says. */
  type?: DataType;
  query?: string;
  format?: 'csv' | 'json';
  error?: string;
}

export interface RealTimeRequest {
  query: string;
  numRecords: number;
  type?: DataType;
}

export interface TargetedUpdateInfo {
  id: string;
  query: string;
  type?: DataType;
  numRecords: number;
  numUpdated?: number;
  /** The status as the service sent it. */
  status: string;
  /** The status in sluice's terms, read as a download's is (an unknown word: still running). */
  state: DownloadState;
  totalCost?: number;
  createdAt?: string;
}

export interface ScrapeResult {
  id: string;
  status: string;
  numRecords: number;
  totalCost?: number;
  records: Record<string, unknown>[];
}

/** How to reach and authenticate with the service. */
export interface ConnectionSettings {
  /** The v4 root (`.../v4`) or the v3 root (`.../v3`). */
  url: string;
  api?: 'v4' | 'v3';
  email?: string;
  password?: string;
  token?: string;
}
