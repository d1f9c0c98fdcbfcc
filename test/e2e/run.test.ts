import { strict as assert } from 'node:assert';
import { readFileSync, writeFileSync } from 'node:fs';
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
 * `sluice run` end to end on each destination: the CLI in this process against a live emulator
 * over HTTP, loading real SQLite files and real PostgreSQL schemas (SLUICE_TEST_DESTINATIONS
 * chooses). Small result files (200 records) so every run spans several files.
 */

interface JobOptions {
  query?: string;
  records?: number | 'all';
  format?: 'csv' | 'json';
  write?: 'append' | 'merge' | 'replace';
  view?: string[];
  extra?: string;
}

function pipeline(name: string, target: TestTarget, job: JobOptions = {}): string {
  const view = job.view
    ? `views:\n  v_${name.replaceAll('-', '_')}:\n    fields: [${job.view.join(', ')}]\n`
    : '';
  return writePipeline(
    dir,
    `${target.kind}-${name}`,
    `${pipelineHead(name, target.destinationYaml)}${view}jobs:
  homes:
    type: properties
    query: '${job.query ?? 'province:TX'}'
    records: ${job.records ?? 500}
    format: ${job.format ?? 'csv'}
    write: ${job.write ?? 'merge'}
${job.view ? `    view: v_${name.replaceAll('-', '_')}\n` : ''}    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
${job.extra ?? ''}`,
  );
}

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.5, fileRecords: 200 });
  dir = tempDir();
});
after(() => harness.close());
beforeEach(() => harness.reset());

function downloadsStarted(): number {
  return harness.emulator.context.state.downloads.length;
}

/** A table's column types as the destination reports them (declared types in SQLite). */
async function columnTypes(t: TestTarget, table: string): Promise<Record<string, string>> {
  return Object.fromEntries((await t.columns(table)).map((r) => [r.name, r.type]));
}

async function count(t: TestTarget, sql: string): Promise<number> {
  return (await t.one<{ n: number }>(sql)).n;
}

