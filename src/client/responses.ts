import { SluiceError } from '../errors.js';
import type { DownloadState, ResultFileRef } from './types.js';

/**
 * Reading what the service sent, which comes in more than one form (shared/wire-notes.md):
 * every reader here accepts each known form and names the operation when none fits.
 */

export function badResponse(operation: string, problem: string): SluiceError {
  return new SluiceError(`${operation}: unexpected answer from the service: ${problem}`, {
    code: 'SLUICE_API_BAD_RESPONSE',
  });
}

export function asObject(value: unknown, operation: string): Record<string, unknown> {
  if (value && typeof value === 'object' && !Array.isArray(value))
    return value as Record<string, unknown>;
  throw badResponse(operation, `expected a JSON object, got ${kindOf(value)}`);
}

/** Fields a list answer is known to be wrapped in, in the order they are looked at. */
export const LIST_KEYS = [
  'records',
  'downloads',
  'data',
  'items',
  'results',
  'views',
  'requests',
] as const;

/**
 * A list answer in any envelope: a bare array (the contract), or an object holding it in one of
 * LIST_KEYS (`key` first when given, e.g. `downloads` for the downloads listing), or else in the
 * one array-valued field it has. Other fields (counts, pages, messages) are ignored. A known
 * wrapper field that is null is an empty list.
 */
export function listOf(value: unknown, operation: string, key?: string): unknown[] {
  if (Array.isArray(value)) return value;
  if (!value || typeof value !== 'object') {
    throw badResponse(operation, `expected a JSON array, got ${kindOf(value)}`);
  }
  const body = value as Record<string, unknown>;
  const keys = key === undefined ? LIST_KEYS : [key, ...LIST_KEYS];
  for (const k of keys) if (Array.isArray(body[k])) return body[k] as unknown[];
  const arrays = Object.values(body).filter(Array.isArray);
  if (arrays.length === 1) return arrays[0] as unknown[];
  if (arrays.length === 0 && keys.some((k) => k in body && body[k] === null)) return [];
  const fields = Object.keys(body).slice(0, 10).join(', ');
  throw badResponse(
    operation,
    arrays.length === 0
      ? `expected a list, got an object without one (fields: ${fields || 'none'})`
      : `expected a list, got an object with ${arrays.length} lists and none of them named ${keys.join('/')} (fields: ${fields})`,
  );
}

/**
 * Pages that answer with one object in a list (v3 `/requests/{id}`, a v3 download start): the
 * first item of any list form listOf reads, or the object itself when it is not an envelope.
 */
export function firstOf(value: unknown, operation: string, key?: string): unknown {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const body = value as Record<string, unknown>;
    const keys = key === undefined ? LIST_KEYS : [key, ...LIST_KEYS];
    // An object with an id and no known list field is the item itself, not an envelope.
    if (body.id !== undefined && !keys.some((k) => Array.isArray(body[k]))) return body;
  }
  const list = listOf(value, operation, key);
  if (list.length === 0) throw badResponse(operation, 'an empty list');
  return list[0];
}

/** Ids arrive as strings or integers; sluice always speaks strings. */
export function idOf(value: unknown, operation: string): string {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw badResponse(operation, `no usable id (got ${kindOf(value)})`);
}

export function optionalString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}

export function optionalNumber(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    return Number(value);
  return undefined;
}

/**
 * A one-object answer (a download, say) as sent, or taken out of an envelope: `{<key>: {...}}`
 * or `{data: {...}}` when the object itself has no id, or a list holding just it.
 */
export function itemOf(value: unknown, operation: string, key: string): unknown {
  if (Array.isArray(value)) {
    if (value.length === 1) return value[0];
    throw badResponse(operation, `expected one object, got a list of ${value.length}`);
  }
  if (!value || typeof value !== 'object') return value;
  const body = value as Record<string, unknown>;
  if (body.id !== undefined || body[`${key}_id`] !== undefined) return body;
  for (const k of [key, 'data', 'item', 'result']) {
    const inner = body[k];
    if (inner && typeof inner === 'object' && !Array.isArray(inner)) return inner;
  }
  return body;
}

