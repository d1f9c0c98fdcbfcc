import { strict as assert } from 'node:assert';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
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
  runCli,
  SLUICE_BIN,
  tempDir,
  writePipeline,
} from '../helpers/pipeline.js';

/**
 * Credits are money: a run killed at any moment and run again must pay for its download once and
 * load every file exactly once. These tests really SIGKILL a `sluice run` process, on each
 * destination.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RECORDS = 1000;

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  // 250 records a second: the download runs for 4 s of emulator time, in five 200-record files.
  harness = await EmulatorHarness.start({ scale: 0.1, fileRecords: 200, rate: 250 });
  dir = tempDir();
});
after(() => harness.close());

function pipeline(name: string, target: TestTarget): string {
  return writePipeline(
    dir,
    `${target.kind}-${name}`,
    `${pipelineHead(name, target.destinationYaml)}jobs:
  homes:
    type: properties
    query: '*'
    records: ${RECORDS}
    format: csv
    write: append
    poll: { interval: 100ms, max_interval: 200ms, timeout: 5m }
`,
  );
}

function startRun(file: string): ChildProcess {
  return spawn(
    process.execPath,
    [SLUICE_BIN, 'run', file, '--no-progress', '--log-format', 'json'],
    {
      cwd: ROOT,
      env: emulatorEnv(harness),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  /** A fresh destination of this kind: a new SQLite file or a new PostgreSQL schema. */
  const target = targetFactory(kind, () => dir);

  describe(`crashes on ${kind}`, { skip: reason }, () => {
    test('SIGKILL while polling and again mid-file: one download, every record loaded once', async () => {
      await harness.reset();
      const t = await target('crash');
      const file = pipeline('crash', t);
      const state = harness.emulator.context.state;

      // 1. Killed while it polls a running download.
      const first = startRun(file);
      await until('the first poll', async () =>
        (await harness.requests()).some(
          (r) => r.method === 'GET' && r.path.startsWith('/v4/downloads/'),
        ),
      );
      await kill(first);
      assert.equal(state.downloads.length, 1);
      const downloadId = state.downloads[0]!.publicId;
      const recorded = await t.all<{ download_id: string; status: string }>(
        'select download_id, status from _sluice_downloads',
      );
      assert.deepEqual(
        recorded,
        [{ download_id: downloadId, status: 'started' }],
        'the id was recorded before the first poll',
      );

      // 2. Let the download finish, then kill the next run while it loads the second file.
      await harness.advanceClock(60_000);
      await harness.faults([
        { match: `GET /files/${downloadId}_1`, action: 'slow', delay_ms: 10_000 },
      ]);
      const second = startRun(file);
      await until('the second file to be requested', async () =>
        (await harness.requests()).some((r) => r.path === `/files/${downloadId}_1.csv`),
      );
      // Loaded one at a time, the first file has committed by now; loaded two at once
      // (PostgreSQL appends), it may still be on its way. The run says so (the database itself
      // may be the run's alone while it runs: DuckDB's).
      let log = '';
      second.stderr!.on('data', (d: Buffer) => (log += d.toString()));
      await until('the first file to commit', () => log.includes(`loaded ${downloadId}_0.csv`));
      await new Promise((r) => setTimeout(r, 200));
      await kill(second);
      const loadedSoFar = (
        await t.all<{ file_index: number }>(
          'select file_index from _sluice_files order by file_index',
        )
      ).map((f) => Number(f.file_index));
      // Two at once, the files after the slow one went on beside it.
      assert.deepEqual(
        loadedSoFar.filter((i) => i < 2),
        [0],
        'the first file committed, the second did not',
      );
      if (t.writersAtOnce === 1) assert.deepEqual(loadedSoFar, [0], 'one file at a time');
      const { rows } = await t.one<{ rows: number }>('select count(*) as rows from homes');
      assert.equal(rows, 200 * loadedSoFar.length, 'no row of the interrupted file is visible');

      // 3. A clean run finishes the job.
      await harness.clearFaults();
      const third = await runCli(['run', file, '--json', '--no-progress'], emulatorEnv(harness));
      assert.equal(third.code, 0, third.stderr);
      const job = JSON.parse(third.stdout).jobs[0];
      assert.equal(job.reattached, true);
      assert.equal(job.download_id, downloadId);

      const { n, ids } = await t.one<{ n: number; ids: number }>(
        'select count(*) as n, count(distinct id) as ids from homes',
      );
      assert.equal(n, RECORDS, 'the table holds exactly the downloaded records');
      assert.equal(ids, RECORDS, 'no duplicates');
      const files = await t.one<{ n: number }>('select count(*) as n from _sluice_files');
      assert.equal(files.n, RECORDS / 200);
      assert.equal(state.downloads.length, 1, 'the emulator saw one download started for the job');
      const starts = (await harness.requests()).filter(
        (r) => r.method === 'POST' && r.path === '/v4/properties/search',
      );
      // One count (the credit guard) and one download start, both in the first run.
      assert.equal(starts.length, 2);
      // The two killed runs are not left `running` forever: the next run found them dead.
      const runs = await t.all<{ status: string; error_code: string | null }>(
        'select status, error_code from _sluice_runs order by started_at',
      );
      assert.deepEqual(
        runs.map((r) => [r.status, r.error_code]),
        [
          ['interrupted', 'SLUICE_INTERRUPTED'],
          ['interrupted', 'SLUICE_INTERRUPTED'],
          ['succeeded', null],
        ],
      );
      const status = await runCli(['status', file, '--json'], emulatorEnv(harness));
      const shown = JSON.parse(status.stdout) as {
        runs: { status: string; credits_paid: object }[];
      };
      assert.deepEqual(
        shown.runs.map((r) => [r.status, r.credits_paid]),
        [
          ['succeeded', {}],
          ['interrupted', {}],
          ['interrupted', { property: RECORDS }],
        ],
        'the first, killed run is the one that paid',
      );
    });

    test('a run killed between asking for a download and hearing its id adopts that download', async () => {
      await harness.reset();
      const t = await target('window');
      const file = pipeline('window', t);
      // The first run only gets as far as recording the request; simulate its crash right after the
      // service created the download, before the id reached the state table.
      const setup = await runCli(['validate', file], emulatorEnv(harness));
      assert.equal(setup.code, 0, setup.stderr);
      const { openDestination } = await import('../../src/load/index.js');
      const { loadPipeline } = await import('../../src/pipeline/spec/spec.js');
      const spec = await loadPipeline(file, emulatorEnv(harness));
      const destination = await openDestination(t.url, { settings: t.settings });
      await destination.ensureState();
      const now = new Date().toISOString();
      await destination.state.insertAttempt({
        attempt_id: 'crashed-attempt',
        pipeline: 'window',
        job: 'homes',
        spec_hash: spec.jobs[0]!.downloadHash,
        api: 'v4',
        download_id: null,
        status: 'requested',
        target_table: 'homes',
        load_table: 'homes',
        num_found: null,
        num_records: null,
        requested_at: now,
        started_at: null,
        updated_at: now,
        finished_at: null,
        run_id: 'crashed-run',
        message: null,
        load_hash: null,
        write_mode: 'append',
        data_type: 'properties',
        query: '*',
        format: 'csv',
        num_requested: RECORDS,
        cursor_from: null,
        credits: null,
        load_settings: null,
        stage: 'extract',
      });
      await destination.close();
      const { createServiceClient } = await import('../../src/client/index.js');
      const client = createServiceClient({ url: harness.v4Url, ...harness.credentials });
      const started = await client.startDownload({
        type: 'properties',
        query: '*',
        numRecords: RECORDS,
        format: 'csv',
      });
      await client.close();
      await harness.advanceClock(60_000);

      const run = await runCli(['run', file, '--json', '--no-progress'], emulatorEnv(harness));
      assert.equal(run.code, 0, run.stderr);
      const job = JSON.parse(run.stdout).jobs[0];
      assert.equal(job.download_id, started.id);
      assert.equal(job.reattached, true);
      assert.equal(
        harness.emulator.context.state.downloads.length,
        1,
        'no second download was paid for',
      );
      const { n } = await t.one<{ n: number }>('select count(*) as n from homes');
      assert.equal(n, RECORDS);
    });
  });
}