async function runJson(
  file: string,
  env = emulatorEnv(harness),
  extra: string[] = [],
  /** Whose time the run's clock moves; null: real time (runs that must overlap). */
  clock: EmulatorHarness | null = harness,
) {
  const result = await runCli(
    ['run', file, '--json', '--no-progress', ...extra],
    env,
    undefined,
    clock === null ? undefined : clock.clock(),
  );
  return { ...result, summary: result.stdout ? JSON.parse(result.stdout) : undefined };
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  /** A fresh destination of this kind: a new SQLite file or a new PostgreSQL schema. */
  const target = targetFactory(kind, () => dir);

  describe(`write modes on ${kind}`, { skip: reason }, () => {
    test('append adds every run, merge keeps one row per id, replace swaps in the new table', async () => {
      for (const write of ['append', 'merge', 'replace'] as const) {
        const t = await target(`modes-${write}`);
        const file = pipeline(`modes-${write}`, t, { write, records: 450 });
        const first = await runJson(file);
        assert.equal(first.code, 0, first.stderr);
        assert.equal(first.summary.status, 'succeeded');
        assert.equal(first.summary.jobs[0].downloaded, 450);
        assert.equal(first.summary.jobs[0].loaded, 450);
        assert.equal(first.summary.jobs[0].files_loaded, 3);
        const second = await runJson(file);
        assert.equal(second.code, 0, second.stderr);
        const { n, ids } = await t.one<{ n: number; ids: number }>(
          'select count(*) as n, count(distinct id) as ids from homes',
        );
        assert.equal(n, write === 'append' ? 900 : 450, write);
        assert.equal(ids, 450, write);
        assert.equal(
          await count(t, 'select count(*) as n from _sluice_files'),
          6,
          'each run loads its own download, three files each',
        );
        const staging = (await t.tables('')).filter((name) => name.includes('sluice_new'));
        assert.deepEqual(staging, [], 'no staging table is left behind');
        assert.equal(
          await count(
            t,
            'select count(*) as n from homes__prices where _parent_id not in (select id from homes)',
          ),
          0,
          'child rows all belong to a row of the table',
        );
        const meta = await t.all('select distinct _sluice_download_id from homes');
        assert.equal(
          meta.length,
          write === 'append' ? 2 : 1,
          'rows carry the download they came from',
        );
      }
    });

    test('replace never shows a half table to a reader', async () => {
      const t = await target('replace-reader');
      const first = await runJson(
        pipeline('replace-reader', t, { write: 'replace', records: 600 }),
      );
      assert.equal(first.code, 0);
      const oldId = first.summary.jobs[0].download_id;
      // The next replace loads fewer records, slowly, while a reader watches: every look must see
      // one whole table, the old one or the new one, never a mix or a part.
      await harness.faults([{ match: 'GET /files/', action: 'slow', delay_ms: 150, times: 10 }]);
      const seen = new Set<string>();
      let running = true;
      const look = async () =>
        JSON.stringify(
          await t.all(
            'select count(*) as n, count(distinct _sluice_download_id) as downloads, min(_sluice_download_id) as download from homes',
          ),
        );
      const watch = (async () => {
        while (running) {
          seen.add(await look());
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      const second = await runJson(
        pipeline('replace-reader', t, { write: 'replace', records: 450 }),
      );
      running = false;
      await watch;
      seen.add(await look());
      assert.equal(second.code, 0, second.stderr);
      const newId = second.summary.jobs[0].download_id;
      const whole = (n: number, id: string) => JSON.stringify([{ n, downloads: 1, download: id }]);
      assert.ok(seen.has(whole(600, oldId)), 'the old table was seen while the new one loaded');
      assert.ok(seen.has(whole(450, newId)), 'the new table was seen at the end');
      assert.deepEqual([...seen].sort(), [whole(600, oldId), whole(450, newId)].sort());
    });

    test('a new column appearing between runs is added; older rows keep NULL in it', async () => {
      const t = await target('evolve');
      const first = pipeline('evolve', t, { view: ['id', 'address', 'city'], records: 50 });
      assert.equal((await runJson(first)).code, 0);
      assert.ok(!('yearBuilt' in (await columnTypes(t, 'homes'))));
      const second = pipeline('evolve', t, {
        view: ['id', 'address', 'city', 'yearBuilt'],
        records: 80,
      });
      const run = await runJson(second);
      assert.equal(run.code, 0, run.stderr);
      const types = await columnTypes(t, 'homes');
      assert.equal(types.yearBuilt, t.integerType, 'typed, not text');
      const { old, fresh } = await t.one<{ old: number; fresh: number }>(
        `select sum(case when "yearBuilt" is null then 1 else 0 end) as old, count("yearBuilt") as fresh from homes`,
      );
      assert.ok(fresh > 0, 'the new rows have the column');
      assert.equal(old + fresh, await count(t, 'select count(*) as n from homes'));
    });
  });

  describe(`bad rows, credits and time on ${kind}`, { skip: reason }, () => {
    test('malformed rows go to _sluice_rejects with file, line, raw text and reason', async () => {
      for (const format of ['csv', 'json'] as const) {
        await harness.reset();
        await harness.faults([], 'corrupt=0.05');
        const t = await target(`rejects-${format}`);
        const file = pipeline(`rejects-${format}`, t, { format, records: 400, write: 'append' });
        const run = await runJson(file);
        assert.equal(run.code, 0, run.stderr);
        const job = run.summary.jobs[0];
        assert.ok(job.rejected > 0, `${format}: some rows were corrupted`);
        assert.equal(
          job.loaded + job.rejected,
          400,
          `${format}: every record is loaded or kept aside`,
        );
        const rejects = await t.all<{
          file_name: string;
          line: number;
          raw: string;
          reason: string;
        }>('select * from _sluice_rejects');
        assert.equal(rejects.length, job.rejected);
        for (const r of rejects) {
          assert.match(r.file_name, format === 'csv' ? /_\d+\.csv$/ : /_\d+\.txt$/);
          assert.ok(r.line >= 1 && r.raw.length > 0 && r.reason.length > 0, JSON.stringify(r));
        }
        assert.equal(await count(t, 'select count(*) as n from homes'), job.loaded);
      }
    });

    test('max_rejects fails the job past the limit', async () => {
      await harness.faults([], 'corrupt=0.05');
      const t = await target('max-rejects');
      const file = pipeline('max-rejects', t, { records: 400, extra: '    max_rejects: 1\n' });
      const run = await runJson(file);
      assert.equal(run.code, 2);
      const job = run.summary.jobs[0];
      assert.equal(job.status, 'failed');
      assert.match(job.error.message, /max_rejects/);
    });

    test('the credit guard refuses a job that needs more credits than are left, before spending', async () => {
      await harness.setCredits({ property_credits_allotted: 100, property_credits_used: 0 });
      const file = pipeline('guard', await target('guard'), { records: 500 });
      const run = await runCli(['run', file, '--no-progress'], emulatorEnv(harness));
      assert.equal(run.code, 3, run.stdout + run.stderr);
      assert.match(run.stdout + run.stderr, /needs 500 property credits, 100 remain/);
      assert.equal(downloadsStarted(), 0);
    });

    test('max_credits caps a job', async () => {
      const file = pipeline('cap', await target('cap'), {
        records: 500,
        extra: '    max_credits: 100\n',
      });
      const run = await runJson(file);
      assert.equal(run.code, 3);
      assert.match(run.summary.jobs[0].error.message, /max_credits of 100/);
      assert.equal(downloadsStarted(), 0);
    });

    test('plan shows counts and credits and spends nothing', async () => {
      const file = pipeline('plan', await target('plan'), { records: 300 });
      const before = harness.emulator.context.state.account.used.property;
      const plan = await runCli(['plan', file, '--json'], emulatorEnv(harness));
      assert.equal(plan.code, 0, plan.stderr);
      const doc = JSON.parse(plan.stdout);
      assert.equal(doc.guard, 'pass');
      assert.equal(doc.jobs[0].records, 300);
      assert.equal(doc.jobs[0].needed.property, 300);
      assert.equal(harness.emulator.context.state.account.used.property, before);
    });
  });

  describe(`polling and locking on ${kind}`, { skip: reason }, () => {
    let slow: EmulatorHarness;
    before(async () => {
      // 20 records a second: a 400-record download takes 20 s of emulator time.
      slow = await EmulatorHarness.start({ scale: 0.1, fileRecords: 100, rate: 20 });
    });
    after(() => slow.close());
    beforeEach(() => slow.reset());

    const withTimeout = (file: string, timeout: string) =>
      writeFileSync(file, readFileSync(file, 'utf8').replace('timeout: 60s', timeout));

    test('a timeout with on_timeout: cancel cancels the download and loads what was delivered', async () => {
      const t = await target('timeout');
      const file = pipeline('timeout', t, { records: 400 });
      withTimeout(file, 'timeout: 1s, on_timeout: cancel');
      const run = await runJson(file, emulatorEnv(slow), [], slow);
      assert.equal(run.code, 1);
      const job = run.summary.jobs[0];
      assert.equal(job.status, 'timed_out');
      const download = slow.emulator.context.state.downloads.at(-1)!;
      assert.ok(download.cancelled, 'the download was cancelled');
      assert.equal(job.downloaded, download.cancelled?.delivered);
      assert.equal(
        await count(t, 'select count(*) as n from homes'),
        download.cancelled?.delivered,
        'records paid for before the cancel are loaded',
      );
    });

    test('on_timeout: leave keeps the download; the next run re-attaches instead of paying again', async () => {
      const t = await target('leave');
      const file = pipeline('leave', t, { records: 300 });
      withTimeout(file, 'timeout: 500ms, on_timeout: leave');
      const first = await runJson(file, emulatorEnv(slow), [], slow);
      assert.equal(first.code, 1);
      assert.equal(first.summary.jobs[0].status, 'timed_out');
      await slow.advanceClock(60_000);
      const second = await runJson(file, emulatorEnv(slow), [], slow);
      assert.equal(second.code, 0, second.stderr);
      const job = second.summary.jobs[0];
      assert.equal(job.reattached, true);
      assert.equal(job.loaded, 300);
      assert.equal(slow.emulator.context.state.downloads.length, 1, 'one download, paid once');
      const status = await runCli(['status', file, '--json'], emulatorEnv(slow));
      assert.equal(status.code, 0, status.stderr);
      const doc = JSON.parse(status.stdout);
      assert.equal(doc.downloads[0].status, 'loaded');
      assert.equal(doc.runs.length, 2);
    });

    test('two runs at once: the second exits with a clear message, or waits with --wait', async () => {
      const t = await target('locked');
      const file = pipeline('locked', t, { records: 200 });
      const downloads = () => slow.emulator.context.state.downloads;
      const until = async (what: string, check: () => boolean) => {
        const deadline = Date.now() + 30_000;
        while (!check()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      const first = runJson(file, emulatorEnv(slow), [], null);
      await until('the first run to start its download', () => downloads().length === 1);

      const second = await runJson(file, emulatorEnv(slow), [], null);
      assert.equal(second.code, 1, second.stdout);
      assert.match(second.stderr, /another run of pipeline 'locked' is in progress.*--wait/);
      assert.equal(downloads().length, 1, 'the second run started no download');

      const waiting = runCli(['run', file, '--json', '--no-progress', '--wait'], emulatorEnv(slow));
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(downloads().length, 1, 'the waiting run starts nothing while the first runs');

      await slow.advanceClock(60_000);
      const done = await first;
      assert.equal(done.code, 0, done.stderr);
      assert.equal(done.summary.jobs[0].loaded, 200);
      // Then the waiting run finds the pipeline has run: it says so, and buys nothing again.
      const third = await waiting;
      assert.equal(third.code, 0, third.stderr);
      assert.match(third.stderr, /waiting for it to end/);
      assert.equal(downloads().length, 1, 'no second purchase');
      assert.equal(await count(t, 'select count(*) as n from homes'), 200, 'no row twice');
      const summary = JSON.parse(third.stdout);
      assert.equal(summary.replayed, true);
      assert.equal(summary.original.run_id, done.summary.run_id);
      assert.equal(summary.original.jobs[0].loaded, 200);
      assert.equal(
        await count(t, 'select count(*) as n from _sluice_runs'),
        1,
        'neither the refused run nor the replay recorded a run of its own',
      );
    });
  });
}
