import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { Clock } from '../../src/pipeline/clock.js';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';
import { creditsUsed, downloadsByType, startRun } from '../helpers/runs.js';

/**
 * A run key names one unit of work: the pipeline and its selected jobs. Under one key, a run of
 * the same jobs that ended is replayed, and marked as a replay (it bought nothing now); any other
 * selection runs what the key's runs have not loaded, never buying a loaded job again. `--wait`
 * finds what the run it waited for did in the same way.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({
    scale: 0.5,
    fileRecords: 50,
    queueMs: 300,
    rate: 5000,
    churn: 0,
  });
  dir = tempDir('sluice-keys-');
});
after(() => harness.close());
/**
 * One clock for the runs of a test: each moves the emulator's time as it sleeps, and runs
 * recorded later must not start earlier (a new clock would start again from the real time).
 */
let clock: Clock;
beforeEach(async () => {
  await harness.reset();
  clock = harness.clock();
});

const POLL = 'poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }';

const HOMES = `  homes:
    type: properties
    query: 'province:TX'
    records: 100
    format: csv
    ${POLL}
`;
const SHOPS = `  shops:
    type: businesses
    query: '*'
    records: 100
    ${POLL}
`;
const GOODS = `  goods:
    type: products
    query: '*'
    records: 100
    format: csv
    ${POLL}
`;

const KEY = ['--run-key', '2026-11-27'];

interface Job {
  job: string;
  status: string;
  message?: string;
  credits: Record<string, number>;
}

async function runJson(file: string, args: string[] = []) {
  const result = await runCli(
    ['run', file, '--json', '--no-progress', ...args],
    emulatorEnv(harness),
    undefined,
    clock,
  );
  const summary = JSON.parse(result.stdout);
  return { ...result, summary, jobs: (summary.jobs ?? []) as Job[] };
}

