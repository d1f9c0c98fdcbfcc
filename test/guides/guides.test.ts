import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { EmulatorHarness } from '../helpers/emulator.js';
import { tempDir } from '../helpers/pipeline.js';

/**
 * Clients written the way the service's guides teach (v3_guide.py, v4_guide.py: Python with
 * its standard library, as the guides' samples are) run against the emulator's default wire
 * mode, over real HTTP and in real time: each completes, saves every record, and buys exactly
 * one download. Then an older client, written for a 202 and integer ids, against `--wire real`.
 */

const run = promisify(execFile);
const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));
const QUERY = 'province:TX';
const POLL_SECONDS = '0.05';

let emu: EmulatorHarness;
let found: number;

before(async () => {
  // Slow enough that a client polls a queued, then a running download; small files, so several.
  emu = await EmulatorHarness.start({
    wire: 'live',
    scale: 0.05,
    queueMs: 200,
    rate: 1_000,
    fileRecords: 60,
  });
  const { email, password } = emu.credentials;
  const auth = await fetch(`${emu.v4Url}/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  const { token } = (await auth.json()) as { token: string };
  const count = await fetch(`${emu.v4Url}/properties/search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: QUERY, num_records: 0 }),
  });
  found = ((await count.json()) as { num_found: number }).num_found;
  assert.ok(found > 120, 'enough records for several files');
});
after(() => emu.close());

interface Purchase {
  /** Download starts the emulator received. */
  starts: number;
  downloads: number;
  credits: number;
}

/** What the emulator saw: starts received, downloads made, property credits spent. */
async function purchases(startPath: string): Promise<Purchase> {
  const log = await emu.requests();
  return {
    starts: log.filter((r) => r.path === startPath).length,
    downloads: emu.emulator.context.state.downloads.length,
    credits: emu.emulator.context.state.account.used.property,
  };
}

async function python(script: string, ...args: string[]) {
  const { stdout } = await run('python3', [here(script), ...args, '--interval', POLL_SECONDS]);
  return JSON.parse(stdout) as Record<string, unknown> & { files: string[]; records: number };
}

describe("clients written the way the service's guides teach", () => {
  test('v3: basic auth with the token, download=true, follow the 303, poll, fetch each file', async () => {
    await emu.reset();
    const out = tempDir('sluice-guide-v3-');
    const result = await python('v3_guide.py', emu.v3Url, emu.credentials.token, QUERY, out);
    assert.match(String(result.landed), /\/v3\/requests\/\d+$/, 'the start landed on its request');
    assert.ok(Number(result.polls) >= 1, 'it polled a download that was still running');
    assert.equal(result.records, found, 'every record, saved');
    assert.equal(result.files.length, Math.ceil(found / 60));
    assert.equal(readdirSync(out).length, result.files.length);
    assert.deepEqual(await purchases('/v3/data/properties'), {
      starts: 1,
      downloads: 1,
      credits: found,
    });
  });

  for (const auth of ['API token', 'login'] as const) {
    test(`v4 (${auth}): search with download true, read id and status, poll num_downloaded, fetch each URL`, async () => {
      await emu.reset();
      const out = tempDir('sluice-guide-v4-');
      const { email, password, token } = emu.credentials;
      const credentials = auth === 'login' ? ['--login', email, password] : ['--token', token];
      const result = await python('v4_guide.py', emu.v4Url, QUERY, out, ...credentials);
      const progress = result.num_downloaded as number[];
      assert.ok(progress.length >= 1, 'it polled a download that was still running');
      assert.equal(progress.at(-1), found);
      assert.deepEqual(
        [...progress].sort((a, b) => a - b),
        progress,
        'num_downloaded grows',
      );
      assert.equal(result.records, found, 'every record, saved');
      assert.equal(result.files.length, Math.ceil(found / 60));
      assert.deepEqual(await purchases('/v4/properties/search'), {
        starts: 1,
        downloads: 1,
        credits: found,
      });
    });
  }
});

/**
 * A client as an older public Scala client is written: its login posted as JSON text under a
 * form Content-Type (its HTTP library's default), `view_name` in its searches, a download start
 * it accepts only as a 202 with an integer id, `started`/`running` until `completed`, and result
 * URLs as strings. Returns the records of every file.
 */
async function olderClient(v4Url: string, email: string, password: string): Promise<number> {
  const login = await fetch(`${v4Url}/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: JSON.stringify({ email, password }),
  });
  if (login.status !== 200) throw new Error(`login answered ${login.status}`);
  const { token } = (await login.json()) as { token: string };
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const start = await fetch(`${v4Url}/properties/search`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      query: QUERY,
      view_name: 'property_flat_prices',
      format: 'JSON',
      download: true,
    }),
  });
  if (start.status !== 202) throw new Error(`a download start answered ${start.status}, not 202`);
  const { id } = (await start.json()) as { id: unknown };
  if (!Number.isInteger(id)) throw new Error(`no integer id: ${JSON.stringify(id)}`);
  for (let polls = 0; polls < 1000; polls++) {
    const res = await fetch(`${v4Url}/downloads/${id}`, { headers });
    const body = (await res.json()) as { status: string; results: unknown[] };
    if (body.status === 'completed') {
      let records = 0;
      for (const url of body.results) {
        if (typeof url !== 'string') throw new Error('a result that is not a URL string');
        const text = await (await fetch(url)).text();
        records += text.split('\n').filter((line) => line !== '').length;
      }
      return records;
    }
    if (body.status !== 'started' && body.status !== 'running')
      throw new Error(`unexpected download status ${body.status}`);
    await sleep(50);
  }
  throw new Error('the download never completed');
}

describe('an older client, written for a 202 and integer ids', () => {
  test('completes against --wire real, buying one download; the live forms are not its own', async () => {
    const real = await EmulatorHarness.start({
      wire: 'real',
      scale: 0.05,
      queueMs: 200,
      rate: 1_000,
      fileRecords: 60,
    });
    try {
      const { email, password } = real.credentials;
      assert.equal(await olderClient(real.v4Url, email, password), found);
      assert.equal(real.emulator.context.state.downloads.length, 1);
      assert.equal(real.emulator.context.state.account.used.property, found);
    } finally {
      await real.close();
    }
    // The guides' clients check for a 200, so the default is a 200; this client wants a 202.
    await emu.reset();
    const { email, password } = emu.credentials;
    await assert.rejects(olderClient(emu.v4Url, email, password), /answered 200, not 202/);
  });
});
