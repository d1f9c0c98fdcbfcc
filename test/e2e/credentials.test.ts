import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { EmulatorHarness } from '../helpers/emulator.js';
import { runCli, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * The credentials sluice takes, as customers hold them: v4 email and password, the v4 API token
 * alone (the token from the web portal, sent as the bearer token), and the v3 API token. The CLI
 * and `sluice run` with only the token on v4; a refused token exits 2 saying so.
 */

let h: EmulatorHarness;
let dir: string;

before(async () => {
  h = await EmulatorHarness.start({ scale: 0.05, fileRecords: 100 });
  dir = tempDir();
});
after(() => h.close());
beforeEach(() => h.reset());

/** The environment of a customer who holds only the API token. */
function tokenEnv(token = h.credentials.token): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, SLUICE_API_URL: h.v4Url, SLUICE_API_TOKEN: token };
}

async function logins(): Promise<number> {
  return (await h.requests()).filter((r) => r.method === 'POST' && r.path === '/v4/auth').length;
}

describe('v4 with only the API token', () => {
  test('the commands work, with no login', async () => {
    const account = await runCli(['account', '--json'], tokenEnv());
    assert.equal(account.code, 0, account.stderr);
    assert.equal(JSON.parse(account.stdout).email, h.credentials.email);
    const count = await runCli(['count', 'businesses', 'city:Austin'], tokenEnv());
    assert.equal(count.code, 0, count.stderr);
    assert.match(count.stdout, /^\d+\n$/);
    const flag = await runCli(['health', '--url', h.v4Url, '--token', h.credentials.token], {
      PATH: process.env.PATH,
    });
    assert.equal(flag.code, 0, flag.stderr);
    assert.equal(await logins(), 0);
  });

  test('a wrong or expired token: exit 2, saying so, and no login', async () => {
    const wrong = 'an-old-portal-token';
    const r = await runCli(['account'], tokenEnv(wrong));
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /401/);
    assert.match(r.stderr, /the API token was refused: it is wrong or has expired/);
    assert.ok(!r.stderr.includes(wrong), 'the token is never printed');
    const json = await runCli(['account', '--json'], tokenEnv(wrong));
    const doc = JSON.parse(json.stdout);
    assert.equal(doc.error.code, 'SLUICE_API_401');
    assert.equal(doc.error.retryable, false);
    assert.equal(await logins(), 0);
  });

  test('sluice run with `token:` in the source loads, with no login', async () => {
    const db = join(dir, 'token-run.sqlite');
    const file = writePipeline(
      dir,
      'token-run',
      `version: 1
name: token-run
source:
  api: v4
  url: \${SLUICE_API_URL}
  token: \${SLUICE_API_TOKEN}
destination: sqlite:${db}
jobs:
  shops:
    type: businesses
    query: '*'
    records: 150
    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
`,
    );
    const validate = await runCli(['validate', file], {});
    assert.equal(validate.code, 0, validate.stderr);
    const run = await runCli(['run', file, '--no-progress'], tokenEnv(), undefined, h.clock());
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const sqlite = new Database(db, { readonly: true });
    try {
      const { n } = sqlite.prepare('select count(*) as n from shops').get() as { n: number };
      assert.equal(n, 150);
    } finally {
      sqlite.close();
    }
    assert.equal(await logins(), 0);
  });
});
