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
import { creditsUsed, downloadsByType, stopAt } from '../helpers/runs.js';

/**
 * `sluice run a.yaml b.yaml c.yaml` is one command: run again after it stopped during c (a
 * failure, a signal), the same command finishes it. The files that had finished are replayed,
 * never bought or loaded again; c runs with its own resume rule. A command that finished makes
 * the next one new, and `--fresh` starts anew.
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
  dir = tempDir('sluice-files-');
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

/** Three pipelines, one job each, every table appended to: a second load would double it. */
const JOBS = {
  a: ['homes', 'properties', "'province:TX'", 'csv'],
  b: ['shops', 'businesses', "'*'", 'json'],
  c: ['goods', 'products', "'*'", 'csv'],
} as const;
const ONE_EACH = { properties: 1, businesses: 1, products: 1 };

interface Run {
  pipeline: string;
  status: string;
  replayed: boolean;
  run_id: string;
  credits: Record<string, number>;
  original?: { run_id: string; reason: string; batch_id: string | null };
}

/** The three files, into one destination (as several pipelines of a team often share one). */
function files(kind: string, t: TestTarget, name: string): string[] {
  return Object.entries(JOBS).map(([file, [job, type, query, format]]) =>
    writePipeline(
      dir,
      `${kind}-${name}-${file}`,
      `${pipelineHead(`${name}-${file}`, t.destinationYaml)}jobs:
  ${job}:
    type: ${type}
    query: ${query}
    records: 100
    format: ${format}
    ${POLL}
`,
    ),
  );
}

async function runAll(paths: string[], args: string[] = [], at: Clock = clock) {
  const result = await runCli(
    ['run', ...paths, '--json', '--no-progress', ...args],
    emulatorEnv(harness),
    undefined,
    at,
  );
  const doc = JSON.parse(result.stdout) as { exit_code: number; runs: Run[] };
  return { ...result, runs: doc.runs };
}

async function rowsOf(t: TestTarget): Promise<number[]> {
  const out: number[] = [];
  for (const table of ['homes', 'shops', 'goods']) {
    out.push(Number((await t.one<{ n: number }>(`select count(*) as n from ${table}`)).n));
  }
  return out;
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`several files in one command on ${kind}`, { skip: reason }, () => {
    test('a command whose third file failed, run again, replays the first two and buys each file once', async () => {
      const t = await target('failed');
      const paths = files(kind, t, 'failed');
      // The service refuses every request about products: c fails, as a normal failure does.
      await harness.faults([{ match: 'POST /v4/products', action: '422', times: 1000 }]);
      const first = await runAll(paths);
      assert.equal(first.code, 2, first.stderr);
      assert.deepEqual(
        first.runs.map((r) => r.status),
        ['succeeded', 'succeeded', 'failed'],
      );
      await harness.clearFaults();
      const spent = creditsUsed(harness);

      const again = await runAll(paths);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(downloadsByType(harness), ONE_EACH, 'three downloads, not five');
      assert.deepEqual(await rowsOf(t), [100, 100, 100], 'every row once');
      assert.deepEqual(
        again.runs.map((r) => [r.status, r.replayed]),
        [
          ['succeeded', true],
          ['succeeded', true],
          ['succeeded', false],
        ],
      );
      for (const [i, run] of again.runs.slice(0, 2).entries()) {
        assert.equal(run.original?.run_id, first.runs[i]!.run_id, 'the earlier run of the file');
        assert.equal(run.original?.reason, 'batch');
        assert.deepEqual(run.credits, {}, 'nothing spent now');
      }
      assert.deepEqual(
        creditsUsed(harness),
        { ...spent, product: (spent.product ?? 0) + 100 },
        'only the third file was paid for',
      );

      // The command finished: the same command again is the next one, and runs every file.
      const next = await runAll(paths);
      assert.equal(next.code, 0, next.stderr);
      assert.deepEqual(
        next.runs.map((r) => r.replayed),
        [false, false, false],
      );
      assert.deepEqual(downloadsByType(harness), { properties: 2, businesses: 2, products: 2 });
    });

    test('a command stopped by SIGTERM during its third file, run again: the first two are not bought again', async () => {
      const t = await target('sigterm');
      const paths = files(kind, t, 'sigterm');
      await stopAt(paths, harness, 'file-committed:goods@0', 'SIGTERM');
      const again = await runAll(paths);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(downloadsByType(harness), ONE_EACH, 'three downloads, not five');
      assert.deepEqual(await rowsOf(t), [100, 100, 100], 'every row once');
      assert.deepEqual(
        again.runs.map((r) => [r.pipeline, r.replayed]),
        [
          ['sigterm-a', true],
          ['sigterm-b', true],
          ['sigterm-c', false],
        ],
      );
    });

    test('--fresh, or the same command after resume_window, runs every file anew', async () => {
      const t = await target('later');
      const paths = files(kind, t, 'later');
      await harness.faults([{ match: 'POST /v4/products', action: '422', times: 1000 }]);
      assert.equal((await runAll(paths)).code, 2);
      await harness.clearFaults();
      // Seven hours on (the window is six): the next scheduled run, not a retry.
      const later: Clock = { now: () => clock.now() + 7 * 3600_000, sleep: clock.sleep };
      const next = await runAll(paths, [], later);
      assert.equal(next.code, 0, next.stderr);
      assert.deepEqual(
        next.runs.map((r) => r.replayed),
        [false, false, false],
      );
      assert.deepEqual(downloadsByType(harness), { properties: 2, businesses: 2, products: 1 });

      await harness.faults([{ match: 'POST /v4/products', action: '422', times: 1000 }]);
      assert.equal((await runAll(paths, [], later)).code, 2);
      await harness.clearFaults();
      const fresh = await runAll(paths, ['--fresh'], later);
      assert.equal(fresh.code, 0, fresh.stderr);
      assert.deepEqual(
        fresh.runs.map((r) => r.replayed),
        [false, false, false],
      );
      assert.deepEqual(downloadsByType(harness), { properties: 4, businesses: 4, products: 2 });
    });
  });
}
