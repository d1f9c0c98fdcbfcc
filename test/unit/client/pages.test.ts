import { strict as assert } from 'node:assert';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import type { JsonResponse } from '../../../src/client/http.js';
import { MAX_PAGES, nextPageUrl, readPages } from '../../../src/client/pages.js';
import { SluiceError } from '../../../src/errors.js';

const BASE = 'https://api.example/v4/downloads';

function next(body: unknown, headers: IncomingHttpHeaders = {}, url = BASE, count = 2) {
  return nextPageUrl({ headers, body }, url, count, BASE);
}

describe('where the next page is', () => {
  test('a Link header with rel="next", among others, absolute or relative', () => {
    const link = `<${BASE}?page=1>; rel="first", <${BASE}?page=3>; rel="next", <${BASE}?page=9>; rel="last"`;
    assert.equal(next([], { link }), `${BASE}?page=3`);
    assert.equal(next([], { link: '</v4/downloads?page=2>; rel=next' }), `${BASE}?page=2`);
    assert.equal(next([], { link: `<${BASE}?page=1>; rel="prev"` }), undefined);
    // A bare array without a Link is the whole list: nothing is guessed.
    assert.equal(next([{ id: 'a' }, { id: 'b' }]), undefined);
  });

  test('a next link, page number or token in the body, at its top or in meta/links', () => {
    assert.equal(next({ data: [], next: `${BASE}?after=x` }), `${BASE}?after=x`);
    assert.equal(next({ data: [], next: '/v4/downloads?page=2' }), `${BASE}?page=2`);
    assert.equal(next({ data: [], next_page: 2 }), `${BASE}?page=2`);
    assert.equal(next({ data: [], nextPage: '3' }), `${BASE}?page=3`);
    assert.equal(next({ data: [], links: { next: `${BASE}?page=2` } }), `${BASE}?page=2`);
    assert.equal(next({ data: [], _links: { next: { href: '?page=2' } } }), `${BASE}?page=2`);
    assert.equal(next({ data: [], next: 'eyJhZnRlciI6Mn0' }), `${BASE}?cursor=eyJhZnRlciI6Mn0`);
    assert.equal(next({ data: [], meta: { next_cursor: 'c2' } }), `${BASE}?cursor=c2`);
    for (const none of [null, false, ''])
      assert.equal(next({ data: [], next: none }), undefined, String(none));
  });

  test('page of total_pages; offset, limit and total; has_more', () => {
    assert.equal(next({ data: [], page: 1, total_pages: 3 }), `${BASE}?page=2`);
    assert.equal(next({ data: [], meta: { page: 3, total_pages: 3 } }), undefined);
    assert.equal(next({ items: [], offset: 0, limit: 2, total: 5 }), `${BASE}?offset=2&limit=2`);
    assert.equal(
      next({ items: [], offset: 2, limit: 2, total: 5 }, {}, `${BASE}?offset=2&limit=2`),
      `${BASE}?offset=4&limit=2`,
    );
    assert.equal(next({ items: [], offset: 4, limit: 2, total: 5 }, {}, BASE, 1), undefined);
    assert.equal(next({ items: [], offset: 0, has_more: true }), `${BASE}?offset=2`);
    assert.equal(next({ items: [], offset: 0, has_more: false }), undefined);
    // Envelopes that say how many, not where the rest is: one page.
    assert.equal(next({ downloads: [], total: 9, page: 1 }), undefined);
    assert.equal(next({ entries: [], count: 2 }), undefined);
  });

  test('a next link to another host is followed on the service’s own', () => {
    assert.equal(
      next([], { link: '<http://internal-lb:8080/v4/downloads?page=2>; rel="next"' }),
      `${BASE}?page=2`,
    );
    assert.equal(
      next({ next: 'https://user:pw@elsewhere.example/v4/downloads?page=2' }),
      `${BASE}?page=2`,
    );
    assert.equal(next({ next: 'ftp://elsewhere.example/list' }), undefined);
  });
});

/** A paged list served from memory: `pages[n]` answers the nth GET. */
function serve(pages: ((url: string) => Pick<JsonResponse, 'body' | 'headers'>)[]) {
  const urls: string[] = [];
  const get = async (url: string): Promise<JsonResponse> => {
    urls.push(url);
    const page = pages[Math.min(urls.length, pages.length) - 1]!(url);
    return { status: 200, ...page };
  };
  return { urls, get };
}

describe('readPages', () => {
  test('reads each page once, in order; an item seen before is kept once', async () => {
    const { urls, get } = serve([
      () => ({ headers: {}, body: { data: [{ id: 1 }, { id: 2 }], next: '?page=2' } }),
      () => ({ headers: {}, body: { data: [{ id: 2 }, { id: 3 }], next: '?page=3' } }),
      () => ({ headers: {}, body: { data: [{ id: 4 }], next: null } }),
    ]);
    const items = await readPages({ operation: 'list downloads', url: BASE, get });
    assert.deepEqual(items, [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }]);
    assert.deepEqual(urls, [BASE, `${BASE}?page=2`, `${BASE}?page=3`]);
  });

  test('a page that repeats, an empty page, or a link back to a page read ends the list', async () => {
    const again = serve([
      (url) => ({ headers: { link: `<${url}x>; rel="next"` }, body: [{ id: 'a' }] }),
    ]);
    assert.deepEqual(await readPages({ operation: 'x', url: BASE, get: again.get }), [{ id: 'a' }]);
    assert.equal(again.urls.length, 2);

    const empty = serve([
      () => ({ headers: {}, body: { items: [{ id: 'a' }], offset: 0, has_more: true } }),
      () => ({ headers: {}, body: { items: [], offset: 1, has_more: true } }),
    ]);
    assert.deepEqual(await readPages({ operation: 'x', url: BASE, get: empty.get }), [{ id: 'a' }]);
    assert.equal(empty.urls.length, 2);

    const back = serve([
      () => ({ headers: {}, body: { data: [{ id: 'a' }], next: '?page=2' } }),
      () => ({ headers: {}, body: { data: [{ id: 'b' }], next: BASE } }),
    ]);
    assert.deepEqual(await readPages({ operation: 'x', url: BASE, get: back.get }), [
      { id: 'a' },
      { id: 'b' },
    ]);
    assert.equal(back.urls.length, 2);
  });

  test('a list that goes on past MAX_PAGES is an error, not a list cut short', async () => {
    let n = 0;
    const { urls, get } = serve([
      () => {
        n += 1;
        return { headers: {}, body: { data: [{ id: n }], next: `?page=${n + 1}` } };
      },
    ]);
    await assert.rejects(
      readPages({ operation: 'list downloads', url: BASE, get }),
      (e: unknown) => {
        assert.ok(e instanceof SluiceError);
        assert.equal(e.code, 'SLUICE_API_BAD_RESPONSE');
        assert.match(e.message, new RegExp(`^list downloads: .*past ${MAX_PAGES} pages`));
        return true;
      },
    );
    assert.equal(urls.length, MAX_PAGES);
  });

  test('items without an id or name are all kept', async () => {
    const { get } = serve([
      () => ({ headers: {}, body: { data: ['u1', 'u2'], next: '?page=2' } }),
      () => ({ headers: {}, body: { data: [{ x: 1 }, { x: 1 }] } }),
    ]);
    assert.deepEqual(await readPages({ operation: 'x', url: BASE, get }), [
      'u1',
      'u2',
      { x: 1 },
      { x: 1 },
    ]);
  });
});
