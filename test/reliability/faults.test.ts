import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { pipelineHead, tempDir, writePipeline } from '../helpers/pipeline.js';
import { postgresUrl } from '../helpers/postgres.js';
import {
  creditsUsed,
  downloadsByType,
  type Finished,
  runToEnd,
  snapshot,
  startRun,
  type TableSnapshot,
  whilePaused,
} from '../helpers/runs.js';

/**
 * Faults of the service and of the database: runs under each of the emulator's fault mixes, and
 * with a PostgreSQL backend terminated mid-COPY, a table locked by another session, the SQLite
 * database locked by another program. Retried until they succeed (each failure must say a retry
 * can help: exit 1), after which every table equals the reference load, each job was bought once
 * and the credits are one purchase.
 */

const JOBS = `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 400
    format: csv
    write: append
    auto_trace: true
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
  shops:
    type: businesses
    query: 'province:TX'
    records: 300
    format: json
    write: merge
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
`;

const MIXES: [string, string][] = [
  ['503s', '503=0.15,retry_after=0'],
  ['429s with Retry-After', '429=0.1,retry_after=1'],
  ['500s', '500=0.1,retry_after=0'],
  ['connection resets', 'reset=0.05'],
  ['files cut mid-way', 'cut=0.4'],
  ['slow answers', 'slow=0.2,slow_ms=300'],
  [
    'everything at once',
    '503=0.05,500=0.05,429=0.03,reset=0.02,cut=0.2,slow=0.05,slow_ms=100,retry_after=0',
  ],
];

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.5, fileRecords: 150, churn: 0 });
  dir = tempDir('sluice-faults-');
});
after(() => harness.close());

export const figures = { trials: 0, faults: 0 };

/** Runs again until the pipeline succeeds; every failure on the way must be worth a retry. */
async function untilDone(file: string, on: EmulatorHarness, env: Record<string, string> = {}) {
  for (let attempt = 1; attempt <= 8; attempt++) {
    const run = startRun(file, on, { env });
    const done: Finished = await run.finished;
    if (done.code === 0) return JSON.parse(done.stdout);
    assert.equal(done.code, 1, `a fault is worth a retry (exit 1): ${done.stdout}\n${done.stderr}`);
    assert.equal(JSON.parse(done.stdout).status !== undefined, true);
  }
  assert.fail(`${file} did not succeed in 8 runs`);
}

