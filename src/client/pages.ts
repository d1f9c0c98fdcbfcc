import type { JsonResponse } from './http.js';
import { badResponse, listOf } from './responses.js';

/**
 * Lists read page after page. The interface does not say whether the service pages its lists
 * (`GET /downloads`, `/views`, v3 `/requests`...), and a list read as its first page alone
 * would hide downloads from crash recovery, which then buys again what it could have adopted.
 * So the client follows whatever an answer carries to say that more is to come, in the forms
 * paging JSON APIs use, and otherwise takes the answer as the whole list (a bare array without
 * a `Link` header is one page: nothing is guessed at).
 */

/**
 * Pages one list is read over, at most. Past it something is wrong (a service that answers
 * every page with a next one): an error, not a list cut short, which recovery could mistake
 * for "no such download".
 */
export const MAX_PAGES = 500;

export interface PagedList {
  /** The operation, for messages (`list downloads`). */
  operation: string;
  /** The field the list is known to be under (listOf). */
  key?: string;
  /** The first page's absolute URL. */
  url: string;
  /** A GET of one page's absolute URL, authenticated as the client's calls are. */
  get: (url: string) => Promise<JsonResponse>;
}

/**
 * Every item of a list, its pages read in turn. A page that comes back again (a service that
 * ignores the page asked for), an empty page, a next page that points back at one already
 * read, or no sign of a next page ends it; an item seen on an earlier page (a list that shifted
 * while it was read) is kept once.
 */
export async function readPages(list: PagedList): Promise<unknown[]> {
  const items: unknown[] = [];
  const seenItems = new Set<string>();
  const seenPages = new Set<string>();
  const visited = new Set<string>();
  let url = list.url;
  for (let page = 1; ; page++) {
    visited.add(url);
    const res = await list.get(url);
    const found = listOf(res.body, list.operation, list.key);
    const keys = found.map(itemKey);
    const fingerprint = JSON.stringify(found.map((item, i) => keys[i] ?? item));
    if (page > 1 && (found.length === 0 || seenPages.has(fingerprint))) break;
    seenPages.add(fingerprint);
    found.forEach((item, i) => {
      const key = keys[i]!;
      if (key !== null && seenItems.has(key)) return;
      if (key !== null) seenItems.add(key);
      items.push(item);
    });
    const next = nextPageUrl(res, url, found.length, list.url);
    if (next === undefined || visited.has(next)) break;
    if (page >= MAX_PAGES) {
      throw badResponse(
        list.operation,
        `the list goes on past ${MAX_PAGES} pages (${items.length} items so far); it was not read to its end`,
      );
    }
    url = next;
  }
  return items;
}

/** What tells one item from another: its id (downloads, requests) or name (views), or itself. */
function itemKey(item: unknown): string | null {
  if (typeof item === 'string' || typeof item === 'number') return `${typeof item}:${item}`;
  if (!item || typeof item !== 'object') return null;
  const { id, name, download_id: downloadId } = item as Record<string, unknown>;
  const key = id ?? downloadId ?? name;
  return typeof key === 'string' || typeof key === 'number' ? `${typeof key}:${key}` : null;
}

/** Where paging details sit in an envelope: at its top, or in one of these objects. */
const CONTAINERS = ['meta', 'pagination', 'paging', 'page_info', 'pageInfo', 'links', '_links'];
const NEXT_KEYS = [
  'next',
  'next_page',
  'nextPage',
  'next_url',
  'nextUrl',
  'next_link',
  'nextLink',
  'next_page_url',
];
const CURSOR_KEYS = ['next_cursor', 'nextCursor'];
const PAGE_KEYS = ['page', 'current_page', 'currentPage', 'page_number', 'pageNumber'];
const PAGES_KEYS = ['total_pages', 'totalPages', 'pages', 'page_count', 'pageCount', 'last_page'];
const OFFSET_KEYS = ['offset', 'skip', 'start'];
const TOTAL_KEYS = ['total', 'total_count', 'totalCount', 'total_results', 'totalResults'];
const MORE_KEYS = ['has_more', 'hasMore', 'more'];

/**
 * The URL of the page after this one, or undefined when this answer says it is the last or does
 * not say. In order: a `Link` header with `rel="next"`; a next link (a URL, a path, an object
 * with `href`), a next page number, or an opaque token (sent back as `cursor`); a next cursor; `page` short of `total_pages`; `offset`
 * plus this page's items short of `total` (or with `has_more`). Page numbers, cursors and
 * offsets are set on this page's URL. A link to another host is followed on the service's own
 * (`first`'s origin): the credentials sent with every page never go anywhere else.
 */
