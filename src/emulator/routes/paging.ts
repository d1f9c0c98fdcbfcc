import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EmulatorContext } from '../service.js';
import { HttpProblem } from '../state.js';
import { originOf } from '../wire.js';

/**
 * The lists (`GET /downloads`, `GET /views`, v3 `GET /requests`) in pages, when the emulator
 * runs with a page size (`--page-size N`), so that a client's paging can be tested against it.
 * The interface does not say whether these lists page; a paging service commonly answers this
 * way, and it keeps each page in the contract's form:
 * - `?page=N` (from 1; absent means 1) picks a page, and each page is the bare JSON array;
 * - a `Link` header names the next page (`<url>; rel="next"`) until the last page, and
 *   `X-Total-Count` says how many items there are in all.
 * A client that does not page sees the first page only, as it would against such a service.
 * Without a page size every list is whole and `page` is ignored, as unknown parameters are.
 */
export function paged<T>(
  ctx: EmulatorContext,
  request: FastifyRequest,
  reply: FastifyReply,
  items: readonly T[],
): T[] {
  const size = ctx.options.pageSize;
  if (size === 0) return [...items];
  const at = request.url.indexOf('?');
  const query = new URLSearchParams(at < 0 ? '' : request.url.slice(at + 1));
  const page = pageOf(query.get('page'));
  reply.header('x-total-count', String(items.length));
  if (page * size < items.length) {
    query.set('page', String(page + 1));
    const path = at < 0 ? request.url : request.url.slice(0, at);
    reply.header('link', `<${originOf(request)}${path}?${query}>; rel="next"`);
  }
  return items.slice((page - 1) * size, page * size);
}

function pageOf(value: string | null): number {
  if (value === null || value === '') return 1;
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1) {
    throw new HttpProblem(400, `page must be a whole number from 1, got '${value}'`, [
      { field: 'page', message: 'must be a whole number from 1' },
    ]);
  }
  return Number(value);
}
