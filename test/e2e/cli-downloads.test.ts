import { strict as assert } from 'node:assert';
import { existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { downloadsFetchCommand } from '../../src/cli/commands/downloads.js';
import { createServiceClient } from '../../src/client/index.js';
import type { ServiceClient } from '../../src/client/types.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { Capture, emulatorEnv, runCli, tempDir } from '../helpers/pipeline.js';
import { type HostileService, startHostileService } from '../reliability/hostile-server.js';

/**
 * `sluice downloads list|show|cancel|fetch` against a real emulator. Downloads are started with
 * the library client (the CLI starts them through pipelines); the files `fetch` saves are
 * compared byte for byte with what the emulator serves at the download's result URLs.
 */

let h: EmulatorHarness;
let env: NodeJS.ProcessEnv;
let client: ServiceClient;
let completed: string;
const QUEUE_MS = 60_000;

before(async () => {
  // 300 records a file, so a 700-record download has three files. Downloads stay queued for a
  // minute of emulator time, so a test decides when one runs by moving the emulator's clock.
  h = await EmulatorHarness.start({ scale: 0.05, fileRecords: 300, queueMs: QUEUE_MS });
  env = emulatorEnv(h);
  client = createServiceClient({
    url: h.v4Url,
    email: h.credentials.email,
    password: h.credentials.password,
  });
  const start = await client.startDownload({
    type: 'properties',
    query: '*',
    numRecords: 700,
    format: 'csv',
  });
  completed = start.id;
  await h.advanceClock(QUEUE_MS + 1000);
  assert.equal((await client.getDownload(completed)).state, 'completed');
});
after(async () => {
  await client.close();
  await h.close();
});

async function sluice(...argv: string[]) {
  return runCli(argv, env);
}

async function json<T = Record<string, unknown>>(...argv: string[]): Promise<T> {
  const r = await sluice(...argv, '--json');
  assert.equal(r.code, 0, `sluice ${argv.join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** What the emulator serves for each result file of the download, fetched directly. */
async function servedFiles(id: string): Promise<Map<string, Buffer>> {
  const info = await client.getDownload(id);
  const out = new Map<string, Buffer>();
  for (const file of info.files) {
    const response = await fetch(file.url);
    assert.equal(response.status, 200);
    out.set(file.name, Buffer.from(await response.arrayBuffer()));
  }
  return out;
}

describe('downloads', () => {
  test('list (text and json), newest first', async () => {
    const newer = await client.startDownload({
      type: 'products',
      query: '*',
      numRecords: 5,
      format: 'csv',
    });
    const doc = await json<{
      downloads: {
        id: string;
        state: string;
        num_records: number;
        created_at: string;
        files: unknown[];
      }[];
    }>('downloads', 'list');
    const mine = doc.downloads.find((d) => d.id === completed);
    assert.ok(mine, 'the download is listed');
    assert.equal(mine?.state, 'completed');
    assert.equal(mine?.num_records, 700);
    assert.equal(mine?.files.length, 3);
    assert.deepEqual(
      doc.downloads.map((d) => d.id).slice(0, 2),
      [newer.id, completed],
      'newest first',
    );

    const r = await sluice('downloads', 'list');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^id\s+state\s+records\s+files\s+created\n/);
    assert.match(r.stdout, new RegExp(`${completed}\\s+completed\\s+700\\s+3\\s+\\d{4}-`));
  });

  test('show (text and json)', async () => {
    const doc = await json<{ id: string; state: string; files: { index: number; name: string }[] }>(
      'downloads',
      'show',
      completed,
    );
    assert.equal(doc.id, completed);
    assert.deepEqual(
      doc.files,
      [0, 1, 2].map((n) => ({ index: n, name: `${completed}_${n}.csv` })),
    );
    assert.ok(!JSON.stringify(doc).includes('http'), 'no pre-signed URLs in the document');

    const r = await sluice('downloads', 'show', completed);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(`^Download ${completed}\\n {2}state +completed\\n {2}records +700`),
    );
    assert.match(
      r.stdout,
      new RegExp(`files +${completed}_0\\.csv, ${completed}_1\\.csv, ${completed}_2\\.csv`),
    );
  });

  test('show an unknown download: exit 2 with the service message', async () => {
    const r = await sluice('downloads', 'show', 'nosuch');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /download 'nosuch' not found/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  test('fetch saves every file, byte for byte, with progress on stderr', async () => {
    const dir = join(tempDir(), 'out');
    const r = await sluice('downloads', 'fetch', completed, '--out', dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(`^Saved 3 files \\([\\d,]+ bytes, 700 records\\) of download ${completed} to `),
    );
    for (let n = 0; n < 3; n++) {
      assert.match(
        r.stderr,
        new RegExp(`\\[${n + 1}/3\\] ${completed}_${n}\\.csv {2}[\\d,]+ bytes, done`),
      );
    }
    const served = await servedFiles(completed);
    assert.deepEqual(readdirSync(dir).sort(), [...served.keys()].sort(), 'no .part files left');
    for (const [name, bytes] of served)
      assert.ok(readFileSync(join(dir, name)).equals(bytes), `${name} matches`);
    const rows = [...served.values()].reduce(
      (sum, b) => sum + b.toString().trimEnd().split('\n').length - 1,
      0,
    );
    assert.equal(rows, 700, 'three CSV files with a header each, 700 records in all');
  });

  test('fetch refuses to overwrite unless --force; --json reports each file', async () => {
    const dir = tempDir();
    const existing = join(dir, `${completed}_1.csv`);
    writeFileSync(existing, 'keep me');
    const refused = await sluice('downloads', 'fetch', completed, '--out', dir);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /1 file already exists: .*_1\.csv; add --force to overwrite/);
    assert.equal(readFileSync(existing, 'utf8'), 'keep me');
    assert.ok(!existsSync(join(dir, `${completed}_0.csv`)), 'nothing fetched when refusing');

    const doc = await json<{
      files: { name: string; path: string; bytes: number }[];
      bytes: number;
      dir: string;
    }>('downloads', 'fetch', completed, dir, '--force');
    assert.equal(doc.files.length, 3);
    assert.equal(doc.dir, dir);
    const served = await servedFiles(completed);
    for (const f of doc.files) {
      assert.equal(f.bytes, served.get(f.name)?.length);
      assert.ok(readFileSync(f.path).equals(served.get(f.name)!));
    }
    assert.equal(
      doc.bytes,
      doc.files.reduce((s, f) => s + f.bytes, 0),
    );
  });

  test('fetch of a queued download refuses without --wait and waits with it', async () => {
    const start = await client.startDownload({
      type: 'businesses',
      query: '*',
      numRecords: 50,
      format: 'json',
    });
    const dir = tempDir();
    const r = await sluice('downloads', 'fetch', start.id, '--out', dir);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`download ${start.id} is queued \\(0 records so far\\).*add --wait`),
    );
    assert.deepEqual(readdirSync(dir), []);

    const stdout = new Capture();
    const stderr = new Capture();
    const fetching = downloadsFetchCommand(
      client,
      { id: start.id, out: dir, wait: true, pollMs: 20 },
      { stdout, stderr },
    );
    await new Promise((resolve) => setTimeout(resolve, 60));
    await h.advanceClock(QUEUE_MS + 1000);
    const doc = await fetching;
    assert.equal(doc.state, 'completed');
    assert.equal(doc.num_records, 50);
    assert.match(stderr.text, /is queued: 0 records so far/);
    const lines = readFileSync(join(dir, `${start.id}_0.txt`), 'utf8')
      .trimEnd()
      .split('\n');
    assert.equal(lines.length, 50, 'NDJSON: one record a line');
    assert.equal(typeof JSON.parse(lines[0]!).id, 'string');
  });

  test('cancel (text and json)', async () => {
    const queued = await client.startDownload({
      type: 'properties',
      query: '*',
      numRecords: 900,
      format: 'csv',
    });
    const r = await sluice('downloads', 'cancel', queued.id);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `Cancelled download ${queued.id} before any record was delivered.\n`);
    const shown = await json<{ state: string }>('downloads', 'show', queued.id);
    assert.equal(shown.state, 'cancelled');

    const again = await sluice('downloads', 'cancel', queued.id);
    assert.equal(again.code, 2, 'cancelling again cannot succeed: a mistake, not worth a retry');
    assert.match(again.stderr, /already cancelled/);

    const other = await client.startDownload({
      type: 'products',
      query: '*',
      numRecords: 10,
      format: 'csv',
    });
    const doc = await json<{ id: string; state: string; num_records: number }>(
      'downloads',
      'cancel',
      other.id,
    );
    assert.deepEqual({ id: doc.id, state: doc.state }, { id: other.id, state: 'cancelled' });
  });

  test('an interrupted fetch exits 130 and leaves no partial file', async () => {
    const dir = tempDir();
    const r = await runCli(
      ['downloads', 'fetch', completed, '--out', dir],
      env,
      AbortSignal.abort(),
    );
    assert.equal(r.code, 130);
    assert.deepEqual(readdirSync(dir), []);
  });

  test('a fetch interrupted mid-file removes the .part file and keeps the whole ones', async () => {
    const dir = tempDir();
    const controller = new AbortController();
    // The real client, except that the second file stalls after its first bytes.
    const openResultFile: ServiceClient['openResultFile'] = async (id, file, options) => {
      if (file.index === 0) return client.openResultFile(id, file, options);
      setTimeout(() => controller.abort(), 50);
      const stalled = new Readable({ read() {} });
      stalled.push('id,address\n');
      return stalled;
    };
    const stalling = new Proxy(client, {
      get(target, prop) {
        if (prop === 'openResultFile') return openResultFile;
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const io = { stdout: new Capture(), stderr: new Capture() };
    await assert.rejects(
      downloadsFetchCommand(stalling, { id: completed, out: dir }, io, controller.signal),
      { name: 'AbortError' },
    );
    assert.deepEqual(readdirSync(dir), [`${completed}_0.csv`]);
  });

  test('a full disk while fetching was an internal error, answered with a resume: now SLUICE_DISK_FULL naming the file, fetched once', async () => {
    const dir = tempDir();
    const [first] = (await client.getDownload(completed)).files;
    // Writing to /dev/full fails with ENOSPC, as a full disk does: the file being saved is a
    // link to it.
    const part = join(dir, `${first!.name}.part`);
    symlinkSync('/dev/full', part);
    const from = (await h.requests()).length;
    const r = await sluice('downloads', 'fetch', completed, '--out', dir, '--json');
    assert.equal(r.code, 1, r.stderr);
    const { error } = JSON.parse(r.stdout);
    assert.equal(error.code, 'SLUICE_DISK_FULL');
    assert.equal(error.retryable, true);
    assert.match(
      error.message,
      new RegExp(`^no room to save ${part}: no space left on device \\(ENOSPC\\); free some space`),
    );
    assert.doesNotMatch(r.stderr, /internal error|resum/i);
    const gets = (await h.requests())
      .slice(from)
      .filter((q) => q.method === 'GET' && q.path.startsWith(`/files/${first!.name}`));
    assert.equal(gets.length, 1, 'no range request after the local failure');
    assert.deepEqual(readdirSync(dir), [], 'nothing left behind');
  });

  test('a folder that cannot be written was an internal error: now exit 2 naming it', async () => {
    const root = tempDir();
    writeFileSync(join(root, 'afile'), 'not a folder');
    const out = join(root, 'afile', 'out');
    const r = await sluice('downloads', 'fetch', completed, '--out', out, '--json');
    assert.equal(r.code, 2, r.stderr);
    const { error } = JSON.parse(r.stdout);
    assert.equal(error.code, 'SLUICE_USAGE');
    assert.match(error.message, new RegExp(`^cannot save ${out}: not a directory \\(ENOTDIR\\)`));
  });

  test('no directory (DIR or --out) is a usage error; two different ones too', async () => {
    const r = await sluice('downloads', 'fetch', completed);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      new RegExp(`sluice downloads fetch ${completed} DIR \\(or --out DIR\\)`),
    );
    const two = await sluice('downloads', 'fetch', completed, 'a', '--out', 'b');
    assert.equal(two.code, 2);
    assert.match(two.stderr, /give the directory once: a \(after the id\) or --out b, not both/);
    const help = await sluice('downloads', 'fetch', '--help');
    assert.match(help.stdout, /downloads fetch ID files\//);
  });
});

/**
 * Result URLs are pre-signed storage URLs, and the last segment of their path is all that names
 * a file: two files of one download can end in the same name. The emulator never does that, so
 * a small server here answers the v4 login and `GET /downloads/{id}` and serves the files.
 */
describe('downloads fetch: result files that end in the same name', () => {
  // The URL paths of the download's results, in order, and the name each is saved under.
  const results: [string, string][] = [
    ['/store/a/part.csv?X-Signature=1', 'part.csv'],
    ['/store/b/part.csv?X-Signature=2', 'part-2.csv'],
    ['/store/a/part.csv?X-Signature=3', 'part-3.csv'],
    // The same name to a file system that ignores case (macOS, Windows).
    ['/store/c/PART.csv', 'PART-4.csv'],
    // Its own name, which a renamed copy of part.csv must not take from it.
    ['/store/d/part-1.csv', 'part-1.csv'],
    // What part.csv is written to while it downloads.
    ['/store/e/part.csv.part', 'part.csv-1.part'],
    // A directory smuggled into the name stays out of the path.
    ['/store/f/..%2F..%2Fpart.csv', 'part-5.csv'],
  ];
  const bodyOf = (n: number) => `id,n\nr${n},${n}\n${'x'.repeat(100 * n)}\n`;
  let server: Server;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    server = createServer((req, res) => {
      const send = (status: number, body: string, type = 'application/json') => {
        res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      if (req.method === 'POST' && req.url === '/v4/auth') return send(200, '{"token":"t1"}');
      if (req.url === '/v4/downloads/d1' && req.headers.authorization === 'Bearer t1') {
        const body = {
          id: 'd1',
          status: 'completed',
          num_records: results.length,
          results: results.map(([path]) => ({ url: base + path })),
        };
        return send(200, JSON.stringify(body));
      }
      const n = results.findIndex(([path]) => path === req.url);
      if (n >= 0) return send(200, bodyOf(n), 'text/csv');
      send(404, '{"error":"not found"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    env = {
      PATH: process.env.PATH,
      SLUICE_API_URL: `http://127.0.0.1:${port}/v4`,
      SLUICE_EMAIL: 'ann@example.com',
      SLUICE_PASSWORD: 'secret',
    };
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test('fetch saves files that share a base name under names of their own instead of overwriting', async () => {
    const root = tempDir();
    const dir = join(root, 'out');
    const r = await runCli(['downloads', 'fetch', 'd1', '--out', dir, '--json'], env);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as {
      files: { index: number; name: string; path: string; bytes: number }[];
      bytes: number;
    };
    assert.deepEqual(
      doc.files.map((f) => [f.index, f.name, f.path]),
      results.map(([, name], n) => [n, name, join(dir, name)]),
    );
    assert.deepEqual(readdirSync(dir).sort(), results.map(([, name]) => name).sort());
    assert.deepEqual(readdirSync(root), ['out'], 'nothing written outside --out');
    for (const [n, f] of doc.files.entries()) {
      assert.equal(readFileSync(f.path, 'utf8'), bodyOf(n), `${f.name} holds file ${n}`);
      assert.equal(f.bytes, Buffer.byteLength(bodyOf(n)));
    }

    // The same names every time, so a file already there is found before anything is fetched.
    const again = tempDir();
    writeFileSync(join(again, 'part-3.csv'), 'keep me');
    const refused = await runCli(['downloads', 'fetch', 'd1', '--out', again], env);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /1 file already exists: .*part-3\.csv; add --force to overwrite/);
    assert.deepEqual(readdirSync(again), ['part-3.csv']);
    assert.equal(readFileSync(join(again, 'part-3.csv'), 'utf8'), 'keep me');

    const forced = await runCli(['downloads', 'fetch', 'd1', '--out', again, '--force'], env);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /^Saved 7 files \([\d,]+ bytes, 7 records\) of download d1 to /);
    assert.match(
      forced.stdout,
      /\n5 files named like another saved under a new name: part\.csv \(file 2\) as part-2\.csv, /,
    );
    assert.match(forced.stderr, /\[3\/7\] part-3\.csv {2}[\d,]+ bytes, done/);
    for (const [n, [, name]] of results.entries())
      assert.equal(readFileSync(join(again, name), 'utf8'), bodyOf(n), name);
  });
});

