import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';
import { creditsUsed } from '../helpers/runs.js';

/**
 * The service's real-time operations in pipeline files, on each destination: a `refresh:` step
 * (a targeted update) before the job whose records it refreshes, and a `scrape: true` job whose
 * records load into a table as a download's do. Both are under the credit guard, the budgets
 * and `plan`, recorded in the state tables (bought once, whatever fails when) and shown by
 * `status`.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ fileRecords: 200, churn: 0 });
  dir = tempDir('sluice-real-time-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';

const HOMES = `  homes:
    type: properties
    query: 'city:Austin'
    records: 300
    refresh: { records: 200 }
    ${POLL}
`;

const LISTINGS = (extra = '') => `  listings:
    type: businesses
    query: 'city:Austin'
    records: 40
    scrape: true
${extra}`;

function pipeline(t: TestTarget, name: string, jobs: string, extra = ''): string {
  return writePipeline(
    dir,
    `${t.kind}-${name}`,
    `${pipelineHead(name, t.destinationYaml)}${extra}jobs:\n${jobs}`,
  );
}

function cli(args: string[]) {
  return runCli(args, emulatorEnv(harness), undefined, harness.clock());
}

async function run(file: string, ...flags: string[]) {
  const out = await cli(['run', file, '--json', '--no-progress', ...flags]);
  return { ...out, summary: JSON.parse(out.stdout) };
}

const statuses = (summary: { jobs: { job: string; status: string }[] }) =>
  summary.jobs.map((j) => [j.job, j.status]);

const count = async (t: TestTarget, sql: string) =>
  Number((await t.one<{ n: number }>(`select count(*) as n from ${sql}`)).n);

function scrapes(): number {
  const used = creditsUsed(harness).business ?? 0;
  return used;
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`refresh steps and scrapes on ${kind}`, { skip: reason }, () => {
    test('a refresh runs before its job, a scrape loads into a table: rows, credits, state, plan and status', async () => {
      const t = await target('rt-basic');
      const file = pipeline(t, 'rt', `${HOMES}${LISTINGS()}`);
      // The service writes times to the second: a record refreshed within the second the test
      // started in is dated that second, before the test's own millisecond.
      const origin = new Date(
        Math.floor(harness.emulator.context.clock.now() / 1000) * 1000,
      ).toISOString();

      const plan = await cli(['plan', file]);
      assert.equal(plan.code, 0, plan.stdout + plan.stderr);
      assert.match(plan.stdout, /^homes\.refresh\s+1,115\s+200\s+200 property\s+.*pass$/m);
      assert.match(plan.stdout, /^homes\s+1,115\s+300\s+300 property\s+.*pass$/m);
      assert.match(plan.stdout, /^listings\s+\d[\d,]*\s+40\s+40 business\s+.*pass$/m);
      assert.match(
        plan.stdout,
        /homes\.refresh: a targeted update: .* before homes downloads them/,
      );

      const { code, summary, stderr } = await run(file);
      assert.equal(code, 0, JSON.stringify(summary) + stderr);
      assert.deepEqual(statuses(summary), [
        ['homes.refresh', 'refreshed'],
        ['homes', 'loaded'],
        ['listings', 'loaded'],
      ]);
      assert.deepEqual(summary.credits, { property: 500, business: 40 });
      assert.deepEqual(creditsUsed(harness), {
        business: 40,
        people: 0,
        product: 0,
        property: 500,
      });
      const state = harness.emulator.context.state;
      assert.equal(state.updates.length, 1);
      assert.equal(state.updates[0]!.num_records, 200);
      assert.equal(state.downloads.length, 1, 'the scrape is no download');

      assert.equal(await count(t, 'homes'), 300);
      assert.equal(await count(t, 'listings'), 40);
      // Refreshed before the download: the 200 records the update matched come dated by it.
      assert.equal(await count(t, `homes where "dateUpdated" >= '${origin}'`), 200);
      assert.equal(await count(t, `listings where "dateUpdated" >= '${origin}'`), 40);

      const rows = await t.all<{ job: string; kind: string | null; status: string; payload: null }>(
        'select job, kind, status, payload from _sluice_downloads order by job',
      );
      assert.deepEqual(
        rows.map((r) => [r.job, r.kind, r.status, r.payload]),
        [
          ['homes', null, 'loaded', null],
          ['homes.refresh', 'targeted_update', 'refreshed', null],
          ['listings', 'scrape', 'loaded', null],
        ],
      );
      const jobs = await t.all<{ job: string; status: string }>(
        'select job, status from _sluice_jobs order by job',
      );
      assert.deepEqual(
        jobs.map((j) => [j.job, j.status]),
        [
          ['homes', 'loaded'],
          ['homes.refresh', 'refreshed'],
          ['listings', 'loaded'],
        ],
      );

      const status = await cli(['status', file]);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /^Downloads, targeted updates and scrapes$/m);
      assert.match(status.stdout, /^homes\.refresh\s+targeted update\s+tu_\d+\s+refreshed\s/m);
      assert.match(status.stdout, /^listings\s+scrape\s+sc_\d+\s+loaded\s/m);
      assert.match(status.stdout, /^homes\s+download\s+\S+\s+loaded\s/m);
    });

    test('a scrape whose load fails keeps its answer: the next run loads it, buying nothing', async () => {
      const t = await target('rt-rejects');
      // Every record that has a yearBuilt is a reject: more than max_rejects fails the file.
      const job = (limit: number) => `  listings:
    type: properties
    query: 'city:Austin'
    records: 60
    scrape: true
    write: append
    columns: { yearBuilt: boolean }
    max_rejects: ${limit}
`;
      const failing = pipeline(t, 'rt-rejects', job(0));
      const first = await run(failing);
      assert.equal(first.code, 2, first.stdout + first.stderr);
      assert.equal(first.summary.jobs[0].error.code, 'SLUICE_TOO_MANY_REJECTS');
      assert.equal(creditsUsed(harness).property, 60);
      assert.equal(await count(t, 'listings'), 0, 'the file rolled back');
      const kept = await t.one<{ status: string; kept: number }>(
        'select status, length(payload) as kept from _sluice_downloads',
      );
      assert.ok(Number(kept.kept) > 0, 'the answer is kept');

      const raised = pipeline(t, 'rt-rejects', job(1000));
      const second = await run(raised);
      assert.equal(second.code, 0, second.stdout + second.stderr);
      assert.equal(second.summary.jobs[0].reattached, true);
      assert.deepEqual(second.summary.credits, {}, 'the first run paid');
      assert.equal(creditsUsed(harness).property, 60, 'bought once');
      const loaded = await count(t, 'listings');
      const rejects = await count(t, '_sluice_rejects');
      assert.ok(rejects > 0 && loaded > 0, `${loaded} loaded, ${rejects} rejected`);
      assert.equal(loaded + rejects, 60, 'every record a row or a reject');
    });

    test('a lost answer: the targeted update is found and adopted, the scrape is not bought twice', async () => {
      const t = await target('rt-lost');
      const file = pipeline(t, 'rt-lost', `${HOMES}${LISTINGS()}`);
      // The service does the work and the connection drops before the answer.
      await harness.faults([
        { match: 'POST /v4/targeted-updates', action: 'reset-after', times: 1 },
        { match: 'POST /v4/scrape', action: 'reset-after', times: 1 },
      ]);
      const first = await run(file);
      assert.equal(first.code, 1, first.stdout + first.stderr);
      assert.deepEqual(statuses(first.summary), [
        ['homes.refresh', 'failed'],
        ['homes', 'failed'],
        ['listings', 'failed'],
      ]);
      assert.match(first.summary.jobs[1].message, /its refresh step 'homes\.refresh' ended failed/);
      assert.equal(harness.emulator.context.state.updates.length, 1, 'the update was made');
      assert.equal(scrapes(), 40, 'and the scrape charged');

      const second = await run(file);
      assert.equal(second.code, 2, second.stdout + second.stderr);
      assert.deepEqual(statuses(second.summary), [
        ['homes.refresh', 'refreshed'],
        ['homes', 'loaded'],
        ['listings', 'failed'],
      ]);
      assert.equal(second.summary.jobs[0].reattached, true, 'the update was adopted');
      assert.equal(harness.emulator.context.state.updates.length, 1, 'not asked for again');
      assert.equal(second.summary.jobs[2].error.code, 'SLUICE_SCRAPE_UNANSWERED');
      assert.match(second.summary.jobs[2].error.message, /run with --fresh to scrape anew/);
      assert.equal(scrapes(), 40, 'the scrape was not bought twice');
      assert.equal(creditsUsed(harness).property, 500);

      const fresh = await run(file, '--fresh', '--job', 'listings');
      assert.equal(fresh.code, 0, fresh.stdout + fresh.stderr);
      assert.equal(scrapes(), 80, '--fresh: the user chose to buy it again');
      assert.equal(await count(t, 'listings'), 40);
    });

    test('an interrupted request is asked again only when nothing was charged', async () => {
      const t = await target('rt-unsent');
      const file = pipeline(t, 'rt-unsent', LISTINGS());
      // The request is recorded, and the service refuses it: nothing is charged.
      await harness.faults([{ match: 'POST /v4/scrape', action: '400', times: 1 }]);
      const first = await run(file);
      assert.equal(first.code, 2, first.stdout + first.stderr);
      assert.equal(scrapes(), 0);
      await harness.clearFaults();
      const second = await run(file);
      assert.equal(second.code, 0, second.stdout + second.stderr);
      assert.equal(scrapes(), 40, 'asked again, bought once');
      const attempts = await t.all<{ status: string }>(
        'select status from _sluice_downloads order by requested_at',
      );
      assert.deepEqual(
        attempts.map((a) => a.status),
        ['abandoned', 'loaded'],
      );
    });

    test('a refresh the budget refuses stops its job before anything is bought', async () => {
      const t = await target('rt-budget');
      const file = pipeline(t, 'rt-budget', HOMES, 'budget: { property: 100/month }\n');
      const plan = await cli(['plan', file]);
      assert.equal(plan.code, 3, plan.stdout + plan.stderr);
      assert.match(plan.stdout, /^homes\.refresh\s.*REFUSE$/m);
      const refused = await run(file);
      assert.equal(refused.code, 3, refused.stdout + refused.stderr);
      assert.deepEqual(statuses(refused.summary), [
        ['homes.refresh', 'refused'],
        ['homes', 'refused'],
      ]);
      assert.equal(refused.summary.jobs[0].error.code, 'SLUICE_BUDGET');
      assert.match(refused.summary.jobs[1].message, /not started: its refresh step/);
      assert.equal(creditsUsed(harness).property, 0);
      assert.equal(harness.emulator.context.state.updates.length, 0);
    });
  });
}
