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
 * Credit budgets (`budget:`) end to end on each destination: counted from what the pipeline's
 * state tables say it bought, checked by the guard before each job spends, shown by `plan` and
 * `status`. Every command runs on a clock set in the middle of a known month (moved by the
 * run's waits, with the emulator's), so the calendar periods are the same whenever this runs.
 */

/** A Wednesday: its week began on Monday 2026-06-08, its month on 2026-06-01. */
const MID_JUNE = Date.parse('2026-06-10T12:00:00.000Z');

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.05, fileRecords: 200 });
  dir = tempDir();
});
after(() => harness.close());
beforeEach(() => harness.reset());

/** Time as sluice sees it from `start`: each wait of a run moves it and the emulator's. */
function clockAt(emulator: EmulatorHarness, start: number) {
  let now = start;
  return {
    now: () => now,
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      const step = Math.ceil(ms);
      now += step;
      await emulator.advanceClock(step);
    },
    set(to: number) {
      now = to;
    },
  };
}

function job(name: string, records: number, extra = ''): string {
  return `  ${name}:
    type: properties
    query: '*'
    records: ${records}
    format: csv
    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
${extra}`;
}

function pipeline(name: string, t: TestTarget, budget: string, jobs: string[]): string {
  return writePipeline(
    dir,
    `${t.kind}-${name}`,
    `${pipelineHead(name, t.destinationYaml)}budget: ${budget}\njobs:\n${jobs.join('')}`,
  );
}

interface Budget {
  type: string;
  limit: number;
  period: string;
  from: string;
  until: string;
  spent: number;
  planned?: number;
  left?: number;
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`budgets on ${kind}`, { skip: reason }, () => {
    test('a budget refuses the job that would cross it, not the ones before; plan and status show it', async () => {
      const t = await target('budget-cross');
      const file = pipeline('budget-cross', t, '{ property: 700/month }', [
        job('first', 300),
        job('second', 300),
        job('third', 200),
      ]);
      const env = emulatorEnv(harness);
      const clock = clockAt(harness, MID_JUNE);

      // Before any run: the plan lowers the budget job by job, as run would.
      const plan = await runCli(['plan', file], env, undefined, clock);
      assert.equal(plan.code, 3, plan.stdout + plan.stderr);
      assert.match(plan.stdout, /^first .*pass$/m);
      assert.match(plan.stdout, /^second .*pass$/m);
      assert.match(plan.stdout, /^third .*REFUSE$/m);
      assert.match(
        plan.stdout,
        /job 'third' needs 200 property credits, more than is left of the budget of 700 property credits a month: 0 spent since 2026-06-01T00:00:00\.000Z, 600 taken by the jobs planned before it, 100 left until 2026-07-01T00:00:00\.000Z/,
      );
      assert.match(plan.stdout, /^budgets \(calendar periods in UTC\):$/m);
      assert.match(
        plan.stdout,
        /^property\s+700\/month\s+2026-06-01T00:00:00\.000Z to 2026-07-01T00:00:00\.000Z\s+0\s+600\s+100$/m,
      );

      // Two jobs spent before the third was refused: not "refused before anything was spent"
      // (3) but done with less than asked for (4); the status stays refused.
      const run = await runCli(['run', file, '--json', '--no-progress'], env, undefined, clock);
      assert.equal(run.code, 4, run.stdout + run.stderr);
      const summary = JSON.parse(run.stdout);
      assert.equal(summary.status, 'refused');
      assert.deepEqual(
        summary.jobs.map((j: { job: string; status: string }) => [j.job, j.status]),
        [
          ['first', 'loaded'],
          ['second', 'loaded'],
          ['third', 'refused'],
        ],
      );
      const refused = summary.jobs[2].error;
      assert.equal(refused.code, 'SLUICE_BUDGET');
      assert.equal(
        refused.message,
        "job 'third' needs 200 property credits, more than is left of the budget of 700 property credits a month: 600 spent since 2026-06-01T00:00:00.000Z, 100 left until 2026-07-01T00:00:00.000Z",
      );
      assert.equal(harness.emulator.context.state.downloads.length, 2, 'the third bought nothing');

      const status = await runCli(['status', file], env, undefined, clock);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /^Budgets: spent this period \(calendar periods in UTC\)$/m);
      assert.match(
        status.stdout,
        /^property\s+700\/month\s+2026-06-01T00:00:00\.000Z to 2026-07-01T00:00:00\.000Z\s+600\s+100$/m,
      );
      const statusJson = await runCli(['status', file, '--json'], env, undefined, clock);
      assert.deepEqual(JSON.parse(statusJson.stdout).budgets, [
        {
          type: 'property',
          limit: 700,
          period: 'month',
          from: '2026-06-01T00:00:00.000Z',
          until: '2026-07-01T00:00:00.000Z',
          spent: 600,
        },
      ]);

      // July is a new period: June's purchases no longer count.
      clock.set(Date.parse('2026-07-01T00:00:00.000Z'));
      const july = JSON.parse(
        (await runCli(['plan', file, '--json'], env, undefined, clock)).stdout,
      );
      const [budget] = july.budgets as Budget[];
      assert.equal(budget!.from, '2026-07-01T00:00:00.000Z');
      assert.equal(budget!.spent, 0);
      assert.equal(budget!.planned, 600);
      assert.equal(budget!.left, 100);
    });

