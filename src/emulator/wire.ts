import { STATUS_CODES } from 'node:http';
import type { WireMode } from './options.js';

/**
 * Where the wire modes differ, one entry each: what the emulator sends, and what it accepts.
 * The contract (shared/service-interface.md) leaves some forms unshown or allows two; the live
 * service's are those its guides and its customers' clients expect (shared/wire-notes.md adds
 * the older variants that `real` sends as well).
 */
export interface WireForms {
  /**
   * A v4 download start: its status, whether it carries the search answer (`num_found`,
   * `total_cost`, `download_id`, `records`) and whether the download object (`id`, `status`,
   * `num_records`, `num_downloaded`). Clients written from the guides read `id` and `status`
   * from a 200; contract clients read `download_id`; an older client wants the bare 202 object.
   */
  v4Start: { status: 200 | 202; searchAnswer: boolean; downloadObject: boolean };
  /**
   * v4 download objects carry `num_downloaded` (the records so far) and `num_records` the
   * records they will hold; without it, `num_records` is the records so far.
   */
  numDownloaded: boolean;
  /** v4 `results` as plain URL strings, or as objects with `url`. */
  urlStrings: boolean;
  /** v4 download ids as integers (the sequence number), or the 24-digit string. */
  integerIds: boolean;
  /** A working v4 download says `started`/`running`, or `queued`/`in_progress`. */
  startedRunning: boolean;
  /** v4 error bodies as `{"errors": [...]}`, or `{error, message, code, details}`. */
  errorsList: boolean;
  /** v4 search answers also itemize the cost per credit type (`property_cost`, ...). */
  costPerType: boolean;
  /** A v3 download start answers 303 to `/v3/requests/{id}`, or the request in an array. */
  v3Redirect: boolean;
  /** v3 previews name the count `estimated total`, or `num_found` with `total_cost`. */
  estimatedTotal: boolean;
  /** Whole numbers in CSV files and CSV previews are written `2022.0`. */
  wholeNumbersAsFloat: boolean;
  /**
   * Request bodies as real clients send them: form-encoded as well as JSON, unknown fields
   * ignored, and `num_records` optional (a download of every match, a preview of 10). Else the
   * contract's: JSON only, known fields only, `num_records` required.
   */
  lenientBodies: boolean;
}

const LIVE: WireForms = {
  v4Start: { status: 200, searchAnswer: true, downloadObject: true },
  numDownloaded: true,
  urlStrings: true,
  integerIds: false,
  startedRunning: false,
  errorsList: false,
  costPerType: false,
  v3Redirect: true,
  estimatedTotal: false,
  wholeNumbersAsFloat: false,
  lenientBodies: true,
};

export const WIRE_FORMS: Record<WireMode, WireForms> = {
  live: LIVE,
  contract: {
    v4Start: { status: 200, searchAnswer: true, downloadObject: false },
    numDownloaded: false,
    urlStrings: false,
    integerIds: false,
    startedRunning: false,
    errorsList: false,
    costPerType: false,
    v3Redirect: false,
    estimatedTotal: false,
    wholeNumbersAsFloat: false,
    lenientBodies: false,
  },
  real: {
    ...LIVE,
    v4Start: { status: 202, searchAnswer: false, downloadObject: true },
    integerIds: true,
    startedRunning: true,
    errorsList: true,
    costPerType: true,
    estimatedTotal: true,
    wholeNumbersAsFloat: true,
  },
};

export type Api = 'v4' | 'v3' | 'files' | 'control';

export function apiOf(path: string): Api {
  if (path.startsWith('/v3/') || path === '/v3') return 'v3';
  if (path.startsWith('/files/')) return 'files';
  if (path.startsWith('/_emulator/')) return 'control';
  return 'v4';
}

/**
 * The error body the service sends for a status, in the shapes of service-interface.md section 7
 * (v4 `{error, message, code, details}`, v3 by status) or, for v4 with `errorsList`, the
 * `{"errors": [...]}` shape of wire-notes.md.
 */
export function errorBody(
  api: Api,
  errorsList: boolean,
  status: number,
  message: string,
  details: { field: string; message: string }[],
): { contentType: string; body: string } {
  const name = STATUS_CODES[status] ?? 'Error';
  if (api === 'files') {
    const code =
      status === 403 ? 'AccessDenied' : status === 404 ? 'NoSuchKey' : name.replaceAll(' ', '');
    return {
      contentType: 'application/xml',
      body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>\n`,
    };
  }
  let body: unknown;
  if (api === 'v3') {
    if (status === 400) body = { error: message };
    else if (status >= 500) body = { error: name, message, code: status, requestId: requestId() };
    else body = { error: name, message, code: status };
  } else if (api === 'v4' && errorsList) {
    body = { errors: [message, ...details.map((d) => `${d.field}: ${d.message}`)] };
  } else {
    body = { error: name, message, code: status, details };
  }
  return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) };
}

let requestCounter = 0;
function requestId(): string {
  requestCounter += 1;
  return `req-${Date.now().toString(36)}-${requestCounter.toString(36)}`;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** v3 dates: `2017-3-7 17:44:05`, month and day not zero-padded, UTC. */
export function v3Date(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${d.getUTCMonth() + 1}-${d.getUTCDate()} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

export function isoDate(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** `scheme://host:port` of a request, for absolute file URLs. */
export function originOf(request: { protocol: string; host: string }): string {
  return `${request.protocol}://${request.host}`;
}