export function nextPageUrl(
  res: Pick<JsonResponse, 'headers' | 'body'>,
  url: string,
  count: number,
  first: string,
): string | undefined {
  const linked = linkNext(res.headers.link);
  if (linked !== undefined) return onOrigin(linked, url, first);
  const body = res.body;
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const places = [body as Record<string, unknown>];
  for (const name of CONTAINERS) {
    const inner = (body as Record<string, unknown>)[name];
    if (inner && typeof inner === 'object' && !Array.isArray(inner))
      places.push(inner as Record<string, unknown>);
  }
  const pick = (keys: readonly string[]) => {
    for (const place of places) {
      for (const key of keys)
        if (place[key] !== undefined && place[key] !== null) return place[key];
    }
    return undefined;
  };
  const withParam = (name: string, value: string | number) => {
    const next = new URL(url);
    next.searchParams.set(name, String(value));
    return next.href;
  };

  const next = pick(NEXT_KEYS);
  if (next !== undefined) {
    const href =
      next && typeof next === 'object' ? (next as { href?: unknown; url?: unknown }) : undefined;
    const target = href ? (href.href ?? href.url) : next;
    if (typeof target === 'number' || (typeof target === 'string' && /^\d+$/.test(target)))
      return withParam('page', target);
    if (typeof target === 'string' && /^([a-z][a-z\d+.-]*:\/\/|\/|\?|\.\.?\/)/i.test(target.trim()))
      return onOrigin(target.trim(), url, first);
    // Neither a URL nor a page number: an opaque token for the next page.
    if (typeof target === 'string' && target.trim() !== '') return withParam('cursor', target);
    // `next: false`, `next: ""`: the answer says there is no next page.
    return undefined;
  }
  const cursor = pick(CURSOR_KEYS);
  if (typeof cursor === 'string' && cursor !== '') return withParam('cursor', cursor);
  const page = whole(pick(PAGE_KEYS));
  const pages = whole(pick(PAGES_KEYS));
  if (page !== undefined && pages !== undefined) {
    return page < pages ? withParam('page', page + 1) : undefined;
  }
  const offset = whole(pick(OFFSET_KEYS));
  if (offset !== undefined && count > 0) {
    const total = whole(pick(TOTAL_KEYS));
    const more = pick(MORE_KEYS);
    const after = offset + count;
    if ((total !== undefined && after < total) || (total === undefined && more === true)) {
      const nextUrl = new URL(withParam(offsetParam(url), after));
      const limit = whole(pick(['limit', 'per_page', 'perPage', 'page_size', 'pageSize']));
      if (limit !== undefined && !nextUrl.searchParams.has('limit'))
        nextUrl.searchParams.set('limit', String(limit));
      return nextUrl.href;
    }
  }
  return undefined;
}

/** The URL of `rel="next"` in a Link header (RFC 8288), if any. */
function linkNext(header: string | string[] | undefined): string | undefined {
  const text = Array.isArray(header) ? header.join(', ') : header;
  if (!text) return undefined;
  for (const m of text.matchAll(/<([^>]*)>((?:\s*;\s*[^;,]+)*)/g)) {
    const rel = /;\s*rel\s*=\s*"?([^";]+)"?/i.exec(m[2] ?? '')?.[1] ?? '';
    if (rel.toLowerCase().split(/\s+/).includes('next')) return m[1];
  }
  return undefined;
}

/** `target` (absolute, or relative to `url`) as a URL on `first`'s origin. */
function onOrigin(target: string, url: string, first: string): string | undefined {
  let resolved: URL;
  try {
    resolved = new URL(target, url);
  } catch {
    return undefined;
  }
  if (resolved.protocol !== 'http:' && resolved.protocol !== 'https:') return undefined;
  return new URL(`${resolved.pathname}${resolved.search}`, new URL(first).origin).href;
}

/** The offset parameter this list's URLs use (`skip`, `start`), else `offset`. */
function offsetParam(url: string): string {
  const params = new URL(url).searchParams;
  return OFFSET_KEYS.find((name) => params.has(name)) ?? 'offset';
}

function whole(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : undefined;
}
