/**
 * Paged lists (`--page-size N`): the interface does not say whether `GET /downloads`,
 * `GET /views` and v3 `GET /requests` page, so the emulator can page them, for tests of a
 * client's paging: `?page=N`, each page the contract's bare array, a `Link` header with
 * `rel="next"` until the last page, and `X-Total-Count`. Off by default.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import type { EmulatorHarness } from '../helpers/emulator.js';
import { assertV4Error, call, type Json, type Reply, startEmulator, V3, V4 } from './support.js';

/** The `rel="next"` URL of a Link header, if any. */
function nextOf(res: Reply): string | undefined {
  return /<([^>]+)>;\s*rel="next"/.exec(res.headers.link ?? '')?.[1];
}

/** Every page of a list, following the next links from the first. */
async function allPages(first: string, headers: Record<string, string>): Promise<Json[][]> {
  const pages: Json[][] = [];
  let url: string | undefined = first;
  while (url !== undefined) {
    const res = await call('GET', url, { headers });
    assert.equal(res.status, 200, res.text);
    assert.ok(Array.isArray(res.json), 'each page is a bare array');
    pages.push(res.json);
    url = nextOf(res);
    assert.ok(pages.length < 20, 'the pages end');
  }
  return pages;
}

describe('paged lists', () => {
  let emu: EmulatorHarness;
  let v4: V4;
  let v3: V3;

  before(async () => {
    emu = await startEmulator('live', { pageSize: 2 });
    v4 = new V4(emu);
    v3 = new V3(emu);
    await v4.login();
    for (const type of ['businesses', 'products', 'people', 'properties', 'businesses'])
      await v4.startDownload(type, { query: '*', num_records: 3 });
    for (const name of ['a', 'b', 'c']) await v4.ok('POST', '/views', { name, fields: ['id'] });
    for (let i = 0; i < 3; i++) {
      const res = await v3.get(`/data/businesses?q=*&records=${i + 1}&download=true`);
      assert.equal(res.status, 303, res.text);
    }
  });
  after(() => emu.close());

  const bearer = () => ({ authorization: `Bearer ${v4.token}` });

  test('GET /downloads pages two at a time; the next links walk every download once', async () => {
    const first = await v4.get('/downloads');
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.length, 2, 'a client that does not page sees the first page only');
    assert.equal(first.headers['x-total-count'], '5');
    assert.equal(nextOf(first), `${emu.v4Url}/downloads?page=2`);
    const pages = await allPages(`${emu.v4Url}/downloads`, bearer());
    assert.deepEqual(
      pages.map((p) => p.length),
      [2, 2, 1],
    );
    const ids = pages.flat().map((d) => d.id);
    assert.equal(new Set(ids).size, 5);
    const whole = await emu.control<Json>('GET', 'info');
    assert.equal(whole.page_size, 2);
  });

  test('GET /views and v3 GET /requests page the same way', async () => {
    const views = await allPages(`${emu.v4Url}/views`, bearer());
    assert.deepEqual(
      views.flat().map((v) => v.name),
      ['a', 'b', 'c'],
    );
    const requests = await allPages(`${emu.v3Url}/requests`, { authorization: v3.authorization });
    assert.deepEqual(
      requests.map((p) => p.length),
      [2, 1],
    );
    assert.deepEqual(
      requests.flat().map((r) => r.id),
      [1, 2, 3].map((n) => n + 5),
      'v3 request ids follow the v4 downloads',
    );
  });

  test('a page past the end is empty and has no next link; a bad page is 400', async () => {
    const past = await v4.get('/downloads?page=9');
    assert.equal(past.status, 200, past.text);
    assert.deepEqual(past.json, []);
    assert.equal(nextOf(past), undefined);
    for (const bad of ['0', '-1', 'two', '1.5']) {
      assertV4Error('live', await v4.get(`/downloads?page=${bad}`), 400, /page/);
    }
  });

  test('without a page size the lists are whole and page is ignored', async () => {
    const whole = await startEmulator('live');
    try {
      const api = new V4(whole);
      await api.login();
      for (const name of ['a', 'b', 'c']) await api.ok('POST', '/views', { name, fields: ['id'] });
      const res = await api.get('/views?page=2');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.length, 3);
      assert.equal(res.headers.link, undefined);
      assert.equal(res.headers['x-total-count'], undefined);
    } finally {
      await whole.close();
    }
  });
});
