import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * `-v`/`-vv`/`--log-level debug` add what an on-call engineer needs: each request to the service
 * (method, path and query, status, milliseconds), the credit guard's arithmetic, each result
 * file's fetch (bytes) and load (rows, rejects); and never a secret: not the password, the API
 * token, a session token or a signed URL's signature.
 */

let h: EmulatorHarness;
let dir: string;

before(async () => {
  h = await EmulatorHarness.start({ scale: 0.05, fileRecords: 20 });
  dir = tempDir();
});
after(() => h.close());

function pipeline(name: string, api: 'v4' | 'v3'): string {
  return writePipeline(
    dir,
    name,
    `${pipelineHead(name, `sqlite:${join(dir, `${name}.sqlite`)}`, api)}budget: { property: 100000/month }
jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 50
    max_credits: 1000
    poll: { interval: 50ms, timeout: 60s }
`,
  );
}

/** Every secret the run could have met: the emulator's, and the session tokens it gave. */
function assertNoSecret(text: string): void {
  const { password, token } = h.credentials;
  assert.ok(!text.includes(password), 'the password is never logged');
  assert.ok(!text.includes(token), 'the API token is never logged');
  for (const session of h.emulator.context.state.tokens.keys()) {
    assert.ok(!text.includes(session), 'a session token is never logged');
  }
  assert.doesNotMatch(text, /Signature=(?!\[redacted\])/, "a signed URL's signature is redacted");
}

test('-vv on a v4 run: requests, the guard, each file fetched and loaded; no secret', async () => {
  const r = await runCli(['run', pipeline('debug4', 'v4'), '-vv', '--no-progress'], emulatorEnv(h));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /DEBUG: POST \/v4\/auth -> 200 in \d+ ms/);
  assert.match(r.stderr, /DEBUG: POST \/v4\/properties\/search -> 200 in \d+ ms/);
  assert.match(r.stderr, /DEBUG: GET \/v4\/downloads\/\w+ -> 200 in \d+ ms/);
  assert.match(
    r.stderr,
    /DEBUG: credit guard: \d+ found; 50 to buy \(records: 50\); needs 50 property; account has [\d,]+ property left; max_credits 1,000; budget property\/month 100,000 of 100,000 left: pass/,
  );
  assert.match(r.stderr, /DEBUG: GET \/files\/\S+\?\S*Signature=\[redacted\] -> 200 in \d+ ms/);
  assert.match(r.stderr, /DEBUG: fetched \S+_0\.\w+ of download \w+: [\d,]+ bytes/);
  assert.match(r.stderr, /DEBUG: loading \S+_1\.\w+: fetching and parsing/);
  assert.match(r.stderr, /INFO: loaded \S+_2\.\w+: 10 rows/);
  assertNoSecret(r.stderr + r.stdout);
});

test('--log-level debug on v3 and with --log-format json: the same lines, no token', async () => {
  const env = emulatorEnv(h, { SLUICE_API_URL: h.v3Url });
  const file = pipeline('debug3', 'v3');
  const r = await runCli(['run', file, '--log-level', 'debug', '--no-progress'], env);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /DEBUG: GET \/v3\/data\/properties\?q=province%3ATX\S* -> 200 in \d+ ms/);
  assertNoSecret(r.stderr + r.stdout);

  const json = await runCli(
    ['count', 'properties', 'city:Austin', '-v', '--log-format', 'json'],
    env,
  );
  assert.equal(json.code, 0, json.stderr);
  const lines = json.stderr
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const request = lines.find((l) => l.client === 'request');
  assert.ok(request, json.stderr);
  assert.equal(request.level, 'debug');
  assert.equal(request.method, 'GET');
  assert.equal(request.status, 200);
  assert.equal(typeof request.ms, 'number');
  assertNoSecret(json.stderr);
});

test('without -v: no debug line', async () => {
  const r = await runCli(['count', 'properties', 'city:Austin'], emulatorEnv(h));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
});
