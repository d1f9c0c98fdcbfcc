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

export function asArray(value: unknown, operation: string): unknown[] {
  if (Array.isArray(value)) return value;
  throw badResponse(operation, `expected a JSON array, got ${kindOf(value)}`);
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

export function records(value: unknown): Record<string, unknown>[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (r): r is Record<string, unknown> => Boolean(r) && typeof r === 'object' && !Array.isArray(r),
  );
}

const STATES: Record<string, DownloadState> = {
  queued: 'queued',
  pending: 'queued',
  started: 'queued',
  in_progress: 'running',
  running: 'running',
  completed: 'completed',
  complete: 'completed',
  cancelled: 'cancelled',
  canceled: 'cancelled',
  failed: 'failed',
  error: 'failed',
};

/** v4 `queued`/`in_progress` and the real-world `started`/`running`, in sluice's terms. */
export function downloadState(value: unknown, operation: string): DownloadState {
  const state = typeof value === 'string' ? STATES[value.trim().toLowerCase()] : undefined;
  if (!state) throw badResponse(operation, `unknown download status ${JSON.stringify(value)}`);
  return state;
}

/** Result links as `[{url}]` (contract) or `["url"]` (real service), in order. */
export function resultFiles(value: unknown, operation: string): ResultFileRef[] {
  if (value === undefined || value === null) return [];
  return asArray(value, operation).map((entry, index) => {
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
