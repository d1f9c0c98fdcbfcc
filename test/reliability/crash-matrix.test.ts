import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { pipelineHead, tempDir, writePipeline } from '../helpers/pipeline.js';
import {
  creditsUsed,
  downloadsByType,
  runToEnd,
  snapshot,
  stopAt,
  type TableSnapshot,
} from '../helpers/runs.js';

/**
 * The crash matrix: a pipeline of three jobs (an append with autotrace owners, a merge, a
 * replace), stopped with SIGKILL, SIGTERM and SIGINT at each checkpoint and then run again to
 * the end. Afterwards every table equals a reference load of the same records (rows, distinct
 * keys, content, child and owner tables included), each job was bought exactly once, and the
 * credits spent are one purchase of each.
 */

const POINTS = [
  'download-started:homes',
  'polling:homes',
  'file-batch:homes@1',
  'file-committed:homes@0',
  'job-finished:homes',
  'file-batch:shops@1',
  'job-finished:shops',
  'download-started:catalog',
  // Into PostgreSQL the replace loads its two files at once: one commits, the other is in flight.
  'file-committed:catalog@0',
  'swap:catalog',
];
const SIGNALS: NodeJS.Signals[] = ['SIGKILL', 'SIGTERM', 'SIGINT'];

const JOBS = `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 600
    format: csv
    write: append
    auto_trace: true
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
  shops:
    type: businesses
    query: 'province:TX'
    records: 400
    format: json
    write: merge
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
  catalog:
    type: products
    query: '*'
    records: 300
    format: csv
    write: replace
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
`;

/**
 * The real-time purchases: a refresh step (a targeted update) before a merge job, and a scrape
 * loaded by an append, killed before and after each paid request (and while the update is
 * polled, and mid-load of the scrape's answer).
 */
const REAL_TIME_POINTS = [
  'request-recorded:homes.refresh',
  'download-started:homes.refresh',
  'polling:homes.refresh',
  'request-recorded:listings',
  'download-started:listings',
  'file-batch:listings@0',
];

const REAL_TIME_JOBS = `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 300
    format: csv
    write: merge
    refresh: { records: 200 }
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
  listings:
    type: businesses
    query: 'province:TX'
    records: 100
    scrape: true
    write: append
`;

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
  dir = tempDir('sluice-matrix-');
});
after(() => harness.close());

export const figures = { trials: 0, kills: 0 };

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`crash matrix on ${kind}`, { skip: reason }, () => {
    let reference: Record<string, TableSnapshot>;
    let referenceCredits: Record<string, number>;
    const file = (t: TestTarget, name: string) =>
      writePipeline(dir, `${kind}-${name}`, `${pipelineHead('matrix', t.destinationYaml)}${JOBS}`);

    before(async () => {
      await harness.reset();
      const t = await target('reference');
      await runToEnd(file(t, 'reference'), harness);
      reference = await snapshot(t);
      referenceCredits = creditsUsed(harness);
      assert.deepEqual(downloadsByType(harness), { properties: 1, businesses: 1, products: 1 });
      assert.ok(Object.keys(reference).includes('homes__owners'), 'owner tables are compared too');
    });

    for (const point of POINTS) {
      for (const signal of SIGNALS) {
        test(`${signal} at ${point}, then a run to the end: every row once, every job bought once`, async () => {
          await harness.reset();
          const name = `${point}-${signal}`.replace(/\W+/g, '_');
          const t = await target(name);
          const pipeline = file(t, name);
          await stopAt(pipeline, harness, point, signal);
          const summary = await runToEnd(pipeline, harness);
          assert.equal(summary.status, 'succeeded');
          assert.deepEqual(await snapshot(t), reference, 'the tables equal the reference load');
          assert.deepEqual(
            downloadsByType(harness),
            { properties: 1, businesses: 1, products: 1 },
            'one download per job',
          );
          assert.deepEqual(creditsUsed(harness), referenceCredits, 'credits of one purchase');
          figures.trials++;
          figures.kills++;
        });
      }
    }
  });
}

/**
 * Several pipeline files in one command, stopped during the third and run again as the same
 * command (systemd's `Restart=on-failure`, an orchestrator's retry): the two files that had
 * finished are replayed, never bought or loaded again, and the third is finished.
 */
