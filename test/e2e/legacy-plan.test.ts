import { strict as assert } from 'node:assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { destinationKinds, skipReason, targetFactory } from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * Accounts on a legacy plan: no allotment per data type, one total counter
 * (`num_credits_used`). The credit guard cannot know what is left: `plan` and `run` say so,
 * max_credits still refuses, and the service's own refusal (402) stops a job with exit 3.
 * Against the emulator's legacy plan, and against a small server whose account has no per-type
 * fields at all.
 */

let harness: EmulatorHarness;
let dir: string;
const TOTAL = 1000;

before(async () => {
  harness = await EmulatorHarness.start({
    scale: 0.05,
    fileRecords: 200,
    plan: 'legacy',
    totalCredits: TOTAL,
  });
  dir = tempDir();
});
after(() => harness.close());
beforeEach(() => harness.reset());

function pipeline(name: string, destinationYaml: string, extra = ''): string {
  return writePipeline(
    dir,
    name,
    `${pipelineHead(name, destinationYaml)}jobs:
  homes:
    type: properties
    query: '*'
    records: 300
    format: csv
    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
${extra}  shops:
    type: businesses
    query: '*'
    records: 200
    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
`,
  );
}

const totalUsed = () => harness.emulator.context.state.account.total.used;

describe('sluice account on a legacy plan', () => {
  test('shows the total used, not a table of empty allotments', async () => {
    await harness.control('PUT', 'plan', { num_credits_used: 12_345 });
    const text = await runCli(['account'], emulatorEnv(harness));
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Legacy plan: one total for every data type;/m);
    assert.match(text.stdout, /^Total used: 12,345 credits$/m);
    assert.doesNotMatch(text.stdout, /allotted/);
    const json = await runCli(['account', '--json'], emulatorEnv(harness));
    const doc = JSON.parse(json.stdout);
    assert.equal(doc.plan, 'legacy');
    assert.equal(doc.total_used, 12_345);
  });
});

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`a legacy plan runs pipelines on ${kind}`, { skip: reason }, () => {
    test('plan says the verdict is unknown, with the total used; run says so and loads', async () => {
      const t = await target('legacy-run');
      const file = pipeline(`${kind}-legacy-run`, t.destinationYaml);
      await harness.control('PUT', 'plan', { num_credits_used: 100 });

      const plan = await runCli(['plan', file], emulatorEnv(harness));
      assert.equal(plan.code, 0, plan.stdout + plan.stderr);
      assert.match(
        plan.stdout,
        /^homes .*unknown \(legacy plan, 100 used\)\s+unknown: legacy plan$/m,
      );
      assert.match(plan.stdout, /^shops .*unknown: legacy plan$/m);
      assert.match(plan.stdout, /the account is on a legacy plan \(100 credits used in all\)/);
      assert.doesNotMatch(plan.stdout, /REFUSE/);
      const planJson = JSON.parse(
        (await runCli(['plan', file, '--json'], emulatorEnv(harness))).stdout,
      );
      assert.equal(planJson.guard, 'unknown');
      assert.deepEqual(planJson.account, { plan: 'legacy', total_used: 100 });
      assert.deepEqual(
        planJson.jobs.map((j: { verdict: string; remaining?: unknown }) => [
          j.verdict,
          j.remaining,
        ]),
        [
          ['unknown', undefined],
          ['unknown', undefined],
        ],
      );

      const run = await runCli(
        ['run', file, '--no-progress'],
        emulatorEnv(harness),
        undefined,
        harness.clock(),
      );
      assert.equal(run.code, 0, run.stdout + run.stderr);
      assert.match(
        run.stderr,
        /the account is on a legacy plan \(100 credits used in all\): the service does not say what is left, so the guard checked max_credits only/,
      );
      assert.equal(await count(t, 'homes'), 300);
      assert.equal(await count(t, 'shops'), 200);
      assert.equal(totalUsed(), 600);
    });

    test("the service's 402 stops a job with exit 3, and max_credits still refuses", async () => {
      const t = await target('legacy-402');
      const file = pipeline(`${kind}-legacy-402`, t.destinationYaml, '    max_credits: 250\n');
      // homes (300 records) is over its max_credits of 250: refused before anything is asked.
      await harness.control('PUT', 'plan', { num_credits_used: TOTAL - 150 });
      const run = await runCli(
        ['run', file, '--json', '--no-progress'],
        emulatorEnv(harness),
        undefined,
        harness.clock(),
      );
      assert.equal(run.code, 3, run.stdout + run.stderr);
      const summary = JSON.parse(run.stdout);
      assert.equal(summary.status, 'refused');
      const [homes, shops] = summary.jobs;
      assert.equal(homes.status, 'refused');
      assert.equal(homes.error.code, 'SLUICE_CREDIT_GUARD');
      assert.match(homes.error.message, /max_credits of 250/);
      // shops (200) passes the guard, which cannot know the 150 left; the service refuses it.
      assert.equal(shops.status, 'refused');
      assert.equal(shops.error.code, 'SLUICE_API_402');
      assert.match(shops.error.message, /needs 200, 150 remain on the plan/);
      assert.equal(harness.emulator.context.state.downloads.length, 0, 'nothing started');
      assert.equal(totalUsed(), TOTAL - 150, 'nothing spent');
      // The refused request is closed: the next run does not look for it on the service.
      const status = JSON.parse(
        (await runCli(['status', file, '--json'], emulatorEnv(harness))).stdout,
      );
      assert.deepEqual(
        status.downloads.map((d: { job: string; status: string; download_id: unknown }) => [
          d.job,
          d.status,
          d.download_id,
        ]),
        [['shops', 'abandoned', null]],
      );
    });
  });
}

