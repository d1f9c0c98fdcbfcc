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
import { downloadsByType, snapshot, startRun } from '../helpers/runs.js';

/**
 * Jobs at once: a run starts every job's download (in the file's order, each checked by the
 * credit guard against what the jobs before it reserved), the service prepares them together,
 * and each job is loaded when its download is complete. Then the selection of jobs and files,
 * and run keys: a retry of an orchestrator's run never buys again what it bought.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  // Downloads wait in the service's queue: the run's polls move the emulator's clock.
  harness = await EmulatorHarness.start({
    scale: 0.5,
    fileRecords: 300,
    queueMs: 20_000,
    rate: 200,
  });
  dir = tempDir('sluice-jobs-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

const POLL = 'poll: { interval: 1s, max_interval: 2s, timeout: 10m }';

function jobs(records = 300): string {
  return `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: ${records}
    format: csv
    ${POLL}
  shops:
    type: businesses
    query: '*'
    records: ${records}
    ${POLL}
  goods:
    type: products
    query: '*'
    records: ${records}
    format: csv
    write: replace
    ${POLL}
`;
}

/** When each download was asked for and when the service completed it (emulator time). */
function downloadTimes() {
  const { queueMs, rate } = harness.emulator.options;
  return harness.emulator.context.state.downloads.map((d) => ({
    type: d.type,
    created: d.createdAt,
    completed: d.createdAt + queueMs + (d.target / rate) * 1000,
  }));
}

async function runJson(
  file: string,
  args: string[] = [],
  env = emulatorEnv(harness),
  clock = harness.clock(),
) {
  const result = await runCli(
    ['run', file, '--json', '--no-progress', ...args],
    env,
    undefined,
    clock,
  );
  return { ...result, summary: JSON.parse(result.stdout) };
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  const pipeline = (t: TestTarget, name: string, body: string, head = '') =>
    writePipeline(dir, `${kind}-${name}`, `${pipelineHead(name, t.destinationYaml)}${head}${body}`);

  describe(`jobs at once on ${kind}`, { skip: reason }, () => {
    test('every download is asked for before the first is complete; --parallel 1 runs one after another; the tables are the same', async () => {
      const t = await target('at-once');
      // Each poll moves the emulator's clock a tenth of its sleep: while one job makes its
      // tables, the others' polls move it little, whatever the destination and the machine.
      const together = await runJson(
        pipeline(t, 'at-once', jobs()),
        [],
        emulatorEnv(harness),
        harness.clock(0.1),
      );
      assert.equal(together.code, 0, together.stderr);
      const times = downloadTimes();
      assert.equal(times.length, 3);
      const firstDone = Math.min(...times.map((d) => d.completed));
      for (const d of times) assert.ok(d.created < firstDone, `${d.type} was asked for at once`);
      assert.deepEqual(
        together.summary.jobs.map((j: { job: string; status: string }) => [j.job, j.status]),
        [
          ['homes', 'loaded'],
          ['shops', 'loaded'],
          ['goods', 'loaded'],
        ],
        'outcomes in the file order',
      );

      await harness.reset();
      const s = await target('one-by-one');
      const serial = await runJson(pipeline(s, 'one-by-one', jobs()), ['--parallel', '1']);
      assert.equal(serial.code, 0, serial.stderr);
      const one = downloadTimes();
      for (let i = 1; i < one.length; i++) {
        assert.ok(one[i]!.created >= one[i - 1]!.completed, 'each waits for the one before');
      }
      assert.deepEqual(await snapshot(t), await snapshot(s), 'the same tables');
    });

    test('max_parallel_jobs bounds the jobs in flight', async () => {
      const t = await target('bounded');
      const done = await runJson(pipeline(t, 'bounded', jobs(), 'max_parallel_jobs: 2\n'));
      assert.equal(done.code, 0, done.stderr);
      const [a, b, c] = downloadTimes();
      assert.ok(b!.created < a!.completed, 'two at once');
      assert.ok(c!.created >= Math.min(a!.completed, b!.completed), 'the third waits for a slot');
    });

    test("the credit guard checks the jobs in the file's order: the one that crosses what is left is refused, as plan says", async () => {
      await harness.setCredits({ property_credits_allotted: 500, property_credits_used: 0 });
      const t = await target('guard');
      const file = pipeline(
        t,
        'guard',
        `jobs:
  first:
    type: properties
    query: 'province:TX'
    records: 300
    ${POLL}
  shops:
    type: businesses
    query: '*'
    records: 100
    ${POLL}
  second:
    type: properties
    query: '-province:TX'
    records: 300
    ${POLL}
`,
      );
      const plan = await runCli(['plan', file, '--json'], emulatorEnv(harness));
      const planned = JSON.parse(plan.stdout).jobs.map(
        (j: { refusals: unknown[] }) => j.refusals.length > 0,
      );
      const done = await runJson(file);
      // Two jobs spent before the third was refused: exit 4, not 3 (refused before any spending).
      assert.equal(done.code, 4, done.stderr);
      const statuses = done.summary.jobs.map((j: { status: string }) => j.status);
      assert.deepEqual(statuses, ['loaded', 'loaded', 'refused']);
      assert.deepEqual(planned, [false, false, true], 'plan gave the same verdicts');
      assert.deepEqual(downloadsByType(harness), { properties: 1, businesses: 1 });
    });

    test('--job takes globs; run takes several files: one JSON document, the worst exit code', async () => {
      const a = await target('files-a');
      const b = await target('files-b');
      const fileA = pipeline(a, 'files-a', jobs(100));
      const fileB = pipeline(b, 'files-b', jobs(100));
      const one = await runJson(fileA, ['--job', 'h*', '--job', 'good?']);
      assert.equal(one.code, 0, one.stderr);
      assert.deepEqual(
        one.summary.jobs.map((j: { job: string }) => j.job),
        ['homes', 'goods'],
      );
      const missing = await runJson(fileA, ['--job', 'nothing*']);
      assert.equal(missing.code, 2);
      assert.equal(missing.summary.error.code, 'SLUICE_UNKNOWN_JOB');
      await harness.setCredits({ business_credits_allotted: 0, business_credits_used: 0 });
      const both = await runCli(
        ['run', fileA, fileB, '--json', '--no-progress', '--job', 'shops'],
        emulatorEnv(harness),
        undefined,
        harness.clock(),
      );
      const doc = JSON.parse(both.stdout);
      assert.equal(both.code, 3, both.stderr);
      assert.equal(doc.exit_code, 3);
      assert.deepEqual(
        doc.runs.map((r: { pipeline: string; status: string }) => [r.pipeline, r.status]),
        [
          ['files-a', 'refused'],
          ['files-b', 'refused'],
        ],
      );
    });
  });
}

