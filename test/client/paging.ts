/**
 * Lists in pages, served by the rewriting proxy from the emulator's whole lists, in the forms
 * paging JSON APIs use: a `Link` header over bare arrays (`?page=N`), a next URL in the body, a
 * page count, and offset, limit and total. The proxy asks the emulator for the whole list each
 * time (it ignores the paging parameters) and answers the page asked for.
 */
import type { ProxiedRequest, RewritingProxy } from './proxy.js';

export const PAGING_FORMS = ['link header', 'next url', 'page count', 'offset'] as const;
export type PagingForm = (typeof PAGING_FORMS)[number];

interface Page {
  body: unknown;
  headers: Record<string, string>;
}

function pageOf(
  form: PagingForm,
  list: unknown[],
  size: number,
  req: ProxiedRequest,
  origin: string,
): Page {
  const params = new URLSearchParams(req.search);
  if (form === 'offset') {
    const offset = Number(params.get('offset') ?? 0);
    const limit = Number(params.get('limit') ?? size);
    const items = list.slice(offset, offset + limit);
    return { body: { items, offset, limit, total: list.length }, headers: {} };
  }
  const page = Number(params.get('page') ?? 1);
  const items = list.slice((page - 1) * size, page * size);
  const pages = Math.max(1, Math.ceil(list.length / size));
  const more = page < pages;
  const at = (n: number) => `${req.path}?page=${n}`;
  switch (form) {
    case 'link header': {
      const links = [`<${origin}${at(1)}>; rel="first"`];
      if (more) links.push(`<${origin}${at(page + 1)}>; rel="next"`);
      links.push(`<${origin}${at(pages)}>; rel="last"`);
      return { body: items, headers: { link: links.join(', ') } };
    }
    case 'next url':
      // A path, not a URL: the client resolves it against the page it came with.
      return { body: { data: items, next: more ? at(page + 1) : null }, headers: {} };
    case 'page count':
      return { body: { results: items, meta: { page, total_pages: pages } }, headers: {} };
  }
}

/** From now on the proxy answers the lists `matches` picks in pages of `size`, in `form`. */
export function pageLists(
  proxy: RewritingProxy,
  form: PagingForm,
  size: number,
  matches: (req: ProxiedRequest) => boolean,
): void {
  const paged = (req: ProxiedRequest, status: number, body: unknown) =>
    status === 200 && matches(req) && Array.isArray(body)
      ? pageOf(form, body, size, req, proxy.url)
      : undefined;
  proxy.hooks.rewrite = (req, status, body) => paged(req, status, body)?.body;
  proxy.hooks.headers = (req, status, body) => paged(req, status, body)?.headers ?? {};
}