async function count(t: { one<T>(sql: string): Promise<T> }, table: string): Promise<number> {
  return (await t.one<{ n: number }>(`select count(*) as n from ${table}`)).n;
}

describe('an account with no per-type fields at all', () => {
  let server: Server;
  /** What GET /v4/account answers. */
  let account: Record<string, unknown>;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    server = createServer((req, res) => {
      const send = (status: number, body: unknown) => {
        const text = JSON.stringify(body);
        res.writeHead(status, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        });
        res.end(text);
      };
      // Bodies are read to the end before answering, as a server does.
      req.resume();
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/v4/auth') return send(200, { token: 't1' });
        if (req.headers.authorization !== 'Bearer t1') return send(401, { error: 'no token' });
        if (req.method === 'GET' && req.url === '/v4/account') return send(200, account);
        if (req.method === 'POST' && req.url === '/v4/properties/search') {
          return send(200, { num_found: 42, total_cost: 0, records: [] });
        }
        send(404, { error: 'not found' });
      });
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

  const file = () =>
    writePipeline(
      dir,
      'bare-account',
      `${pipelineHead('bare-account', `sqlite:${dir}/bare.sqlite`)}jobs:
  homes:
    type: properties
    query: 'city:Austin'
`,
    );

  test('with a total counter: a legacy plan, and the guard says it cannot tell', async () => {
    account = { email: 'ann@example.com', num_credits_used: 777 };
    const shown = await runCli(['account'], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^Total used: 777 credits$/m);
    const plan = await runCli(['plan', file(), '--json'], env);
    assert.equal(plan.code, 0, plan.stdout + plan.stderr);
    const doc = JSON.parse(plan.stdout);
    assert.equal(doc.guard, 'unknown');
    assert.equal(doc.jobs[0].verdict, 'unknown');
    assert.deepEqual(doc.jobs[0].needed, { property: 42 });
    assert.deepEqual(doc.jobs[0].legacy, { total_used: 777 });
  });

  test('without one: an account with nothing left, which the guard refuses', async () => {
    account = { email: 'ann@example.com' };
    const plan = await runCli(['plan', file()], env);
    assert.equal(plan.code, 3, plan.stdout + plan.stderr);
    assert.match(plan.stdout, /needs 42 property credits, 0 remain/);
    const shown = JSON.parse((await runCli(['account', '--json'], env)).stdout);
    assert.equal(shown.plan, 'per-type');
    assert.equal(shown.total_used, null);
  });
});
