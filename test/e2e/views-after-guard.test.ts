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

/**
 * A run changes the account's views only for a job that is about to buy with them: a declared
 * view is created or updated after the job's schema contract and the credit guard passed, just
 * before its download starts, and never for a job the run refuses. Before, every view was synced
 * first, so a frozen contract failed the job after its view had been changed on the service.
 */

const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.05, fileRecords: 200 });
  dir = tempDir('sluice-views-guard-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

function serviceView(name: string): string[] | undefined {
  return harness.emulator.context.state.views.get(name)?.fields;
}

async function run(file: string) {
  const result = await runCli(
    ['run', file, '--json', '--no-progress'],
    emulatorEnv(harness),
    undefined,
    harness.clock(),
  );
  return { ...result, summary: result.stdout ? JSON.parse(result.stdout) : undefined };
}

function job(name: string, view: string, extra = ''): string {
  return `  ${name}:
    type: properties
    query: 'province:TX'
    records: 30
    view: ${view}
    nested: json
${extra}    ${POLL}
`;
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  const pipeline = (t: TestTarget, name: string, body: string) =>
    writePipeline(dir, `${kind}-${name}`, `${pipelineHead(name, t.destinationYaml)}${body}`);

  describe(`views change only for jobs that buy, on ${kind}`, { skip: reason }, () => {
    test('a frozen contract fails the job and leaves its view on the service as it was', async () => {
      const t = await target('views-freeze');
      const body = (fields: string, contract: string) =>
        `views:\n  v:\n    fields: [${fields}]\njobs:\n${job('homes', 'v', contract)}`;
      const first = await run(pipeline(t, 'views-freeze', body('id, address, city', '')));
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(first.summary.views.created, ['v']);
      assert.deepEqual(serviceView('v'), ['id', 'address', 'city']);

      const frozen = pipeline(
        t,
        'views-freeze',
        body('id, address, city, yearBuilt', '    schema: { new_columns: freeze }\n'),
      );
      const plan = await runCli(['plan', frozen, '--json'], emulatorEnv(harness));
      assert.deepEqual(JSON.parse(plan.stdout).views.update, [], 'plan: no view would change');
      const refused = await run(frozen);
      assert.equal(refused.code, 2, refused.stderr);
      assert.equal(refused.summary.jobs[0].error.code, 'SLUICE_SCHEMA_CONTRACT');
      assert.deepEqual(refused.summary.views, { created: [], updated: [], unchanged: [] });
      assert.doesNotMatch(refused.stderr, /updated view v/);
      assert.deepEqual(serviceView('v'), ['id', 'address', 'city'], 'the account unchanged');
    });

    test('jobs at once: a refused job leaves its new view unmade; the job that buys makes its own before its download', async () => {
      const t = await target('views-guard');
      const file = pipeline(
        t,
        'views-guard',
        `views:
  bought:
    fields: [id, address, city]
  refused:
    fields: [id, city]
jobs:
${job('first', 'bought')}${job('second', 'refused', '    max_credits: 1\n')}`,
      );
      const plan = await runCli(['plan', file, '--json'], emulatorEnv(harness));
      assert.deepEqual(JSON.parse(plan.stdout).views.create, ['bought']);

      const from = (await harness.requests()).length;
      const result = await run(file);
      // The first job spent before the second was refused: exit 4 (done with less than asked).
      assert.equal(result.code, 4, result.stdout + result.stderr);
      assert.deepEqual(
        result.summary.jobs.map((j: { job: string; status: string }) => [j.job, j.status]),
        [
          ['first', 'loaded'],
          ['second', 'refused'],
        ],
      );
      assert.deepEqual(result.summary.views.created, ['bought']);
      assert.deepEqual(serviceView('bought'), ['id', 'address', 'city']);
      assert.equal(serviceView('refused'), undefined, 'never made for a refused job');

      // The view was made after the first job's count and before its download started.
      const log = (await harness.requests()).slice(from);
      const made = log.findIndex((r) => r.method === 'POST' && r.path === '/v4/views');
      const searches = log
        .map((r, i) => ({ r, i }))
        .filter(({ r }) => r.path === '/v4/properties/search');
      const started = searches.find(({ r }) => r.sent?.download === true);
      assert.ok(made >= 0 && started, 'a view made, a download started');
      assert.ok(searches[0]!.i < made, 'counted first');
      assert.ok(made < started.i, 'the view is in step before the download starts');
      assert.equal(started.r.sent?.view, 'bought');
      assert.equal(searches[0]!.r.sent?.view, undefined, 'the count needs no view');
    });
  });
}
