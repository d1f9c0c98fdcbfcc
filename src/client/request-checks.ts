import type { DataType } from '../catalog.js';
import { UsageError } from '../errors.js';
import { checkQuery } from '../query/index.js';
import type { SearchRequest } from './types.js';

export const PREVIEW_MAX = 10;

/**
 * Checks a query before it is sent: a syntax error or an unknown field throws QueryError (with
 * a caret excerpt) and never costs a request, let alone credits.
 */
export function checkSearchQuery(query: string, type: DataType): void {
  checkQuery(query, type);
}

export function checkPreviewSize(numRecords: number): void {
  if (!Number.isInteger(numRecords) || numRecords < 0 || numRecords > PREVIEW_MAX) {
    throw new UsageError(
      `a preview returns 0 to ${PREVIEW_MAX} records (asked for ${numRecords}); start a download for more`,
    );
  }
}

export function checkDownloadSize(numRecords: number | undefined): void {
  if (numRecords !== undefined && (!Number.isInteger(numRecords) || numRecords < 1)) {
    throw new UsageError(
      `a download needs at least 1 record (asked for ${numRecords}); leave it unset for all`,
    );
  }
}

/** Autotrace, address matching and only-traceable exist only for property searches. */
export function propertyOptionsUsed(request: SearchRequest): string[] {
  const used: string[] = [];
  if (request.autoTrace === true) used.push('autoTrace');
  if (request.addressMatching !== undefined && request.addressMatching !== 'on')
    used.push('addressMatching');
  if (request.onlyTraceable === true) used.push('onlyTraceable');
  return used;
}
