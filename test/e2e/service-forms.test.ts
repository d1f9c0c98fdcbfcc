import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { createServiceClient } from '../../src/client/index.js';
import { openDestination } from '../../src/load/index.js';
import { createLogger } from '../../src/log.js';
import { loadPipeline } from '../../src/pipeline/index.js';
import type { Phase, Progress } from '../../src/pipeline/progress.js';
import { runPipeline } from '../../src/pipeline/run/run.js';
import { pageLists } from '../client/paging.js';
import { RewritingProxy } from '../client/proxy.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import {
  Capture,
  emulatorEnv,
  pipelineHead,
  runCli,
  tempDir,
  writePipeline,
} from '../helpers/pipeline.js';

/**
 * Runs against answers in the forms customers have met and the emulator does not send itself (a
 * proxy in front of it rewrites them): statuses sluice has no word for; the live download
 * object, whose `num_records` is what the download will hold and `num_downloaded` what it holds
 * so far; and the downloads listed in pages, where crash recovery looks for a download a run
 * asked for and never heard of.
 */

const RECORDS = 150;

let h: EmulatorHarness;
let proxy: RewritingProxy;
let dir: string;

before(async () => {
  // A slow download, so that runs poll it a few times while it is queued and while it works.
  h = await EmulatorHarness.start({ scale: 0.05, fileRecords: 100, queueMs: 2000, rate: 100 });
  proxy = await RewritingProxy.start(h.url);
  dir = tempDir();
});
after(async () => {
  await proxy.close();
  await h.close();
});
beforeEach(async () => {
  proxy.hooks = {};
  await h.reset();
});

/** Rewrites each answer to `GET /v4/downloads/{id}` (a download being polled). */
function rewriteDownloads(rewrite: (download: Record<string, unknown>) => unknown): void {
  proxy.hooks.rewrite = (req, status, body) =>
    req.method === 'GET' && /^\/v4\/downloads\/[^/]+$/.test(req.path) && status === 200
      ? rewrite(body as Record<string, unknown>)
      : undefined;
}