const FILES: Record<string, string> = {
  a: `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 400
    format: csv
    write: append
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
`,
  b: `jobs:
  shops:
    type: businesses
    query: 'province:TX'
    records: 400
    format: json
    write: append
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
`,
  c: `jobs:
  goods:
    type: products
    query: '*'
    records: 400
    format: csv
    write: append
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
`,
};
const THIRD_FILE_POINTS = ['download-started:goods', 'file-committed:goods@0'];

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`a command of three pipeline files stopped during the third, on ${kind}`, {
    skip: reason,
  }, () => {
    let reference: Record<string, TableSnapshot>;
    let referenceCredits: Record<string, number>;
    // The three pipelines share one destination, as a team's often do.
    const files = (t: TestTarget, name: string) =>
      Object.entries(FILES).map(([file, jobs]) =>
        writePipeline(
          dir,
          `${kind}-${name}-${file}`,
          `${pipelineHead(`files-${file}`, t.destinationYaml)}${jobs}`,
        ),
      );

    before(async () => {
      await harness.reset();
      const t = await target('files-reference');
      const doc = await runToEnd(files(t, 'files-reference'), harness);
      assert.equal(doc.exit_code, 0);
      reference = await snapshot(t);
      referenceCredits = creditsUsed(harness);
    });

    for (const point of THIRD_FILE_POINTS) {
      for (const signal of SIGNALS) {
        test(`${signal} at ${point}, then the same command again: the first two files are not bought again`, async () => {
          await harness.reset();
          const name = `files-${point}-${signal}`.replace(/\W+/g, '_');
          const t = await target(name);
          const paths = files(t, name);
          await stopAt(paths, harness, point, signal);
          const doc = (await runToEnd(paths, harness)) as {
            runs: { status: string; replayed: boolean }[];
          };
          assert.deepEqual(await snapshot(t), reference, 'the tables equal the reference load');
          assert.deepEqual(
            downloadsByType(harness),
            { properties: 1, businesses: 1, products: 1 },
            'one download per file',
          );
          assert.deepEqual(creditsUsed(harness), referenceCredits, 'credits of one purchase');
          assert.deepEqual(
            doc.runs.map((r) => [r.status, r.replayed]),
            [
              ['succeeded', true],
              ['succeeded', true],
              ['succeeded', false],
            ],
          );
          figures.trials++;
          figures.kills++;
        });
      }
    }
  });
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`crash matrix of real-time purchases on ${kind}`, { skip: reason }, () => {
    let reference: Record<string, Omit<TableSnapshot, 'hash'>>;
    let referenceCredits: Record<string, number>;
    const file = (t: TestTarget, name: string) =>
      writePipeline(
        dir,
        `${kind}-rt-${name}`,
        `${pipelineHead('matrix-rt', t.destinationYaml)}${REAL_TIME_JOBS}`,
      );
    // A refresh and a scrape date their records by when they ran: rows and keys are compared.
    const shape = (tables: Record<string, TableSnapshot>) =>
      Object.fromEntries(Object.entries(tables).map(([n, { rows, keys }]) => [n, { rows, keys }]));
    const bought = () => ({
      updates: harness.emulator.context.state.updates.length,
      downloads: downloadsByType(harness),
    });

    before(async () => {
      await harness.reset();
      const t = await target('rt-reference');
      await runToEnd(file(t, 'reference'), harness);
      reference = shape(await snapshot(t));
      referenceCredits = creditsUsed(harness);
      assert.deepEqual(bought(), { updates: 1, downloads: { properties: 1 } });
      assert.deepEqual(Object.keys(reference).includes('listings'), true);
    });

    for (const point of REAL_TIME_POINTS) {
      for (const signal of SIGNALS) {
        test(`${signal} at ${point}, then a run to the end: each purchase made once`, async () => {
          await harness.reset();
          const name = `${point}-${signal}`.replace(/\W+/g, '_');
          const t = await target(`rt-${name}`);
          const pipeline = file(t, name);
          await stopAt(pipeline, harness, point, signal);
          const summary = await runToEnd(pipeline, harness);
          assert.equal(summary.status, 'succeeded');
          assert.deepEqual(shape(await snapshot(t)), reference, 'the tables hold the same rows');
          assert.deepEqual(bought(), { updates: 1, downloads: { properties: 1 } }, 'bought once');
          assert.deepEqual(creditsUsed(harness), referenceCredits, 'credits of one purchase');
          figures.trials++;
          figures.kills++;
        });
      }
    }
  });
}