describe('an interrupted run', () => {
  const target = targetFactory('sqlite', () => dir);

  test('its summary lists every job: those it never reached say so, and exit 130', async () => {
    const t = await target('stopped');
    const file = writePipeline(
      dir,
      'stopped',
      `${pipelineHead('stopped', t.destinationYaml)}max_parallel_jobs: 1\n${jobs(100)}`,
    );
    const run = startRun(file, harness, { checkpoint: 'job-finished:homes' });
    await run.reached;
    run.child.kill('SIGINT');
    const done = await run.finished;
    assert.equal(done.code, 130, done.stderr);
    const summary = JSON.parse(done.stdout);
    assert.equal(summary.status, 'interrupted');
    assert.deepEqual(
      summary.jobs.map((j: { job: string; status: string }) => [j.job, j.status]),
      [
        ['homes', 'loaded'],
        ['shops', 'interrupted'],
        ['goods', 'interrupted'],
      ],
    );
    assert.match(summary.jobs[1].message, /interrupted before it started/);
    assert.deepEqual(downloadsByType(harness), { properties: 1 }, 'nothing bought after the stop');
  });
});

describe('run keys', () => {
  const target = targetFactory('sqlite', () => dir);

  test('a retry of a key that succeeded buys nothing and prints that run; one killed mid-way resumes it, whatever resume_window says', async () => {
    const t = await target('keyed');
    // No resume window: without a key, a run after a failed one runs every job again.
    const file = writePipeline(
      dir,
      'keyed',
      `${pipelineHead('keyed', t.destinationYaml)}resume_window: 0s\nmax_parallel_jobs: 1\n${jobs(100)}`,
    );
    const key = ['--run-key', '2026-11-26'];
    const killed = startRun(file, harness, { checkpoint: 'job-finished:homes', args: key });
    await killed.reached;
    killed.child.kill('SIGKILL');
    await killed.finished;
    assert.deepEqual(downloadsByType(harness), { properties: 1 });
    const retry = await runJson(file, key);
    assert.equal(retry.code, 0, retry.stderr);
    const statuses = retry.summary.jobs.map((j: { status: string }) => j.status);
    assert.deepEqual(statuses, ['skipped', 'loaded', 'loaded'], 'the killed run is resumed');
    const bought = downloadsByType(harness);
    assert.deepEqual(bought, { properties: 1, businesses: 1, products: 1 });
    // The key's run succeeded: another retry does nothing and says what that run did.
    const again = await runJson(file, key);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.summary.run_id, retry.summary.run_id, "the key's run, not a new one");
    assert.match(again.stderr, /nothing to do/);
    assert.deepEqual(downloadsByType(harness), bought, 'nothing bought');
    // Another key is another run.
    const next = await runJson(file, ['--run-key', '2026-11-27']);
    assert.equal(next.code, 0);
    assert.notEqual(next.summary.run_id, retry.summary.run_id);
    assert.deepEqual(downloadsByType(harness), { properties: 2, businesses: 2, products: 2 });
  });
});