/**
 * The records of a preview or scrape answer: `records`, or the same list under another known
 * envelope field (`data`, `items`, `results`). Not the one-array fallback of listOf: these
 * answers carry other lists (warnings, say) that are not records.
 */
export function recordsOf(body: Record<string, unknown>): Record<string, unknown>[] {
  for (const key of ['records', 'data', 'items', 'results']) {
    const value = body[key];
    if (Array.isArray(value)) return records(value);
  }
  return [];
}

export function records(value: unknown): Record<string, unknown>[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (r): r is Record<string, unknown> => Boolean(r) && typeof r === 'object' && !Array.isArray(r),
  );
}

/**
 * What a download's status says, by the words services use for it (the contract's, the real
 * service's `started`/`running`/`STARTED`/`COMPLETED`, and older services' synonyms), compared
 * after trimming and lower-casing, with spaces and hyphens as underscores (`In Progress`).
 * Kept to words whose meaning is not in doubt: `ready`, `expired` or `aborted` could each be
 * read two ways, and a wrong terminal reading would end a job the service is still working on
 * (or fail one it finished), where an unlisted status only waits (see downloadStatus).
 */
const STATES: Readonly<Record<string, DownloadState>> = {
  queued: 'queued',
  pending: 'queued',
  waiting: 'queued',
  created: 'queued',
  new: 'queued',
  accepted: 'queued',
  submitted: 'queued',
  scheduled: 'queued',
  not_started: 'queued',
  started: 'queued',
  in_progress: 'running',
  inprogress: 'running',
  running: 'running',
  processing: 'running',
  active: 'running',
  downloading: 'running',
  preparing: 'running',
  working: 'running',
  completed: 'completed',
  complete: 'completed',
  done: 'completed',
  finished: 'completed',
  success: 'completed',
  succeeded: 'completed',
  successful: 'completed',
  cancelled: 'cancelled',
  canceled: 'cancelled',
  failed: 'failed',
  failure: 'failed',
  error: 'failed',
  errored: 'failed',
};

export interface StatusReading {
  state: DownloadState;
  /** The status as sent, when it is none of the known words (or no status was sent). */
  unlisted?: string;
}

/**
 * A download's status in sluice's terms. A status no list here has (a new word, an older
 * service's) does not fail the call: the download is taken as still in progress, so a job waits
 * for it until its poll timeout rather than dying on a word, and `unlisted` carries the word for
 * the caller to report (once per download: see waitForDownload).
 */
export function downloadStatus(value: unknown): StatusReading {
  const text = typeof value === 'string' || typeof value === 'number' ? String(value) : '';
  const key = text
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  if (Object.hasOwn(STATES, key)) return { state: STATES[key]! };
  return { state: 'running', unlisted: text.trim() === '' ? '(none)' : text };
}

/** Result links as `[{url}]` (contract) or `["url"]` (real service), in order. */
export function resultFiles(value: unknown, operation: string): ResultFileRef[] {
  if (value === undefined || value === null) return [];
  return listOf(value, operation, 'files').map((entry, index) => {
    const url =
      typeof entry === 'string' ? entry : optionalString((entry as { url?: unknown } | null)?.url);
    if (!url) throw badResponse(operation, `result ${index} has no url`);
    return { index, url, name: fileNameOf(url) };
  });
}

/** The last segment of a URL's path, without the query (the signature of a pre-signed URL). */
export function fileNameOf(url: string): string {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    path = url.split('?')[0] ?? url;
  }
  const last = path.split('/').filter(Boolean).pop() ?? '';
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

/**
 * A search's cost: `total_cost`, or when only the per-type itemization was sent
 * (`property_cost`, `people_cost`, ...), their sum.
 */
export function totalCost(body: Record<string, unknown>): number | undefined {
  const total = optionalNumber(body.total_cost);
  if (total !== undefined) return total;
  let sum: number | undefined;
  for (const [key, value] of Object.entries(body)) {
    const n = key.endsWith('_cost') ? optionalNumber(value) : undefined;
    if (n !== undefined) sum = (sum ?? 0) + n;
  }
  return sum;
}

function kindOf(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
