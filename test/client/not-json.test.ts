/**
 * Answers that are not the service's JSON: an HTML page at the service URL, a redirect to a
 * login page, JSON cut short. Each says what came back (method and path, status, content type,
 * the first bytes), where it used to say "expected a JSON object, got nothing". A small real
 * HTTP server sends them, as no emulator would.
 */
import { strict as assert } from 'node:assert';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createServiceClient } from '../../src/client/index.js';
import type { ServiceClient } from '../../src/client/types.js';
import { SluiceError } from '../../src/errors.js';

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** Answers by request path (query left out); a login always succeeds. */
let answers: Map<string, Answer>;
let server: Server;
let origin: string;
const clients: ServiceClient[] = [];

function answerOf(req: IncomingMessage): Answer {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  if (path === '/v4/auth') return json(200, { token: 't' });
  return answers.get(path) ?? json(404, { error: 'Not Found' });
}

function json(status: number, value: unknown): Answer {
  return {
    status,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(value),
  };
}

const PAGE = `<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n<body>${'<p>Welcome to the portal.</p>'.repeat(20)}</body></html>`;

function v4(): ServiceClient {
  const client = createServiceClient(
    { url: `${origin}/v4`, email: 'a@sluice.test', password: 'pa55word' },
    { sleep: async () => {} },
  );
  clients.push(client);
  return client;
}

function v3(): ServiceClient {
  const client = createServiceClient(
    { url: `${origin}/v3`, token: 't0k3n' },
    { sleep: async () => {} },
  );
  clients.push(client);
  return client;
}

function rejectsWith(code: string, ...said: RegExp[]) {
  return (e: unknown) => {
    assert.ok(e instanceof SluiceError, String(e));
    assert.equal(e.code, code, e.message);
    for (const s of said) assert.match(e.message, s);
    for (const secret of ['pa55word', 't0k3n', 's1gnature'])
      assert.ok(!e.message.includes(secret), e.message);
    return true;
  };
}

describe('answers that are not JSON', () => {
  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const answer = answerOf(req);
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const c of clients) await c.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    answers = new Map();
  });

  test('an HTML page was "expected a JSON object, got nothing": now method, path, status, type and its first bytes, exit 2', async () => {
    answers.set('/v4/account', {
      status: 200,
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body: PAGE,
    });
    await assert.rejects(
      v4().account(),
      rejectsWith(
        'SLUICE_API_NOT_JSON',
        /^GET \/v4\/account: expected JSON from the service, got 200 \(text\/html; charset=utf-8\): "<!DOCTYPE html>\\n<html><head><title>Sign in<\/title>/,
        /"\.\.\.; check that the service URL points at the service's API$/,
      ),
    );
    const error = await v4()
      .account()
      .catch((e: SluiceError) => e);
    assert.equal((error as SluiceError).retryable, false);
    assert.ok((error as SluiceError).message.length < 400, 'about 200 bytes of the page, no more');
  });

  test('control characters in the first bytes are shown, not sent to the terminal', async () => {
    answers.set('/v4/account', { status: 200, body: 'PK\u0003\u0004\u0000\u001b[31mbinary\r\n' });
    await assert.rejects(
      v4().account(),
      rejectsWith(
        'SLUICE_API_NOT_JSON',
        /got 200 \(no content type\): "PK\\x03\\x04\\x00\\x1b\[31mbinary\\r\\n"/,
      ),
    );
  });

  test('a redirect (a login page) names the status and where it points, without its query', async () => {
    answers.set('/v4/account', {
      status: 302,
      headers: { location: 'https://login.example.com/sso?next=/v4&s1gnature=abc' },
      body: PAGE,
    });
    await assert.rejects(
      v4().account(),
      rejectsWith(
        'SLUICE_API_NOT_JSON',
        /^GET \/v4\/account: expected JSON from the service, got 302, a redirect to https:\/\/login\.example\.com\/sso; check that the service URL/,
      ),
    );
    answers.set('/v4/account', { status: 301 });
    await assert.rejects(
      v4().account(),
      rejectsWith('SLUICE_API_NOT_JSON', /got 301, a redirect without a Location/),
    );
  });

  test('JSON cut short stays SLUICE_API_BAD_JSON, worth a retry', async () => {
    answers.set('/v4/account', {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"email": "a@sluice.test", "business_cre',
    });
    const error = await v4()
      .account()
      .catch((e: unknown) => e);
    assert.ok(error instanceof SluiceError);
    assert.equal(error.code, 'SLUICE_API_BAD_JSON');
    assert.equal(error.retryable, true);
  });

  test('still liberal: extra fields and envelopes, an empty answer to a DELETE', async () => {
    answers.set(
      '/v4/account',
      json(200, { email: 'a@sluice.test', plan: 'gold', limits: { seats: 3 } }),
    );
    answers.set('/v4/downloads', json(200, { page: 1, downloads: [], note: 'none' }));
    answers.set('/v4/views/old', { status: 204 });
    const client = v4();
    assert.equal((await client.account()).email, 'a@sluice.test');
    assert.deepEqual(await client.listDownloads(), []);
    await client.deleteView('old');
  });

  test("v3: a download start's 303 to its request is its answer; a search's 303 is not", async () => {
    answers.set('/v3/data/properties', {
      status: 303,
      headers: { location: '/v3/requests/42', 'content-type': 'text/html' },
      body: '<a href="/v3/requests/42">See Other</a>',
    });
    const client = v3();
    const start = await client.startDownload({
      type: 'properties',
      query: 'city:Austin',
      numRecords: 5,
    });
    assert.equal(start.id, '42');
    await assert.rejects(
      client.count({ type: 'properties', query: 'city:Austin' }),
      rejectsWith(
        'SLUICE_API_NOT_JSON',
        /^GET \/v3\/data\/properties: .*got 303, a redirect to http:\/\/127\.0\.0\.1:\d+\/v3\/requests\/42;/,
      ),
    );
  });
});
