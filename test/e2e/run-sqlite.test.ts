import { strict as assert } from 'node:assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { EmulatorHarness } from '../helpers/emulator.js';
import {
  emulatorEnv,
  query,
  queryOne,
  runCli,
  tempDir,
  writePipeline,
} from '../helpers/pipeline.js';

/**
 * `sluice run` end to end: the CLI in this process against a live emulator over HTTP, loading
 * real SQLite files. Small result files (200 records) so every run spans several files.
 */

interface JobOptions {
  query?: string;
  records?: number | 'all';
  format?: 'csv' | 'json';
  write?: 'append' | 'merge' | 'replace';
  view?: string[];
  extra?: string;
}

function pipeline(dir: string, name: string, db: string, job: JobOptions = {}): string {
  const view = job.view
    ? `views:\n  v_${name.replaceAll('-', '_')}:\n    fields: [${job.view.join(', ')}]\n`
    : '';
  return writePipeline(
    dir,
    name,
    `version: 1
name: ${name}
source:
  api: v4
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
destination: sqlite:${db}
${view}jobs:
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

describe('write modes', () => {
  test('append adds every run, merge keeps one row per id, replace swaps in the new table', async () => {
    for (const write of ['append', 'merge', 'replace'] as const) {
      const db = join(dir, `modes-${write}.sqlite`);
      const file = pipeline(dir, `modes-${write}`, db, { write, records: 450 });
      const env = emulatorEnv(harness);
      const first = await runCli(['run', file, '--json', '--no-progress'], env);
      assert.equal(first.code, 0, first.stderr);
      const summary = JSON.parse(first.stdout);
      assert.equal(summary.status, 'succeeded');
      assert.equal(summary.jobs[0].downloaded, 450);
      assert.equal(summary.jobs[0].loaded, 450);
      assert.equal(summary.jobs[0].files_loaded, 3);
      const second = await runCli(['run', file, '--json', '--no-progress'], env);
      assert.equal(second.code, 0, second.stderr);
      const { n, ids } = queryOne<{ n: number; ids: number }>(
        db,
        'select count(*) n, count(distinct id) ids from homes',
      );
      assert.equal(n, write === 'append' ? 900 : 450, write);
      assert.equal(ids, 450, write);
      const files = query<{ n: number }>(db, 'select count(*) n from _sluice_files');
      assert.equal(files[0]!.n, 6, 'each run loads its own download, three files each');
      const staging = query<{ name: string }>(
        db,
        "select name from sqlite_master where type = 'table' and name like '%sluice_new%'",
      );
      assert.deepEqual(staging, [], 'no staging table is left behind');
      const orphans = queryOne<{ n: number }>(
        db,
        'select count(*) n from homes__prices where _parent_id not in (select id from homes)',
      );
      assert.equal(orphans.n, 0, 'child rows all belong to a row of the table');
      const meta = query<{ d: string }>(db, 'select distinct _sluice_download_id d from homes');
      assert.equal(
        meta.length,
        write === 'append' ? 2 : 1,
        'rows carry the download they came from',
      );
    }
  });

  test('replace never shows a half table to a reader', async () => {
    const db = join(dir, 'replace-reader.sqlite');
    const file = pipeline(dir, 'replace-reader', db, { write: 'replace', records: 600 });
    const env = emulatorEnv(harness);
    assert.equal((await runCli(['run', file, '--no-progress'], env)).code, 0);
    // Slow every file down so the second run's load takes a while, and watch it from outside.
    await harness.faults([{ match: 'GET /files/', action: 'slow', delay_ms: 150, times: 10 }]);
    const reader = new Database(db, { readonly: true });
    const seen = new Set<number>();
    let running = true;
    const watch = (async () => {
      while (running) {
        seen.add((reader.prepare('select count(*) n from homes').get() as { n: number }).n);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const second = await runCli(['run', file, '--no-progress'], env);
    running = false;
    await watch;
    reader.close();
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual([...seen], [600], 'the reader only ever saw a whole table');
  });

  test('a new column appearing between runs is added; older rows keep NULL in it', async () => {
    const db = join(dir, 'evolve.sqlite');
    const env = emulatorEnv(harness);
    const first = pipeline(dir, 'evolve', db, { view: ['id', 'address', 'city'], records: 50 });
    assert.equal((await runCli(['run', first, '--no-progress'], env)).code, 0);
    const columnsBefore = query<{ name: string }>(
      db,
      'select name from pragma_table_info(?)',
      'homes',
    ).map((c) => c.name);
    assert.ok(!columnsBefore.includes('yearBuilt'));
    const second = pipeline(dir, 'evolve', db, {
      view: ['id', 'address', 'city', 'yearBuilt'],
      records: 80,
    });
    const run = await runCli(['run', second, '--json', '--no-progress'], env);
    assert.equal(run.code, 0, run.stderr);
    const columns = query<{ name: string }>(
      db,
      'select name from pragma_table_info(?)',
      'homes',
    ).map((c) => c.name);
    assert.ok(columns.includes('yearBuilt'), columns.join(','));
    const { typed } = queryOne<{ typed: number }>(
      db,
      "select count(*) typed from homes where typeof(yearBuilt) = 'integer'",
    );
    assert.ok(typed > 0, 'yearBuilt is stored as integers, not text');
  });
});

describe('bad rows, credits and time', () => {
  test('malformed rows go to _sluice_rejects with file, line, raw text and reason', async () => {
    for (const format of ['csv', 'json'] as const) {
      await harness.reset();
      await harness.faults([], 'corrupt=0.05');
      const db = join(dir, `rejects-${format}.sqlite`);
      const file = pipeline(dir, `rejects-${format}`, db, {
        format,
        records: 400,
        write: 'append',
      });
      const run = await runCli(['run', file, '--json', '--no-progress'], emulatorEnv(harness));
      assert.equal(run.code, 0, run.stderr);
      const job = JSON.parse(run.stdout).jobs[0];
      assert.ok(job.rejected > 0, `${format}: some rows were corrupted`);
      assert.equal(
        job.loaded + job.rejected,
        400,
        `${format}: every record is loaded or kept aside`,
      );
      const rejects = query<{ file_name: string; line: number; raw: string; reason: string }>(
        db,
        'select * from _sluice_rejects',
      );
      assert.equal(rejects.length, job.rejected);
      for (const r of rejects) {
        assert.match(r.file_name, format === 'csv' ? /_\d+\.csv$/ : /_\d+\.txt$/);
        assert.ok(r.line >= 1 && r.raw.length > 0 && r.reason.length > 0, JSON.stringify(r));
      }
      const { n } = queryOne<{ n: number }>(db, 'select count(*) n from homes');
      assert.equal(n, job.loaded);
    }
  });

  test('max_rejects fails the job past the limit', async () => {
    await harness.faults([], 'corrupt=0.05');
    const db = join(dir, 'max-rejects.sqlite');
    const file = pipeline(dir, 'max-rejects', db, { records: 400, extra: '    max_rejects: 1\n' });
    const run = await runCli(['run', file, '--json', '--no-progress'], emulatorEnv(harness));
    assert.equal(run.code, 1);
    const job = JSON.parse(run.stdout).jobs[0];
    assert.equal(job.status, 'failed');
    assert.match(job.error.message, /max_rejects/);
  });

  test('the credit guard refuses a job that needs more credits than are left, before spending', async () => {
    await harness.setCredits({ property_credits_allotted: 100, property_credits_used: 0 });
    const db = join(dir, 'guard.sqlite');
    const file = pipeline(dir, 'guard', db, { records: 500 });
    const run = await runCli(['run', file, '--no-progress'], emulatorEnv(harness));
    assert.equal(run.code, 3, run.stdout + run.stderr);
    assert.match(run.stdout + run.stderr, /needs 500 property credits, 100 remain/);
    assert.equal(downloadsStarted(), 0);
  });

  test('max_credits caps a job', async () => {
    const file = pipeline(dir, 'cap', join(dir, 'cap.sqlite'), {
      records: 500,
      extra: '    max_credits: 100\n',
    });
    const run = await runCli(['run', file, '--json', '--no-progress'], emulatorEnv(harness));
    assert.equal(run.code, 3);
    assert.match(JSON.parse(run.stdout).jobs[0].error.message, /max_credits of 100/);
    assert.equal(downloadsStarted(), 0);
  });

  test('plan shows counts and credits and spends nothing', async () => {
    const file = pipeline(dir, 'plan', join(dir, 'plan.sqlite'), { records: 300 });
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

describe('polling', () => {
  let slow: EmulatorHarness;
  before(async () => {
    // 20 records a second: a 400-record download takes 20 s of emulator time.
    slow = await EmulatorHarness.start({ scale: 0.1, fileRecords: 100, rate: 20 });
  });
  after(() => slow.close());

  test('a timeout with on_timeout: cancel cancels the download and loads what was delivered', async () => {
    const db = join(dir, 'timeout.sqlite');
    const file = pipeline(dir, 'timeout', db, { records: 400 });
    const body = readFileSync(file, 'utf8').replace(
      'timeout: 60s',
      'timeout: 1s, on_timeout: cancel',
    );
    writeFileSync(file, body);
    const run = await runCli(['run', file, '--json', '--no-progress'], emulatorEnv(slow));
    assert.equal(run.code, 1);
    const job = JSON.parse(run.stdout).jobs[0];
    assert.equal(job.status, 'timed_out');
    const download = slow.emulator.context.state.downloads.at(-1)!;
    assert.ok(download.cancelled, 'the download was cancelled');
    assert.equal(job.downloaded, download.cancelled?.delivered);
    const { n } = queryOne<{ n: number }>(db, 'select count(*) n from homes');
    assert.equal(n, download.cancelled?.delivered, 'records paid for before the cancel are loaded');
  });

  test('on_timeout: leave keeps the download; the next run re-attaches instead of paying again', async () => {
    await slow.reset();
    const db = join(dir, 'leave.sqlite');
    const file = pipeline(dir, 'leave', db, { records: 300 });
    const body = readFileSync(file, 'utf8').replace(
      'timeout: 60s',
      'timeout: 500ms, on_timeout: leave',
    );
    writeFileSync(file, body);
    const first = await runCli(['run', file, '--json', '--no-progress'], emulatorEnv(slow));
    assert.equal(first.code, 1);
    assert.equal(JSON.parse(first.stdout).jobs[0].status, 'timed_out');
    await slow.advanceClock(60_000);
    const second = await runCli(['run', file, '--json', '--no-progress'], emulatorEnv(slow));
    assert.equal(second.code, 0, second.stderr);
    const job = JSON.parse(second.stdout).jobs[0];
    assert.equal(job.reattached, true);
    assert.equal(job.loaded, 300);
    assert.equal(slow.emulator.context.state.downloads.length, 1, 'one download, paid once');
    const status = await runCli(['status', file, '--json'], emulatorEnv(slow));
    assert.equal(status.code, 0, status.stderr);
    const doc = JSON.parse(status.stdout);
    assert.equal(doc.downloads[0].status, 'loaded');
    assert.equal(doc.runs.length, 2);
  });
});