/**
 * Result files that are not what they seem, from a small stand-in for the service: a redirect,
 * an empty 200, fewer records than the download says, gzip that does not decode.
 */
describe('downloads fetch: files short, empty, redirected or damaged', () => {
  let hostile: HostileService;
  let env: NodeJS.ProcessEnv;
  const lines = Array.from({ length: 6 }, (_, i) => JSON.stringify({ id: `r${i}` }));

  before(async () => {
    hostile = await startHostileService();
    env = {
      PATH: process.env.PATH,
      SLUICE_API_URL: hostile.v4Url,
      SLUICE_EMAIL: 'h@sluice.test',
      SLUICE_PASSWORD: 'h',
    };
  });
  after(async () => {
    await hostile.close();
  });

  const fetchInto = async (id: string) => {
    const dir = tempDir();
    const r = await runCli(['downloads', 'fetch', id, '--out', dir, '--json'], env);
    return { dir, code: r.code, stderr: r.stderr, doc: JSON.parse(r.stdout) };
  };
  const fileText = (from: number, to: number) =>
    lines
      .slice(from, to)
      .map((l) => `${l}\n`)
      .join('');

  test('a file answered with a 302 to where it is was saved as the redirect: now the file', async () => {
    hostile.serve(lines, { files: 2, answer: (n) => (n === 0 ? 'redirect' : undefined) });
    const { dir, code, stderr, doc } = await fetchInto('moved');
    assert.equal(code, 0, stderr);
    assert.deepEqual(
      doc.files.map((f: { name: string; records: number }) => [f.name, f.records]),
      [
        ['moved_0.txt', 3],
        ['moved_1.txt', 3],
      ],
    );
    assert.equal(readFileSync(join(dir, 'moved_0.txt'), 'utf8'), fileText(0, 3));
  });

  test('an empty 200 was saved as a 0-byte file and reported as success: now fetched again, then SLUICE_FILE_INCOMPLETE, nothing saved under its name', async () => {
    hostile.serve(lines, { files: 2, answer: (n) => (n === 1 ? 'empty' : undefined) });
    const { dir, code, doc } = await fetchInto('hollow');
    assert.equal(code, 1);
    assert.equal(doc.error.code, 'SLUICE_FILE_INCOMPLETE');
    assert.match(
      doc.error.message,
      /^result file hollow_1\.txt came with no records \(0 bytes\), where download hollow holds 6; fetched 3 times, it never came whole, and nothing was saved as .*hollow_1\.txt/,
    );
    assert.equal(hostile.fileGets('hollow_1.txt'), 3);
    assert.deepEqual(readdirSync(dir), ['hollow_0.txt'], 'the whole file only, no .part');
  });

  test('files holding fewer records than the download were reported as success: now exit 1, and they are renamed .incomplete', async () => {
    hostile.serve(lines, { files: 2, answer: (n) => (n === 1 ? 'short' : undefined) });
    const { dir, code, doc } = await fetchInto('thin');
    assert.equal(code, 1);
    assert.equal(doc.error.code, 'SLUICE_FILE_INCOMPLETE');
    assert.match(
      doc.error.message,
      /^download thin holds 6 records by the service's count, its files 5 \(thin_0\.txt 3, thin_1\.txt 2\); they are kept as <name>\.incomplete/,
    );
    assert.deepEqual(readdirSync(dir).sort(), ['thin_0.txt.incomplete', 'thin_1.txt.incomplete']);
  });

  test('a damaged gzip file was an internal error: now fetched again, then SLUICE_FILE_DAMAGED naming it', async () => {
    hostile.serve(lines, { answer: () => 'gzip-corrupt' });
    const { dir, code, stderr, doc } = await fetchInto('broken');
    assert.equal(code, 1);
    assert.equal(doc.error.code, 'SLUICE_FILE_DAMAGED');
    assert.match(
      doc.error.message,
      /^result file broken_0\.txt is damaged: it could not be decompressed \(zlib: [^)]+\); fetched 3 times/,
    );
    assert.doesNotMatch(stderr, /internal error|\n\s+at /);
    assert.equal(hostile.fileGets('broken_0.txt'), 3);
    assert.deepEqual(readdirSync(dir), []);
  });
});
