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
import { activeResources, lingering } from '../helpers/resources.js';
import { stopAt } from '../helpers/runs.js';

/**
 * Regression tests for what the run's core got wrong before it was redesigned in stages: each
 * test is named after what broke, and runs on every destination.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.2, fileRecords: 200 });
  dir = tempDir();
});
after(() => harness.close());
beforeEach(() => harness.reset());

const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';

function pipeline(target: TestTarget, name: string, body: string): string {
  return writePipeline(
    dir,
    `${target.kind}-${name}`,
    `${pipelineHead(name, target.destinationYaml)}${body}`,
  );
}

function homes(
  options: {
    table?: string;
    query?: string;
    records?: number;
    write?: string;
    extra?: string;
  } = {},
) {
  return `jobs:
  homes:
    type: properties
    query: '${options.query ?? 'province:TX'}'
    records: ${options.records ?? 300}
    format: csv
    write: ${options.write ?? 'merge'}
${options.table ? `    table: ${options.table}\n` : ''}    ${POLL}
${options.extra ?? ''}`;
}

async function run(file: string, extra: string[] = [], env = emulatorEnv(harness)) {
  const result = await runCli(
    ['run', file, '--json', '--no-progress', ...extra],
    env,
    undefined,
    harness.clock(),
  );
  return { ...result, summary: result.stdout ? JSON.parse(result.stdout) : undefined };
}

async function count(t: TestTarget, sql: string): Promise<number> {
  return Number((await t.one<{ n: number }>(sql)).n);
}

function downloads() {
  return harness.emulator.context.state.downloads;
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`the run's core on ${kind}`, { skip: reason }, () => {
    test('a replace whose child table names reach the identifier limit keeps every live table', async () => {
      // 45 + `__transactions` = 59 bytes: the staging name of the child cut at 63 bytes used to be
      // the live child's own name, which the next replace dropped before its download.
      const table = `h${'x'.repeat(44)}`;
      const t = await target('long-names');
      const file = pipeline(t, 'long-names', homes({ table, write: 'replace', records: 300 }));
      const first = await run(file);
      assert.equal(first.code, 0, first.stderr);
      for (const name of first.summary.jobs[0].tables as string[]) {
        assert.ok(Buffer.byteLength(name) <= t.maxIdentifierBytes, name);
      }
      const childName = (first.summary.jobs[0].tables as string[]).find((n) =>
        n.includes('transactions'),
      )!;
      const before = await count(t, `select count(*) as n from "${childName}"`);
      assert.ok(before > 0);
      const second = await run(file);
      assert.equal(second.code, 0, second.stderr);
      assert.equal(await count(t, `select count(*) as n from "${table}"`), 300);
      assert.equal(await count(t, `select count(*) as n from "${childName}"`), before);
      const staging = (await t.tables('')).filter((n) => n.includes('sluice_new'));
      assert.deepEqual(staging, []);
    });

    test('a replace whose query now matches nothing empties its child tables too', async () => {
      const t = await target('replace-empty');
      const full = pipeline(t, 'replace-empty', homes({ write: 'replace', records: 200 }));
      assert.equal((await run(full)).code, 0);
      assert.ok((await count(t, 'select count(*) as n from homes__prices')) > 0);
      const none = pipeline(
        t,
        'replace-empty',
        homes({ write: 'replace', query: 'city:Nowhereville' }),
      );
      const second = await run(none);
      assert.equal(second.code, 0, second.stderr);
      assert.equal(second.summary.jobs[0].status, 'empty');
      assert.equal(await count(t, 'select count(*) as n from homes'), 0);
      assert.equal(
        await count(t, 'select count(*) as n from homes__prices'),
        0,
        'no stale child rows',
      );
      assert.equal(await count(t, 'select count(*) as n from homes__people'), 0);
    });

    test('a query that matches nothing creates the empty tables and says empty', async () => {
      const t = await target('empty');
      const file = pipeline(
        t,
        'empty',
        `views:\n  v_empty:\n    fields: [id, address, yearBuilt, prices]\n${homes({ query: 'city:Nowhereville', extra: '    view: v_empty\n' })}`,
      );
      const result = await run(file);
      assert.equal(result.code, 0, result.stderr);
      const job = result.summary.jobs[0];
      assert.equal(job.status, 'empty');
      assert.equal(job.found, 0);
      assert.deepEqual(job.tables, ['homes', 'homes__prices']);
      assert.equal(downloads().length, 0, 'nothing was downloaded');
      const columns = await t.columns('homes');
      assert.deepEqual(columns.map((c) => c.name).sort(), [
        '_sluice_download_id',
        '_sluice_loaded_at',
        'address',
        'id',
        'yearBuilt',
      ]);
      assert.equal(await count(t, 'select count(*) as n from homes'), 0);
    });

    test("the summary's tables are the tables the job made, no more", async () => {
      const t = await target('tables');
      const file = pipeline(
        t,
        'tables',
        `views:\n  v_two:\n    fields: [id, address, prices, statuses]\n${homes({ extra: '    view: v_two\n' })}`,
      );
      const result = await run(file);
      assert.equal(result.code, 0, result.stderr);
      const made = result.summary.jobs[0].tables;
      assert.deepEqual(made, ['homes', 'homes__prices', 'homes__statuses']);
      assert.deepEqual(await t.tables('homes'), [...made].sort());
      const login = await run(file, [], emulatorEnv(harness, { SLUICE_PASSWORD: 'wrong' }));
      assert.equal(login.code, 2);
      assert.equal(login.summary.status, 'error', 'a failed login is no run: nothing recorded');
      assert.equal(login.summary.error.step, 'login');
      assert.deepEqual(await t.tables('homes'), [...made].sort(), 'and no table');
    });

    test('a failure outside any job records a failed run, with its stage', async () => {
      const t = await target('views-500');
      const file = pipeline(
        t,
        'views-500',
        `views:\n  v_x:\n    fields: [id, address]\n${homes({ extra: '    view: v_x\n' })}`,
      );
      await harness.faults([{ match: 'GET /v4/views', action: '500', times: 50, retry_after: 0 }]);
      const result = await run(file);
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.summary.status, 'failed');
      assert.equal(result.summary.error.stage, 'views');
      const [row] = await t.all<{ status: string; stage: string; error_code: string }>(
        'select status, stage, error_code from _sluice_runs',
      );
      assert.deepEqual(
        { ...row },
        { status: 'failed', stage: 'views', error_code: 'SLUICE_API_500' },
      );
    });

    test('a database error inside a job fails the job at the load stage, and the run', async () => {
      const t = await target('db-error');
      const file = pipeline(t, 'db-error', homes({ records: 100 }));
      // A table the user made, with a column the data never fills and the database insists on.
      const make = 'create table homes (id text, must_have text not null)';
      await t.exec(make);
      const result = await run(file);
      assert.notEqual(result.code, 0);
      const job = result.summary.jobs[0];
      assert.equal(job.status, 'failed');
      assert.equal(job.stage, 'load');
      assert.equal(job.error.code, 'SLUICE_DESTINATION_DATA');
      assert.doesNotMatch(result.stderr, /internal error|\n\s+at /);
      const [row] = await t.all<{ status: string; stage: string }>(
        'select status, stage from _sluice_runs',
      );
      assert.deepEqual({ ...row }, { status: 'failed', stage: 'load' });
      const [jobRow] = await t.all<{ status: string; stage: string }>(
        'select status, stage from _sluice_jobs',
      );
      assert.deepEqual({ ...jobRow }, { status: 'failed', stage: 'load' });
    });

    test('credits: a run reports what it spent; a re-attached download is not counted again', async () => {
      const slow = await EmulatorHarness.start({ scale: 0.1, fileRecords: 100, rate: 20 });
      try {
        const t = await target('credits');
        const file = pipeline(
          t,
          'credits',
          homes({ query: '*', records: 300 }).replace(
            'timeout: 60s',
            'timeout: 1s, on_timeout: leave',
          ),
        );
        const env = emulatorEnv(slow);
        const first = await runCli(
          ['run', file, '--json', '--no-progress'],
          env,
          undefined,
          slow.clock(),
        );
        assert.equal(first.code, 1, first.stderr);
        const paid = JSON.parse(first.stdout);
        assert.equal(paid.jobs[0].status, 'timed_out');
        await slow.advanceClock(60_000);
        const second = await runCli(
          ['run', file, '--json', '--no-progress'],
          env,
          undefined,
          slow.clock(),
        );
        assert.equal(second.code, 0, second.stderr);
        const summary = JSON.parse(second.stdout);
        assert.equal(summary.jobs[0].reattached, true);
        assert.deepEqual(summary.jobs[0].credits, {}, 'this run spent nothing');
        assert.deepEqual(summary.jobs[0].download_credits, { property: 300 });
        assert.deepEqual(summary.credits, {});
        assert.equal(slow.emulator.context.state.account.used.property, 300, 'paid once');
        const status = await runCli(['status', file, '--json'], env);
        const runs = JSON.parse(status.stdout).runs as {
          run_id: string;
          credits_paid: Record<string, number>;
        }[];
        const byId = new Map(runs.map((r) => [r.run_id, r.credits_paid]));
        assert.deepEqual(byId.get(paid.run_id), { property: 300 }, 'the run that started it paid');
        assert.deepEqual(byId.get(summary.run_id), {});
      } finally {
        await slow.close();
      }
    });

    test('max_rejects: the job fails with exit 2, keeps its download, and the next run loads the rest without paying', async () => {
      await harness.faults([], 'corrupt=0.05');
      const t = await target('max-rejects');
      const file = pipeline(
        t,
        'max-rejects',
        homes({ records: 600, write: 'append', extra: '    max_rejects: 3\n' }),
      );
      const first = await run(file);
      assert.equal(first.code, 2, first.stderr);
      const job = first.summary.jobs[0];
      assert.equal(job.status, 'failed');
      assert.equal(job.error.code, 'SLUICE_TOO_MANY_REJECTS');
      assert.match(job.error.message, /download is kept/);
      assert.ok(
        (await count(t, 'select count(*) as n from _sluice_rejects')) > 3,
        'the reasons can be read',
      );
      const raised = pipeline(
        t,
        'max-rejects',
        homes({ records: 600, write: 'append', extra: '    max_rejects: 100\n' }),
      );
      const second = await run(raised);
      assert.equal(second.code, 0, second.stderr);
      const done = second.summary.jobs[0];
      assert.equal(done.reattached, true);
      assert.equal(downloads().length, 1, 'bought once');
      assert.equal(done.loaded + done.rejected, 600);
      assert.equal(await count(t, 'select count(*) as n from homes'), done.loaded);
      assert.equal(await count(t, 'select count(*) as n from _sluice_rejects'), done.rejected);
    });

    test('an append loads files at once where the destination has several writers, each with its own state row; a merge one at a time', async () => {
      const t = await target('files-at-once');
      /** The order the files committed in, and the file that came slowly. */
      const order = async (write: string) => {
        await harness.reset();
        // The first file asked for comes slowly: a file loaded beside it commits first.
        await harness.faults([{ match: 'GET /files/', action: 'slow', delay_ms: 1500, times: 1 }]);
        const table = `homes_${write}`;
        const file = pipeline(t, `files-at-once-${write}`, homes({ records: 600, write, table }));
        // Parse workers too, shared by the files loaded at once.
        const env = { ...emulatorEnv(harness), SLUICE_PARSE_WORKERS: '2' };
        const result = await run(file, ['--log-level', 'info'], env);
        assert.equal(result.code, 0, result.stderr);
        assert.equal(result.summary.jobs[0].loaded, 600);
        const slow = (await harness.requests()).find(
          (r) => r.path.startsWith('/files/') && r.duration_ms >= 1500,
        );
        assert.ok(slow, 'a file came slowly');
        const committed = [...result.stderr.matchAll(/loaded \w+_(\d)\.csv/g)].map((m) =>
          Number(m[1]),
        );
        assert.deepEqual([...committed].sort(), [0, 1, 2]);
        return { committed, slow: Number(/_(\d)\.csv/.exec(slow.path)![1]) };
      };
      const appended = await order('append');
      if (t.writersAtOnce > 1) {
        assert.ok(
          appended.committed.indexOf(appended.slow) > 0,
          `two files at once: another file committed before the slow one (${appended.committed})`,
        );
      } else assert.deepEqual(appended.committed, [0, 1, 2], 'one writer: one file at a time');
      assert.equal(await count(t, 'select count(*) as n from homes_append'), 600);
      const files = await t.all<{ file_index: number; rows_loaded: number }>(
        'select file_index, rows_loaded from _sluice_files order by file_index',
      );
      assert.deepEqual(
        files.map((f) => [Number(f.file_index), Number(f.rows_loaded)]),
        [
          [0, 200],
          [1, 200],
          [2, 200],
        ],
      );
      // A later file's record wins a merge: its files are loaded in order, whatever the writers.
      assert.deepEqual((await order('merge')).committed, [0, 1, 2]);
    });

    test('merging keeps child tables indexed on their parent link, so each file costs the same', async () => {
      const t = await target('merge-index');
      const file = pipeline(t, 'merge-index', homes({ records: 400 }));
      assert.equal((await run(file)).code, 0);
      assert.equal((await run(file)).code, 0, 'a second merge deletes child rows by parent');
      assert.deepEqual(await t.indexes('homes__prices'), ['homes__prices__sluice_parent']);
    });

    test('an append indexes child tables on their parent link when the job ends, also after a crash', async () => {
      const t = await target('append-index');
      const file = pipeline(
        t,
        'append-index',
        homes({
          records: 400,
          write: 'append',
          extra: '    nested: tables\n    auto_trace: true\n',
        }),
      );
      await stopAt(file, harness, 'file-committed:homes@0', 'SIGKILL');
      assert.ok((await count(t, 'select count(*) as n from homes__prices')) > 0);
      assert.deepEqual(await t.indexes('homes__prices'), [], 'not yet: rows are still coming');
      // Tables whose rows a re-loaded parent replaces are indexed from the start.
      assert.deepEqual(await t.indexes('homes__owners'), ['homes__owners__sluice_parent']);
      assert.deepEqual(await t.indexes('people__phone_numbers'), [
        'people__phone_numbers__sluice_parent',
      ]);
      const second = await run(file);
      assert.equal(second.code, 0, second.stderr);
      assert.equal(await count(t, 'select count(*) as n from homes'), 400);
      assert.deepEqual(await t.indexes('homes__prices'), ['homes__prices__sluice_parent']);
      assert.deepEqual(await t.indexes('homes__brokers'), ['homes__brokers__sluice_parent']);
    });

    test('after a replace, _sluice_files names the target table, not its staging table', async () => {
      const t = await target('files-table');
      const file = pipeline(t, 'files-table', homes({ write: 'replace', records: 400 }));
      assert.equal((await run(file)).code, 0);
      const names = await t.all<{ table_name: string }>(
        'select distinct table_name from _sluice_files',
      );
      assert.deepEqual(
        names.map((r) => r.table_name),
        ['homes'],
      );
    });

    test('status of a destination no run has used answers, and leaves nothing open (PostgreSQL kept a pooled connection, and the process, 10 s)', async () => {
      const t = await target('status-empty');
      // The database (the PostgreSQL schema, the file) is there; sluice's state is not.
      await t.exec('create table unrelated (x integer)');
      const file = pipeline(t, 'status-empty', homes());
      // What keeps a process alive once its work is done (a socket, a timer) is an active
      // resource: `status` must leave none behind, so its process exits as soon as it answers.
      const before = activeResources();
      const status = await runCli(['status', file], emulatorEnv(harness));
      const left = await lingering(before);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /no state found at .*pipeline 'status-empty' has not run/);
      assert.deepEqual(left, []);
    });
  });
}