function pipelineFile(name: string): { file: string; db: string } {
  const db = join(dir, `${name}.sqlite`);
  const file = writePipeline(
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
jobs:
  shops:
    type: businesses
    query: '*'
    records: ${RECORDS}
    poll: { interval: 200ms, max_interval: 200ms, timeout: 10m }
`,
  );
  return { file, db };
}

function rows(db: string, table: string): number {
  const sqlite = new Database(db, { readonly: true });
  try {
    return (sqlite.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
  } finally {
    sqlite.close();
  }
}

const env = () => emulatorEnv(h, { SLUICE_API_URL: `${proxy.url}/v4` });

describe('download statuses sluice has no word for', () => {
  test('a download that passes through an unlisted status loads, and it is said once', async () => {
    const { file, db } = pipelineFile('unlisted');
    const seen: string[] = [];
    rewriteDownloads((download) => {
      seen.push(String(download.status));
      // While it works the service says a word of its own; done, it shouts it (COMPLETED).
      const status = download.status === 'completed' ? 'COMPLETED' : 'Exporting';
      return { ...download, status };
    });
    const run = await runCli(['run', file, '--no-progress'], env(), undefined, h.clock());
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(rows(db, 'shops'), RECORDS);
    assert.ok(
      seen.filter((s) => s !== 'completed').length >= 2,
      `polled while it worked (${seen.join(', ')})`,
    );
    const said = run.stderr.split('\n').filter((line) => /which sluice does not know/.test(line));
    assert.equal(said.length, 1, run.stderr);
    assert.match(said[0]!, /has status 'Exporting'.*taken as still in progress/);
  });
});

describe('progress while the service prepares a download', () => {
  test('the run shows the records done of the total, not the total', async () => {
    const { file } = pipelineFile('progress');
    rewriteDownloads((download) => {
      // The live form: num_records is what the download will hold, num_downloaded what it
      // holds so far (the emulator's contract form says the latter in num_records; its live
      // form sends both already).
      const total = h.emulator.context.state.downloads.find(
        (d) => d.publicId === download.id,
      )?.target;
      const done = download.num_downloaded ?? download.num_records;
      return { ...download, num_records: total, num_downloaded: done };
    });
    const updates: { phase: Phase | undefined; value: number; total: number | undefined }[] = [];
    let phase: Phase | undefined;
    const progress: Progress = {
      phase: (_job, next) => {
        phase = next;
      },
      update: (_job, value, total) => updates.push({ phase, value, total }),
      done: () => {},
    };
    const spec = await loadPipeline(file, env());
    const summary = await runPipeline(spec, {
      env: env(),
      logger: createLogger({ stream: new Capture(), level: 'error' }),
      progress,
      clock: h.clock(),
    });
    assert.equal(summary.status, 'succeeded', JSON.stringify(summary));
    const download = updates.filter((u) => u.phase === 'download');
    assert.ok(download.length >= 3, JSON.stringify(download));
    assert.equal(download[0]?.value, 0, 'queued: nothing done yet');
    assert.ok(download.every((u) => u.total === RECORDS && u.value <= RECORDS));
    assert.ok(
      download.some((u) => u.value > 0 && u.value < RECORDS),
      `some records done of the total: ${JSON.stringify(download)}`,
    );
    assert.equal(download.at(-1)?.value, RECORDS);
  });
});

describe('crash recovery over a paged list of downloads', () => {
  test('a run killed before it heard its download id finds it on page 2 and adopts it', async () => {
    const { file, db } = pipelineFile('paged-recovery');
    const direct = createServiceClient({ url: h.v4Url, ...h.credentials });
    try {
      // Two downloads of another job, an hour before, fill the first page.
      for (const numRecords of [5, 6])
        await direct.startDownload({ type: 'products', query: '*', numRecords });
      const HOUR = 60 * 60_000;
      await h.advanceClock(HOUR);
      // The crashed run recorded its request, and the service started the download it asked
      // for; the run died before the id reached the state table.
      const spec = await loadPipeline(file, env());
      const destination = await openDestination(`sqlite:${db}`);
      await destination.ensureState();
      const requestedAt = new Date(Date.now() + HOUR).toISOString();
      await destination.state.insertAttempt({
        attempt_id: 'crashed-attempt',
        pipeline: 'paged-recovery',
        job: 'shops',
        spec_hash: spec.jobs[0]!.downloadHash,
        api: 'v4',
        download_id: null,
        status: 'requested',
        target_table: 'shops',
        load_table: 'shops',
        num_found: null,
        num_records: null,
        requested_at: requestedAt,
        started_at: null,
        updated_at: requestedAt,
        finished_at: null,
        run_id: 'crashed-run',
        message: null,
        load_hash: null,
        write_mode: 'merge',
        data_type: 'businesses',
        query: '*',
        format: 'json',
        num_requested: RECORDS,
        cursor_from: null,
        credits: null,
        load_settings: null,
        stage: 'extract',
      });
      await destination.close();
      const started = await direct.startDownload({
        type: 'businesses',
        query: '*',
        numRecords: RECORDS,
      });
      await h.advanceClock(60_000);

      pageLists(
        proxy,
        'link header',
        2,
        (req) => req.method === 'GET' && req.path === '/v4/downloads',
      );
      const run = await runCli(
        ['run', file, '--json', '--no-progress'],
        env(),
        undefined,
        h.clock(),
      );
      assert.equal(run.code, 0, run.stdout + run.stderr);
      const job = JSON.parse(run.stdout).jobs[0];
      assert.equal(job.download_id, started.id);
      assert.equal(job.reattached, true);
      assert.equal(h.emulator.context.state.downloads.length, 3, 'nothing was bought again');
      assert.equal(rows(db, 'shops'), RECORDS);
    } finally {
      await direct.close();
    }
  });
});

describe('v3 result files past their seven days', () => {
  /** A v3 date (`2026-3-7 17:44:05`, month and day not padded). */
  const v3Date = (ms: number) => {
    const d = new Date(ms);
    const pad = (n: number) => String(n).padStart(2, '0');
    return `${d.getUTCFullYear()}-${d.getUTCMonth() + 1}-${d.getUTCDate()} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  };

  test('a run re-attached to them exits 2 saying to start anew; --fresh does and loads', async () => {
    const db = join(dir, 'v3-expired.sqlite');
    const file = writePipeline(
      dir,
      'v3-expired',
      `${pipelineHead('v3-expired', `sqlite:${db}`, 'v3')}jobs:
  goods:
    type: products
    query: '*'
    records: 120
    format: csv
    poll: { interval: 200ms, max_interval: 200ms, timeout: 10m }
`,
    );
    const v3env = emulatorEnv(h, { SLUICE_API_URL: `${proxy.url}/v3` });
    const direct = createServiceClient({ url: h.v3Url, token: h.credentials.token });
    let old: string;
    try {
      old = (
        await direct.startDownload({ type: 'products', query: '*', numRecords: 120, format: 'csv' })
      ).id;
    } finally {
      await direct.close();
    }
    await h.advanceClock(60_000);
    // An earlier run started it and recorded it; the files were made eight days ago, and their
    // links are refused, however often the results are read.
    const spec = await loadPipeline(file, v3env);
    const destination = await openDestination(`sqlite:${db}`);
    await destination.ensureState();
    const then = new Date().toISOString();
    await destination.state.insertAttempt({
      attempt_id: 'earlier-attempt',
      pipeline: 'v3-expired',
      job: 'goods',
      spec_hash: spec.jobs[0]!.downloadHash,
      api: 'v3',
      download_id: old,
      status: 'started',
      target_table: 'goods',
      load_table: 'goods',
      num_found: 120,
      num_records: null,
      requested_at: then,
      started_at: then,
      updated_at: then,
      finished_at: null,
      run_id: 'earlier-run',
      message: null,
      load_hash: spec.jobs[0]!.loadHash,
      write_mode: 'merge',
      data_type: 'products',
      query: '*',
      format: 'csv',
      num_requested: 120,
      cursor_from: null,
      credits: null,
      load_settings: null,
      stage: 'extract',
    });
    await destination.close();
    proxy.hooks.rewrite = (req, status, body) =>
      req.path === `/v3/results/${old}` && status === 200 && Array.isArray(body)
        ? body.map((r: Record<string, unknown>) => ({
            ...r,
            date_created: v3Date(Date.now() - 8 * 24 * 60 * 60 * 1000),
            url: String(r.url).replace(/X-Signature=[^&]*/, 'X-Signature=dead'),
          }))
        : undefined;

    const stale = await runCli(
      ['run', file, '--json', '--no-progress'],
      v3env,
      undefined,
      h.clock(),
    );
    assert.equal(stale.code, 2, stale.stdout + stale.stderr);
    const job = JSON.parse(stale.stdout).jobs[0];
    assert.equal(job.download_id, old);
    assert.equal(job.error.code, 'SLUICE_DOWNLOAD_EXPIRED');
    assert.equal(job.error.retryable, false);
    assert.match(job.error.message, /running again cannot fetch it; start a new download/);
    assert.match(job.error.message, /--fresh/);
    const downloads = () => h.emulator.context.state.downloads.length;
    assert.equal(downloads(), 1, 'nothing bought');

    const fresh = await runCli(
      ['run', file, '--fresh', '--json', '--no-progress'],
      v3env,
      undefined,
      h.clock(),
    );
    assert.equal(fresh.code, 0, fresh.stdout + fresh.stderr);
    assert.notEqual(JSON.parse(fresh.stdout).jobs[0].download_id, old);
    assert.equal(downloads(), 2);
    assert.equal(rows(db, 'goods'), 120);
  });
});