const statuses = (jobs: Job[]) => jobs.map((j) => [j.job, j.status]);

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  const pipeline = (t: TestTarget, name: string, jobs: string) =>
    writePipeline(dir, `${kind}-${name}`, `${pipelineHead(name, t.destinationYaml)}jobs:\n${jobs}`);
  const rows = async (t: TestTarget, table: string) =>
    Number((await t.one<{ n: number }>(`select count(*) as n from ${table}`)).n);

  describe(`run keys on ${kind}`, { skip: reason }, () => {
    test('a run key names its selected jobs: another job under the same key is loaded, never answered with the first job summary', async () => {
      const t = await target('unit');
      const file = pipeline(t, 'unit', HOMES + SHOPS + GOODS);
      const homes = await runJson(file, ['--job', 'homes', ...KEY]);
      assert.equal(homes.code, 0, homes.stderr);
      const shops = await runJson(file, ['--job', 'shops', ...KEY]);
      assert.equal(shops.code, 0, shops.stderr);
      assert.notEqual(shops.summary.run_id, homes.summary.run_id, 'a run of its own');
      assert.deepEqual(statuses(shops.jobs), [['shops', 'loaded']]);
      assert.equal(await rows(t, 'shops'), 100, 'the shops table is loaded');
      assert.equal(shops.summary.replayed, false);
      assert.deepEqual(downloadsByType(harness), { properties: 1, businesses: 1 });

      // Every job under the key: the two the key's runs loaded are skipped, the third runs.
      const all = await runJson(file, KEY);
      assert.equal(all.code, 0, all.stderr);
      assert.deepEqual(statuses(all.jobs), [
        ['homes', 'skipped'],
        ['shops', 'skipped'],
        ['goods', 'loaded'],
      ]);
      assert.match(all.jobs[0]!.message!, /under run key '2026-11-27': not downloaded again/);
      assert.deepEqual(downloadsByType(harness), { properties: 1, businesses: 1, products: 1 });
      for (const table of ['homes', 'shops', 'goods']) {
        assert.equal(await rows(t, table), 100, `${table} loaded once`);
      }

      // Each unit that ended is replayed: the whole pipeline's run, and the first job's.
      const again = await runJson(file, KEY);
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.summary.replayed, true);
      assert.equal(again.summary.original.run_id, all.summary.run_id);
      const first = await runJson(file, ['--job', 'homes', ...KEY]);
      assert.equal(first.summary.replayed, true);
      assert.equal(first.summary.original.run_id, homes.summary.run_id);
      assert.deepEqual(downloadsByType(harness), { properties: 1, businesses: 1, products: 1 });
    });

    test('a file that gained a job after its key ran runs the new job only; a job changed since runs again', async () => {
      const t = await target('gained');
      const file = pipeline(t, 'gained', HOMES);
      assert.equal((await runJson(file, KEY)).code, 0);
      pipeline(t, 'gained', HOMES + SHOPS);
      const gained = await runJson(file, KEY);
      assert.equal(gained.code, 0, gained.stderr);
      assert.deepEqual(statuses(gained.jobs), [
        ['homes', 'skipped'],
        ['shops', 'loaded'],
      ]);
      assert.equal(gained.summary.replayed, false);
      assert.deepEqual(downloadsByType(harness), { properties: 1, businesses: 1 });
      assert.equal(await rows(t, 'shops'), 100);

      // What the key asks for changed: the changed job is work not done yet.
      pipeline(t, 'gained', HOMES.replace('records: 100', 'records: 60') + SHOPS);
      const changed = await runJson(file, KEY);
      assert.equal(changed.code, 0, changed.stderr);
      assert.deepEqual(statuses(changed.jobs), [
        ['homes', 'loaded'],
        ['shops', 'skipped'],
      ]);
      assert.deepEqual(downloadsByType(harness), { properties: 2, businesses: 1 });
    });

    test('a replay is marked: replayed, no credits spent now, the original run and its figures under original, and a line that says so', async () => {
      const t = await target('replay');
      const file = pipeline(t, 'replay', HOMES);
      const first = await runJson(file, KEY);
      assert.equal(first.code, 0, first.stderr);
      assert.equal(first.summary.replayed, false);
      const spent = creditsUsed(harness);
      assert.deepEqual(first.summary.credits, { property: 100 });

      const replay = await runJson(file, KEY);
      assert.equal(replay.code, 0, replay.stderr);
      const s = replay.summary;
      assert.equal(s.replayed, true);
      assert.deepEqual(s.credits, {}, 'this command spent nothing');
      assert.deepEqual(s.jobs, [], 'and ran no job');
      assert.equal(s.status, 'succeeded');
      assert.equal(s.original.run_id, first.summary.run_id);
      assert.equal(s.original.reason, 'run_key');
      assert.equal(s.original.run_key, '2026-11-27');
      assert.equal(s.original.status, 'succeeded');
      assert.deepEqual(s.original.credits, first.summary.credits);
      assert.deepEqual(s.original.jobs, first.summary.jobs);
      assert.deepEqual(creditsUsed(harness), spent, 'the service charged nothing more');

      const text = await runCli(
        ['run', file, '--no-progress', ...KEY],
        emulatorEnv(harness),
        undefined,
        clock,
      );
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /replayed in [\d.]+s \(0 credits spent now\)/);
      assert.match(
        text.stdout,
        new RegExp(
          `replay of run ${first.summary.run_id} \\(run key '2026-11-27'; succeeded at [^)]+\\): nothing to do`,
        ),
      );
      assert.match(text.stdout, /credits spent then/);
      assert.equal(await rows(t, 'homes'), 100);

      // A run of a sluice before state version 4 recorded no jobs: it is judged by those it ran.
      await t.exec('update _sluice_runs set selected_jobs = null');
      const older = await runJson(file, KEY);
      assert.equal(older.summary.replayed, true, older.stderr);
      assert.equal(older.summary.original.run_id, first.summary.run_id);
      assert.deepEqual(creditsUsed(harness), spent);
    });

    test('run --wait after another run of the pipeline finds its work done: a replay, nothing bought twice', async () => {
      const t = await target('wait');
      const file = pipeline(t, 'wait', HOMES + SHOPS);
      // Two processes, as two schedulers start them: the other run holds the pipeline (and,
      // DuckDB, its database) for a while past its first poll, long enough for the second to
      // log in and find it held on a busy machine.
      const other = startRun(file, harness, {
        checkpoint: 'polling:homes',
        env: { SLUICE_CHECKPOINT_WAIT: '5000' },
      });
      await other.reached;
      const waiting = startRun(file, harness, { args: ['--wait'] });
      const done = await other.finished;
      assert.equal(done.code, 0, done.stderr);
      const waited = await waiting.finished;
      assert.equal(waited.code, 0, waited.stderr);
      assert.match(waited.stderr, /waiting for it to end/, 'the second run waited');
      assert.deepEqual(downloadsByType(harness), { properties: 1, businesses: 1 });
      assert.equal(await rows(t, 'homes'), 100);
      assert.equal(await rows(t, 'shops'), 100);
      const s = JSON.parse(waited.stdout);
      assert.equal(s.replayed, true, waited.stderr);
      assert.equal(s.original.reason, 'waited');
      assert.equal(s.original.run_id, JSON.parse(done.stdout).run_id);
      assert.match(waited.stderr, /the run this command waited for/);
    });

    test('run --wait after a run of other jobs skips what that run loaded and runs the rest', async () => {
      const t = await target('wait-other');
      const file = pipeline(t, 'wait-other', HOMES + SHOPS);
      const other = startRun(file, harness, {
        checkpoint: 'polling:homes',
        env: { SLUICE_CHECKPOINT_WAIT: '5000' },
        args: ['--job', 'homes'],
      });
      await other.reached;
      const waiting = startRun(file, harness, { args: ['--wait'] });
      assert.equal((await other.finished).code, 0);
      const waited = await waiting.finished;
      assert.equal(waited.code, 0, waited.stderr);
      assert.match(waited.stderr, /waiting for it to end/, 'the second run waited');
      const s = JSON.parse(waited.stdout);
      assert.deepEqual(statuses(s.jobs), [
        ['homes', 'skipped'],
        ['shops', 'loaded'],
      ]);
      assert.equal(s.replayed, false);
      assert.match(s.jobs[0].message, /ended while this run waited for it/);
      assert.deepEqual(downloadsByType(harness), { properties: 1, businesses: 1 });
      assert.equal(await rows(t, 'homes'), 100);
    });
  });
}
