import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import {
  emulatorEnv,
  pipelineHead,
  SLUICE_BIN,
  tempDir,
  writePipeline,
} from '../helpers/pipeline.js';
import { downloadsByType, runToEnd, startRun, stopAt } from '../helpers/runs.js';

/**
 * What a killed run leaves behind, and what reads it. DuckDB: a run killed after it committed a
 * `write: replace` left a write-ahead log that DuckDB cannot replay read-only, and `status` (every
 * read-only open) failed with exit 2 until a run opened the file; each run killed mid-load left
 * its scratch folder in $TMPDIR for good.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({
    scale: 0.5,
    fileRecords: 200,
    queueMs: 300,
    rate: 5000,
    churn: 0,
  });
  dir = tempDir('sluice-killed-');
});
after(() => harness.close());

const POLL = 'poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }';

// `plan` reads the destination for a job under a schema contract.
const JOBS = `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 400
    format: csv
    write: append
    ${POLL}
  catalog:
    type: products
    query: '*'
    records: 300
    format: csv
    write: replace
    schema: { type_changes: freeze }
    ${POLL}
`;

/** The scratch folders sluice made in `tmp` (DuckDB's: `sluice-duckdb-<pid>-...`). */
function scratchFolders(tmp: string): string[] {
  return readdirSync(tmp).filter((name) => name.startsWith('sluice-'));
}

/** A command of the built CLI in a process of its own, as users run it after a crash. */
function sluice(args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  // One job at a time, in the file's order: the runs are stopped at a point of each job's, and
  // with jobs at once `catalog` could end before `homes` reached its second file.
  const pipeline = (t: TestTarget, name: string) =>
    writePipeline(
      dir,
      `${kind}-${name}`,
      `${pipelineHead(name, t.destinationYaml)}max_parallel_jobs: 1\n${JOBS}`,
    );

  describe(`after a killed run on ${kind}`, { skip: reason }, () => {
    test('status and plan failed after a SIGKILL that followed a committed replace (DuckDB: its log not replayable read-only); killed runs left their scratch folders: now both read at once, and the next run removes the folders', async () => {
      await harness.reset();
      const t = await target('reads');
      const file = pipeline(t, 'reads');
      const tmp = tempDir('sluice-tmpdir-');
      const env = { TMPDIR: tmp };
      await stopAt(file, harness, 'file-batch:homes@1', 'SIGKILL', env);
      const leftMidLoad = scratchFolders(tmp);
      await stopAt(file, harness, 'job-finished:catalog', 'SIGKILL', env);

      const status = await sluice(['status', file, '--json'], emulatorEnv(harness, env));
      assert.equal(status.code, 0, status.stdout + status.stderr);
      const report = JSON.parse(status.stdout);
      const catalog = report.jobs.find((j: { job: string }) => j.job === 'catalog');
      assert.equal(catalog?.status, 'loaded', status.stdout);
      const plan = await sluice(['plan', file, '--json'], emulatorEnv(harness, env));
      assert.equal(plan.code, 0, plan.stdout + plan.stderr);
      // The run that resumed the first removed its folder as it started.
      for (const name of leftMidLoad) assert.ok(!existsSync(join(tmp, name)), `${name} removed`);

      const summary = await runToEnd(file, harness, env);
      assert.equal(summary.status, 'succeeded');
      assert.deepEqual(downloadsByType(harness), { properties: 1, products: 1 }, 'bought once');
      const rows = await t.one<{ n: number }>('select count(*) as n from catalog');
      assert.equal(Number(rows.n), 300);
      assert.deepEqual(scratchFolders(tmp), [], 'no scratch folder is left');
    });

    test("a live run's scratch folder is never removed by another run's start", async (context) => {
      await harness.reset();
      const tmp = tempDir('sluice-tmpdir-');
      const env = { TMPDIR: tmp };
      const live = startRun(pipeline(await target('live'), 'live'), harness, {
        checkpoint: 'file-batch:homes@1',
        env,
      });
      try {
        await live.reached;
        const held = scratchFolders(tmp);
        if (held.length === 0) {
          context.skip(`${kind} keeps no scratch folder`);
          return;
        }
        await runToEnd(pipeline(await target('other'), 'other'), harness, env);
        for (const name of held) assert.ok(existsSync(join(tmp, name)), `${name} kept`);
      } finally {
        live.child.kill('SIGKILL');
        await live.finished;
      }
    });
  });
}
