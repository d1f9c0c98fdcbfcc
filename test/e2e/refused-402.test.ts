import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * The service's own refusal, HTTP 402 (credits exhausted), exits 3 wherever it comes: refused
 * before anything was spent, as the error table says (SLUICE_API_402), for `preview`, the
 * `downloads` commands and `run` (where the credit guard cannot tell: v3 has no account).
 */

let h: EmulatorHarness;
let dir: string;

before(async () => {
  h = await EmulatorHarness.start({ scale: 0.05, fileRecords: 100 });
  dir = tempDir();
});
after(() => h.close());
beforeEach(() => h.reset());

/** Runs a command that must be refused with 402: exit 3, in text and in JSON. */
async function refused(argv: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const text = await runCli(argv, env);
  assert.equal(text.code, 3, `sluice ${argv.join(' ')}: ${text.stdout}${text.stderr}`);
  assert.match(text.stderr, /402/);
  assert.doesNotMatch(text.stderr, /\n\s+at /, 'no stack trace');
  const json = await runCli([...argv, '--json'], env);
  assert.equal(json.code, 3);
  const doc = JSON.parse(json.stdout);
  assert.equal(doc.status, 'error');
  assert.equal(doc.error.code, 'SLUICE_API_402');
  assert.equal(doc.error.retryable, false);
  return text.stderr;
}

describe('a 402 from the service exits 3', () => {
  test('preview, with the credits of its data type used up', async () => {
    await h.setCredits({ business_credits_allotted: 10, business_credits_used: 10 });
    const stderr = await refused(['preview', 'businesses', '*', '--records', '2'], emulatorEnv(h));
    assert.match(stderr, /Not enough business credits/);
  });

  test('downloads list, show and fetch, refused by the service', async () => {
    // A service may refuse every call of an account whose plan has run out.
    const env = emulatorEnv(h);
    for (const argv of [
      ['downloads', 'list'],
      ['downloads', 'show', 'any-id'],
      ['downloads', 'fetch', 'any-id', '--out', join(dir, 'fetched')],
    ]) {
      await h.faults([{ match: 'GET /v4/downloads', action: '402', times: 2 }]);
      await refused(argv, env);
      await h.clearFaults();
    }
  });

  test('run: a job the service refuses is refused, nothing is bought, the run exits 3', async () => {
    const db = join(dir, 'v3-refused.sqlite');
    const file = writePipeline(
      dir,
      'v3-refused',
      `${pipelineHead('v3-refused', `sqlite:${db}`, 'v3')}jobs:
  goods:
    type: products
    query: '*'
    records: 50
    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
`,
    );
    // v3 has no account operation: the guard cannot know the credits are used up.
    await h.setCredits({ product_credits_allotted: 10, product_credits_used: 10 });
    const env = emulatorEnv(h, { SLUICE_API_URL: h.v3Url });
    const run = await runCli(['run', file, '--json', '--no-progress'], env, undefined, h.clock());
    assert.equal(run.code, 3, run.stdout + run.stderr);
    const summary = JSON.parse(run.stdout);
    assert.equal(summary.status, 'refused');
    assert.equal(summary.jobs[0].status, 'refused');
    assert.equal(summary.jobs[0].error.code, 'SLUICE_API_402');
    assert.equal(h.emulator.context.state.downloads.length, 0, 'nothing bought');
  });
});
