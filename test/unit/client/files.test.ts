/**
 * openResultFile against a small node:http storage server that misbehaves on request: cuts,
 * ignores Range, changes the file under a resume, names files `.gz` without Content-Encoding,
 * redirects, sends gzip that does not decode.
 */
import { strict as assert } from 'node:assert';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { finished } from 'node:stream/promises';
import { after, before, beforeEach, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { openResultFile } from '../../../src/client/files.js';
import { HttpTransport } from '../../../src/client/http.js';
import type { ResultFileRef } from '../../../src/client/types.js';
import { ApiError, SluiceError } from '../../../src/errors.js';

const CONTENT = Buffer.from(
  Array.from({ length: 4000 }, (_, i) => `{"id":"r${i}","n":${i}}\n`).join(''),
  'utf8',
);

interface Behaviour {
  /** Bytes sent before the connection is dropped, per request in order (undefined: no cut). */
  cuts: (number | undefined)[];
  ignoreRange: boolean;
  etag: (request: number) => string;
  /** Requests answered 403 (by position). */
  forbidden: Set<number>;
  body: Buffer;
  encoding?: string;
  /** Requests answered with a redirect (by position), to `location` when it is given. */
  redirects: Map<number, { status: number; location?: string }>;
}

let behaviour: Behaviour;
let seen: { url: string; host?: string; range?: string; ifRange?: string; auth?: string }[] = [];

function handle(req: IncomingMessage, res: import('node:http').ServerResponse): void {
  const n = seen.length;
  seen.push({
    url: req.url ?? '',
    host: req.headers.host,
    range: req.headers.range,
    ifRange: req.headers['if-range'] as string | undefined,
    auth: req.headers.authorization,
  });
  const redirect = behaviour.redirects.get(n);
  if (redirect) {
    res.writeHead(redirect.status, redirect.location ? { location: redirect.location } : {});
    res.end('<html><body>Moved</body></html>');
    return;
  }
  if (behaviour.forbidden.has(n)) {
    res.writeHead(403, { 'content-type': 'application/xml' });
    res.end('<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>');
    return;
  }
  const body = behaviour.body;
  const etag = behaviour.etag(n);
  let start = 0;
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const honour =
    m &&
    !behaviour.ignoreRange &&
    (req.headers['if-range'] === undefined || req.headers['if-range'] === etag);
  const headers: Record<string, string> = { etag };
  if (behaviour.encoding) headers['content-encoding'] = behaviour.encoding;
  if (honour && m) {
    start = Number(m[1]);
    headers['content-range'] = `bytes ${start}-${body.length - 1}/${body.length}`;
  }
  headers['content-length'] = String(body.length - start);
  res.writeHead(honour ? 206 : 200, headers);
  const part = body.subarray(start);
  const cut = behaviour.cuts[n];
  if (cut === undefined) {
    res.end(part);
    return;
  }
  res.write(part.subarray(0, cut), () => setTimeout(() => res.socket?.destroy(), 5));
}

async function read(file: ResultFileRef, refresh?: () => Promise<ResultFileRef>): Promise<Buffer> {
  const stream = await openResultFile({
    http,
    file,
    refresh: refresh ?? (async () => assert.fail('no refresh expected')),
  });
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

let server: Server;
let origin: string;
/** The same storage at another origin, for redirects that change host. */
let elsewhere: Server;
let elsewhereOrigin: string;
let http: HttpTransport;

describe('openResultFile', () => {
  before(async () => {
    server = createServer(handle);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    elsewhere = createServer(handle);
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    elsewhereOrigin = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
    http = new HttpTransport({ sleep: async () => {} });
  });
  after(async () => {
    await http.close();
    for (const s of [server, elsewhere]) {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
  });
  beforeEach(() => {
    seen = [];
    behaviour = {
      cuts: [],
      ignoreRange: false,
      etag: () => '"v1"',
      forbidden: new Set(),
      body: CONTENT,
      redirects: new Map(),
    };
  });

  const ref = (name = 'abc_0.txt'): ResultFileRef => ({
    index: 0,
    name,
    url: `${origin}/files/${name}?sig=s3cr3t`,
  });

  test('resumes with Range and If-Range, without an Authorization header', async () => {
    behaviour.cuts = [10_000, 20_000];
    const bytes = await read(ref());
    assert.ok(bytes.equals(CONTENT));
    assert.deepEqual(
      seen.map((s) => [s.range, s.ifRange]),
      [
        [undefined, undefined],
        ['bytes=10000-', '"v1"'],
        ['bytes=30000-', '"v1"'],
      ],
    );
    assert.ok(seen.every((s) => s.auth === undefined));
  });

  test('a 200 to a range request: the bytes already passed on are skipped', async () => {
    behaviour.cuts = [12_345];
    behaviour.ignoreRange = true;
    const bytes = await read(ref());
    assert.ok(bytes.equals(CONTENT));
    assert.equal(seen.length, 2);
  });

  test('a file that changed under the resume is an error, not a splice', async () => {
    behaviour.cuts = [5000];
    behaviour.etag = (n) => (n === 0 ? '"v1"' : '"v2"');
    await assert.rejects(
      read(ref()),
      (e: unknown) => e instanceof SluiceError && e.code === 'SLUICE_FILE_CHANGED',
    );
  });

  test('a .gz name without Content-Encoding is gunzipped', async () => {
    behaviour.body = gzipSync(CONTENT);
    const bytes = await read(ref('abc_0.txt.gz'));
    assert.ok(bytes.equals(CONTENT));
  });

  test('Content-Encoding: gzip is gunzipped, and a cut resumes over the encoded bytes', async () => {
    behaviour.body = gzipSync(CONTENT);
    behaviour.encoding = 'gzip';
    behaviour.cuts = [Math.floor(behaviour.body.length / 2)];
    const bytes = await read(ref());
    assert.ok(bytes.equals(CONTENT));
    assert.equal(seen[1]?.range, `bytes=${Math.floor(behaviour.body.length / 2)}-`);
  });

  test('403 gets a fresh URL for the same file; a different file is refused', async () => {
    behaviour.forbidden = new Set([0]);
    let refreshed = 0;
    const bytes = await read(ref(), async () => {
      refreshed += 1;
      return { ...ref(), url: `${origin}/files/abc_0.txt?sig=fresh` };
    });
    assert.ok(bytes.equals(CONTENT));
    assert.equal(refreshed, 1);
    assert.equal(seen[1]?.url, '/files/abc_0.txt?sig=fresh');

    seen = [];
    behaviour.forbidden = new Set([0]);
    await assert.rejects(
      read(ref(), async () => ({
        index: 0,
        name: 'other_0.txt',
        url: `${origin}/files/other_0.txt`,
      })),
      (e: unknown) => e instanceof SluiceError && e.code === 'SLUICE_FILE_CHANGED',
    );
  });

  test('403 after the refreshes are used up: worth a retry, the 403 as its cause, no signature', async () => {
    behaviour.forbidden = new Set([0, 1, 2, 3]);
    await assert.rejects(
      read(ref(), async () => ref()),
      (e: unknown) => {
        assert.ok(e instanceof SluiceError);
        assert.equal(e.code, 'SLUICE_FILE_EXPIRED');
        assert.equal(e.retryable, true);
        assert.ok(e.cause instanceof ApiError);
        assert.equal(e.cause.status, 403);
        assert.deepEqual(e.cause.details, ['Request has expired']);
        assert.ok(!e.message.includes('s3cr3t'));
        return true;
      },
    );
    assert.equal(seen.length, 3, 'the first try and two refreshes');
  });

  test('a consumer that stops early releases the connection', async () => {
    behaviour.body = Buffer.concat(Array.from({ length: 50 }, () => CONTENT));
    const stream = await openResultFile({ http, file: ref(), refresh: async () => ref() });
    for await (const _chunk of stream) break;
    assert.equal(stream.destroyed, true);
    // The pool is still usable afterwards.
    behaviour.body = CONTENT;
    assert.ok((await read(ref())).equals(CONTENT));
  });

  for (const status of [301, 302, 303, 307, 308]) {
    test(`a ${status} to where the file is was loaded as the file: now followed`, async () => {
      behaviour.redirects = new Map([[0, { status, location: '/store/abc_0.txt?sig=other' }]]);
      const bytes = await read(ref());
      assert.ok(bytes.equals(CONTENT));
      assert.deepEqual(
        seen.map((s) => s.url),
        ['/files/abc_0.txt?sig=s3cr3t', '/store/abc_0.txt?sig=other'],
      );
    });
  }

  test('a cut after a redirect resumes through the redirect, with Range and If-Range', async () => {
    const moved = { status: 302, location: '/store/abc_0.txt' };
    behaviour.redirects = new Map([
      [0, moved],
      [2, moved],
    ]);
    behaviour.cuts = [undefined, 10_000];
    const bytes = await read(ref());
    assert.ok(bytes.equals(CONTENT));
    assert.deepEqual(
      seen.map((s) => [s.url, s.range, s.ifRange]),
      [
        ['/files/abc_0.txt?sig=s3cr3t', undefined, undefined],
        ['/store/abc_0.txt', undefined, undefined],
        ['/files/abc_0.txt?sig=s3cr3t', 'bytes=10000-', '"v1"'],
        ['/store/abc_0.txt', 'bytes=10000-', '"v1"'],
      ],
    );
  });

  test('a redirect to another host is not sent the credentials of the first', async () => {
    behaviour.redirects = new Map([[0, { status: 307, location: `${elsewhereOrigin}/x/abc` }]]);
    const res = await http.stream({
      method: 'GET',
      url: `${origin}/files/abc_0.txt`,
      headers: { authorization: 'Bearer t0ken', range: 'bytes=5-' },
    });
    res.body.destroy();
    assert.deepEqual(
      seen.map((s) => [s.host, s.auth, s.range]),
      [
        [new URL(origin).host, 'Bearer t0ken', 'bytes=5-'],
        [new URL(elsewhereOrigin).host, undefined, 'bytes=5-'],
      ],
    );
  });

  test('a redirect loop, a redirect without a Location, a 300: errors naming no signature, never a body to load', async () => {
    const loop = { status: 302, location: '/files/abc_0.txt?sig=again' };
    behaviour.redirects = new Map(Array.from({ length: 10 }, (_, n) => [n, loop]));
    await assert.rejects(read(ref()), (e: unknown) => {
      assert.ok(e instanceof SluiceError);
      assert.equal(e.code, 'SLUICE_API_BAD_RESPONSE');
      assert.match(
        e.message,
        /redirected more than 5 times \(last to http:\/\/[^ ]+\/files\/abc_0\.txt\)/,
      );
      assert.ok(!e.message.includes('sig='), e.message);
      return true;
    });
    assert.equal(seen.length, 6, 'the first GET and five redirects followed');

    for (const [redirect, said] of [
      [{ status: 302 }, /answered 302 without a usable Location/],
      [
        { status: 300, location: '/a?sig=x' },
        /answered 300 to http:\/\/[^ ]+\/a, a redirect that is not followed/,
      ],
    ] as const) {
      seen = [];
      behaviour.redirects = new Map([[0, redirect]]);
      await assert.rejects(
        read(ref()),
        (e: unknown) =>
          e instanceof SluiceError && e.code === 'SLUICE_API_BAD_RESPONSE' && said.test(e.message),
      );
    }
  });

  test('damaged gzip (corrupt, cut short, text sent as gzip) was an internal error: now SLUICE_FILE_DAMAGED naming the file and what zlib said', async () => {
    const zipped = gzipSync(CONTENT);
    const corrupt = Buffer.from(zipped);
    for (let i = 1000; i < 1016; i++) corrupt[i] = corrupt[i]! ^ 0x5a;
    for (const [body, said] of [
      [corrupt, /zlib: /],
      [zipped.subarray(0, Math.floor(zipped.length / 2)), /zlib: unexpected end of file/],
      [CONTENT, /zlib: incorrect header check/],
    ] as const) {
      behaviour.body = body;
      behaviour.encoding = 'gzip';
      await assert.rejects(read(ref()), (e: unknown) => {
        assert.ok(e instanceof SluiceError, String(e));
        assert.equal(e.code, 'SLUICE_FILE_DAMAGED');
        assert.equal(e.retryable, true);
        assert.match(e.message, /^result file abc_0\.txt is damaged: it could not be decompressed/);
        assert.match(e.message, said);
        return true;
      });
    }
  });

  test('a consumer that fails to write what it read (a full disk) was answered with a resume: now its error stands', async () => {
    const stream = await openResultFile({ http, file: ref(), refresh: async () => ref() });
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), {
      code: 'ENOSPC',
    });
    stream.once('data', () => stream.destroy(full));
    await assert.rejects(finished(stream), (e: unknown) => e === full);
    assert.equal(seen.length, 1, 'no range request followed');
  });
});