    test('a download re-attached by a later run is counted once, by the run that started it', async () => {
      // 20 records a second: a 100-record download takes 5 s of emulator time.
      const slow = await EmulatorHarness.start({ scale: 0.05, fileRecords: 50, rate: 20 });
      try {
        const t = await target('budget-reattach');
        const file = pipeline('budget-reattach', t, '{ property: 150/week }', [
          job('homes', 100).replace('timeout: 60s', 'timeout: 1s, on_timeout: leave'),
        ]);
        const env = emulatorEnv(slow);
        const clock = clockAt(slow, MID_JUNE);
        const spent = async () => {
          const doc = JSON.parse(
            (await runCli(['status', file, '--json'], env, undefined, clock)).stdout,
          );
          return (doc.budgets as Budget[])[0]!.spent;
        };

        const first = await runCli(['run', file, '--json', '--no-progress'], env, undefined, clock);
        assert.equal(first.code, 1, first.stdout + first.stderr);
        assert.equal(JSON.parse(first.stdout).jobs[0].status, 'timed_out');
        // Unfinished, it counts at what it asked for: the service charges as it delivers.
        assert.equal(await spent(), 100);

        // plan knows run would re-attach: nothing more to pay, nothing to refuse.
        const plan = await runCli(['plan', file], env, undefined, clock);
        assert.equal(plan.code, 0, plan.stdout + plan.stderr);
        assert.match(
          plan.stdout,
          /homes: run re-attaches to download \w+, started by an earlier run/,
        );
        assert.match(plan.stdout, /^property\s+150\/week\s+.*\s+100\s+0\s+50$/m);

        // A minute later the download is done.
        clock.set(clock.now() + 60_000);
        await slow.advanceClock(60_000);
        const second = await runCli(
          ['run', file, '--json', '--no-progress'],
          env,
          undefined,
          clock,
        );
        assert.equal(second.code, 0, second.stdout + second.stderr);
        const job2 = JSON.parse(second.stdout).jobs[0];
        assert.equal(job2.reattached, true);
        assert.equal(job2.loaded, 100);
        assert.equal(slow.emulator.context.state.downloads.length, 1, 'bought once');
        assert.equal(await spent(), 100, 'and counted once');
      } finally {
        await slow.close();
      }
    });

    test('autotrace and owner lookups spend from people budgets', async () => {
      const t = await target('budget-people');
      const file = pipeline('budget-people', t, '{ people: 120/week, property: [1000/day] }', [
        job('traced', 40, '    auto_trace: true\n'),
        job('plain', 100),
        `  owners:\n    type: people\n    people_keys_from: plain\n`,
      ]);
      const plan = await runCli(
        ['plan', file, '--json'],
        emulatorEnv(harness),
        undefined,
        clockAt(harness, MID_JUNE),
      );
      assert.equal(plan.code, 3, plan.stdout + plan.stderr);
      const doc = JSON.parse(plan.stdout);
      assert.deepEqual(
        doc.jobs.map((j: { job: string; verdict: string }) => [j.job, j.verdict]),
        [
          ['traced', 'pass'],
          ['plain', 'pass'],
          ['owners', 'refuse'],
        ],
      );
      assert.match(
        doc.jobs[2].refusals[0].message,
        /job 'owners' could need up to 100 people credits, more than is left of the budget of 120 people credits a week: 0 spent since 2026-06-08T00:00:00\.000Z, 40 taken by the jobs planned before it, 80 left/,
      );
      assert.deepEqual(
        (doc.budgets as Budget[]).map((b) => [b.type, b.period, b.planned, b.left]),
        [
          ['people', 'week', 40, 80],
          ['property', 'day', 140, 860],
        ],
      );
    });
  });
}