async function pgQuery(sql: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: postgresUrl() });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`faults on ${kind}`, { skip: reason }, () => {
    let reference: Record<string, TableSnapshot>;
    let referenceCredits: Record<string, number>;
    const file = (t: TestTarget, name: string, destination = t.destinationYaml) =>
      writePipeline(dir, `${kind}-${name}`, `${pipelineHead('faults', destination)}${JOBS}`);
    const check = async (t: TestTarget, on = harness) => {
      assert.deepEqual(await snapshot(t), reference, 'the tables equal the reference load');
      assert.deepEqual(
        downloadsByType(on),
        { properties: 1, businesses: 1 },
        'one download per job',
      );
      assert.deepEqual(creditsUsed(on), referenceCredits, 'credits of one purchase');
      figures.trials++;
      figures.faults++;
    };

    before(async () => {
      await harness.reset();
      const t = await target('reference');
      await runToEnd(file(t, 'reference'), harness);
      reference = await snapshot(t);
      referenceCredits = creditsUsed(harness);
    });

    for (const [name, spec] of MIXES) {
      test(`under ${name} (${spec})`, async () => {
        await harness.reset();
        await harness.faults([], spec);
        const t = await target(name.replace(/\W+/g, '_'));
        await untilDone(file(t, name.replace(/\W+/g, '_')), harness);
        await harness.clearFaults();
        await check(t);
      });
    }

    test('result-file URLs that expire mid-download, and a token that expires', async () => {
      const expiring = await EmulatorHarness.start({
        scale: 0.5,
        fileRecords: 150,
        churn: 0,
        tokenTtlMs: 300,
      });
      try {
        await expiring.faults([
          { match: 'GET /files/', action: 'slow', delay_ms: 150, times: 100 },
        ]);
        const t = await target('expiry');
        const expire = setInterval(() => void expiring.expireFiles().catch(() => {}), 700);
        try {
          await untilDone(file(t, 'expiry'), expiring);
        } finally {
          clearInterval(expire);
        }
        const refreshed = (await expiring.requests()).filter((r) => r.status === 403).length;
        assert.ok(refreshed > 0, 'some file URLs expired and were refreshed');
        const relogins = (await expiring.requests()).filter((r) => r.path === '/v4/auth').length;
        assert.ok(relogins > 1, 'the token expired and the client logged in again');
        await check(t, expiring);
      } finally {
        await expiring.close();
      }
    });

    test('corrupt rows are kept aside; the rest loads exactly once', async () => {
      await harness.reset();
      await harness.faults([], 'corrupt=0.03');
      const t = await target('corrupt');
      const summary = await untilDone(file(t, 'corrupt'), harness);
      await harness.clearFaults();
      const jobs = summary.jobs as {
        job: string;
        loaded: number;
        rejected: number;
        downloaded: number;
      }[];
      for (const job of jobs) assert.equal(job.loaded + job.rejected, job.downloaded, job.job);
      assert.ok(jobs.some((j) => j.rejected > 0));
      const now = await snapshot(t);
      assert.equal(now.homes!.rows, jobs[0]!.loaded);
      assert.equal(now.homes!.keys, now.homes!.rows, 'no duplicate');
      assert.equal(now.shops!.rows, jobs[1]!.loaded);
      assert.deepEqual(downloadsByType(harness), { properties: 1, businesses: 1 });
    });

    test('a run that loses its lock stops before committing; the run that took it over loads every row, bought once', async () => {
      await harness.reset();
      const t = await target('lock-lost');
      const pipeline = writePipeline(
        dir,
        `${kind}-lock-lost`,
        `${pipelineHead('lock-lost', t.destinationYaml)}jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 400
    write: replace
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
`,
      );
      // The first run stops after its first poll and is paused there (as a suspended VM would
      // be) while its lock goes and a second run takes it, re-attaches to the download and loads
      // it. Paused, not left to wait a while: a second run slow to start (a loaded machine) found
      // the first one done. The checkpoint's wait is only the time the test has to pause it.
      const first = startRun(pipeline, harness, {
        checkpoint: 'polling:homes',
        env: { SLUICE_CHECKPOINT_WAIT: '5000' },
      });
      await first.reached;
      const second = await whilePaused(first.child, async () => {
        await t.breakLock('pipeline:lock-lost');
        return startRun(pipeline, harness).finished;
      });
      if (t.oneProcess) {
        // The database is the first run's while it lives: no other process can take over.
        assert.equal(second.code, 1, second.stderr);
        assert.equal(JSON.parse(second.stdout).error.code, 'SLUICE_LOCKED');
        const done = await first.finished;
        assert.equal(done.code, 0, `${done.stdout}\n${done.stderr}`);
        const { n } = await t.one<{ n: number }>('select count(*) as n from homes');
        assert.equal(Number(n), 400, 'the table holds the download, whole');
        assert.deepEqual(downloadsByType(harness), { properties: 1 }, 'bought once');
        return;
      }
      assert.equal(second.code, 0, `${second.stdout}\n${second.stderr}`);
      assert.equal(JSON.parse(second.stdout).jobs[0].loaded, 400);
      const done = await first.finished;
      assert.equal(done.code, 1, `${done.stdout}\n${done.stderr}`);
      const summary = JSON.parse(done.stdout);
      assert.equal(summary.jobs[0].error.code, 'SLUICE_LOCK_LOST', done.stdout);
      assert.match(summary.jobs[0].error.message, /no longer holds pipeline 'lock-lost'/);
      const { n } = await t.one<{ n: number }>('select count(*) as n from homes');
      assert.equal(Number(n), 400, 'the table holds the download, whole');
      assert.deepEqual(downloadsByType(harness), { properties: 1 }, 'bought once');
      // The run that lost its lock wrote nothing after: the other run's job row is the last.
      const jobs = await t.all<{ status: string }>(
        `select status from _sluice_jobs order by finished_at`,
      );
      assert.deepEqual(
        jobs.map((j) => j.status),
        ['loaded'],
      );
    });

    test('a download cancelled on the service: what it holds is loaded, and the run says it is incomplete (exit 4)', async () => {
      // Downloads that take seconds, so that one can be cancelled half way.
      const slow = await EmulatorHarness.start({
        scale: 0.5,
        fileRecords: 150,
        rate: 300,
        queueMs: 0,
      });
      try {
        const t = await target('cancelled');
        const pipeline = writePipeline(
          dir,
          `${kind}-cancelled`,
          `${pipelineHead('cancelled', t.destinationYaml)}jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 2000
    write: append
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
`,
        );
        const run = startRun(pipeline, slow, {
          checkpoint: 'polling:homes',
          env: { SLUICE_CHECKPOINT_WAIT: '1000' },
        });
        await run.reached;
        const { token } = (await (
          await fetch(`${slow.v4Url}/auth`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              email: slow.credentials.email,
              password: slow.credentials.password,
            }),
          })
        ).json()) as { token: string };
        const [download] = slow.emulator.context.state.downloads;
        const cancelled = await fetch(`${slow.v4Url}/downloads/${download!.publicId}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${token}` },
        });
        assert.equal(cancelled.status, 200);
        const done = await run.finished;
        assert.equal(done.code, 4, `${done.stdout}\n${done.stderr}`);
        const summary = JSON.parse(done.stdout);
        assert.equal(summary.status, 'incomplete');
        const job = summary.jobs[0];
        assert.equal(job.status, 'cancelled');
        assert.equal(job.error.code, 'SLUICE_DOWNLOAD_CANCELLED');
        assert.equal(job.error.retryable, false);
        assert.ok(job.loaded > 0 && job.loaded < 2000, `a part was loaded: ${job.loaded}`);
        assert.equal(job.loaded, job.downloaded, 'every record paid for is loaded');
        assert.match(job.error.message, /cancelled on the service.*of the \d+ asked for/);
        const { n } = await t.one<{ n: number }>('select count(*) as n from homes');
        assert.equal(Number(n), job.loaded);
        assert.match(done.stderr, /"level":"warn".*cancelled on the service/);
      } finally {
        await slow.close();
      }
    });

    if (kind === 'sqlite') {
      test('two paths to one SQLite file (a symbolic link) share one lock: the second run is refused, nothing bought twice', async () => {
        await harness.reset();
        const t = await target('symlinked');
        const real = t.url.slice('sqlite:'.length);
        const pipeline = file(t, 'symlinked');
        const first = startRun(pipeline, harness, {
          checkpoint: 'polling:homes',
          env: { SLUICE_CHECKPOINT_WAIT: '2000' },
        });
        await first.reached;
        const linked = join(dir, 'symlinked-link');
        mkdirSync(linked, { recursive: true });
        symlinkSync(real, join(linked, 'db.sqlite'));
        // The first run is held (as a suspended machine would be) while the second one tries: a
        // second run slower to start than the checkpoint's pause would otherwise find no lock.
        const second = await whilePaused(
          first.child,
          () =>
            startRun(pipeline, harness, {
              env: { SLUICE_DESTINATION: `sqlite:${join(linked, 'db.sqlite')}` },
            }).finished,
        );
        assert.equal(second.code, 1, second.stderr);
        assert.equal(JSON.parse(second.stdout).error.code, 'SLUICE_LOCKED');
        const done = await first.finished;
        assert.equal(done.code, 0, done.stderr);
        await check(t);
      });

      test('the SQLite database locked by another program: exit 1, then a clean rerun', async () => {
        await harness.reset();
        const locked = await target('sqlite-locked-2');
        const path = locked.url.slice('sqlite:'.length);
        const other = new Database(path);
        other.exec('begin exclusive');
        const blocked = await startRun(file(locked, 'sqlite-locked-2'), harness, {
          env: { SLUICE_SQLITE_BUSY_TIMEOUT_MS: '300' },
        }).finished;
        other.exec('rollback');
        other.close();
        assert.equal(blocked.code, 1, blocked.stderr);
        assert.equal(JSON.parse(blocked.stdout).error.code, 'SLUICE_DESTINATION_BUSY');
        await harness.reset();
        await untilDone(file(locked, 'sqlite-locked-2'), harness);
        await check(locked);
      });
    }

    if (kind === 'duckdb') {
      test('the DuckDB file open in another program: exit 1 naming it, --wait waits for it, then a clean run', async () => {
        await harness.reset();
        const t = await target('duckdb-held');
        // An analyst's session: another process with the file open, as the DuckDB CLI holds it.
        const holder = spawn(
          process.execPath,
          [
            '--input-type=module',
            '-e',
            `const { DuckDBInstance } = await import('@duckdb/node-api');
             await (await DuckDBInstance.create(${JSON.stringify(t.file)})).connect();
             console.log('open'); setInterval(() => {}, 60000);`,
          ],
          { stdio: ['ignore', 'pipe', 'inherit'] },
        );
        try {
          await new Promise<void>((resolve, reject) => {
            holder.stdout!.on('data', (d: Buffer) => d.toString().includes('open') && resolve());
            holder.on('exit', (code) => reject(new Error(`the holder exited with ${code}`)));
          });
          const refused = await startRun(file(t, 'duckdb-held'), harness).finished;
          assert.equal(refused.code, 1, refused.stderr);
          const error = JSON.parse(refused.stdout).error;
          assert.equal(error.code, 'SLUICE_LOCKED');
          assert.match(error.message, new RegExp(`open in another process .*PID ${holder.pid}`));
          const waiting = startRun(file(t, 'duckdb-held'), harness, { args: ['--wait'] });
          let log = '';
          waiting.child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
          for (let tries = 0; !log.includes('waiting for it to end'); tries++) {
            if (tries > 600) throw new Error(`the run never said it waits: ${log}`);
            await new Promise((r) => setTimeout(r, 50));
          }
          holder.kill('SIGKILL');
          const done = await waiting.finished;
          assert.equal(done.code, 0, done.stderr);
          await check(t);
        } finally {
          holder.kill('SIGKILL');
        }
      });
    }

    if (kind === 'postgres') {
      test('the PostgreSQL backend terminated mid-COPY: the run fails cleanly, the rerun is exact', async () => {
        await harness.reset();
        const t = await target('terminated');
        // Its own application name: the backends of runs in other test files are left alone.
        const named = new URL(postgresUrl());
        named.searchParams.set('application_name', `sluice-${t.settings.schema}`);
        const pipeline = file(t, 'terminated', `{ url: '${named}', schema: ${t.settings.schema} }`);
        const run = startRun(pipeline, harness, {
          checkpoint: 'file-batch:homes@1',
          env: { SLUICE_CHECKPOINT_WAIT: '1500' },
        });
        await run.reached;
        const killed = await pgQuery(
          `select pg_terminate_backend(pid) from pg_stat_activity
           where application_name = $1 and state = 'idle in transaction'`,
          [`sluice-${t.settings.schema}`],
        );
        assert.ok(killed.length > 0, 'a backend in a file transaction was terminated');
        const done = await run.finished;
        assert.equal(done.code, 1, done.stderr);
        const summary = JSON.parse(done.stdout);
        assert.equal(summary.status, 'failed');
        assert.equal(summary.jobs[0].error.code, 'SLUICE_DESTINATION_CONNECTION');
        assert.doesNotMatch(done.stderr, /Unhandled|internal error/);
        const runs = await t.all<{ status: string }>('select status from _sluice_runs');
        assert.deepEqual(
          runs.map((r) => r.status),
          ['failed'],
          'not left running',
        );
        await untilDone(pipeline, harness);
        await check(t);
      });

      test('a table locked by another session: a lock timeout fails with exit 1, SIGTERM stops the wait', async () => {
        await harness.reset();
        const t2 = await target('table-locked-2');
        const url2 = new URL(postgresUrl());
        url2.searchParams.set('options', '-c lock_timeout=1s');
        const pipeline = file(
          t2,
          'table-locked-2',
          `{ url: '${url2}', schema: ${t2.settings.schema} }`,
        );
        await pgQuery(`create schema if not exists "${t2.settings.schema}"`);
        const holder = new pg.Client({ connectionString: postgresUrl() });
        holder.on('error', () => {});
        await holder.connect();
        try {
          // The state table every file's transaction writes to, locked by another session.
          await holder.query(
            `create table "${t2.settings.schema}"."_sluice_files" (download_id text not null, file_index bigint not null, file_name text not null, table_name text not null, rows_loaded bigint not null, rows_rejected bigint not null, bytes bigint not null, loaded_at text not null, run_id text not null, primary key (download_id, file_index))`,
          );
          await holder.query('begin');
          await holder.query(
            `lock table "${t2.settings.schema}"."_sluice_files" in access exclusive mode`,
          );
          const timedOut = await startRun(pipeline, harness).finished;
          assert.equal(timedOut.code, 1, timedOut.stderr);
          assert.equal(JSON.parse(timedOut.stdout).jobs[0].error.code, 'SLUICE_DESTINATION_BUSY');
          // With the default timeout the run waits, says so, and stops at SIGTERM.
          const waiting = startRun(file(t2, 'table-locked-wait'), harness);
          const deadline = Date.now() + 20_000;
          while (!waiting.child.exitCode && Date.now() < deadline) {
            const blocked = await pgQuery(
              `select 1 from pg_stat_activity where application_name = 'sluice' and wait_event_type = 'Lock'`,
            );
            if (blocked.length > 0) break;
            await new Promise((r) => setTimeout(r, 100));
          }
          await new Promise((r) => setTimeout(r, 3500));
          waiting.child.kill('SIGTERM');
          const stopped = await waiting.finished;
          assert.equal(stopped.code, 130, stopped.stderr);
          assert.match(stopped.stderr, /waiting for a lock held by PostgreSQL session/);
        } finally {
          await holder.query('rollback').catch(() => {});
          await holder.end();
        }
        await untilDone(pipeline, harness);
        await check(t2);
      });
    }
  });
}
