/**
 * The dashboard (`sluice ui`) on a big destination: state tables seeded directly in SQLite with
 * 10,000 runs (two downloads, two jobs and two files each) and a million rejects, then each page
 * asked for over HTTP as a browser would, and its answer timed (the destination opened
 * read-only for each answer, as the server does). The bar: under a second.
 *
 *   npx tsx test/bench/ui.ts [runs] [rejects]
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openDestination } from '../../src/load/index.js';
import { startUi } from '../../src/ui/server.js';
import { sourcesOf } from '../../src/ui/sources.js';

const RUNS = Number(process.argv[2] ?? 10_000);
const REJECTS = Number(process.argv[3] ?? 1_000_000);
const file = join(mkdtempSync(join(tmpdir(), 'sluice-bench-ui-')), 'big.sqlite');
const url = `sqlite:${file}`;

const made = await openDestination(url);
await made.ensureState();
await made.close();

const t0 = performance.now();
const db = new Database(file);
const iso = (ms: number) => new Date(ms).toISOString();
const start = Date.parse('2025-01-01T00:00:00Z');
db.transaction(() => {
  const run = db.prepare(
    `insert into _sluice_runs (run_id, pipeline, started_at, finished_at, status, stage, error_code, error_message, credits)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const job = db.prepare(
    `insert into _sluice_jobs (run_id, pipeline, job, status, started_at, finished_at) values (?, ?, ?, ?, ?, ?)`,
  );
  const attempt = db.prepare(
    `insert into _sluice_downloads (attempt_id, pipeline, job, spec_hash, api, download_id, status, target_table,
       load_table, num_found, num_records, requested_at, updated_at, finished_at, run_id, data_type, credits)
     values (?, ?, ?, 'h', 'v4', ?, 'loaded', ?, ?, 500, 500, ?, ?, ?, ?, 'properties', ?)`,
  );
  const fileRow = db.prepare(
    `insert into _sluice_files (download_id, file_index, file_name, table_name, rows_loaded, rows_rejected, bytes, loaded_at, run_id)
     values (?, 0, ?, ?, 500, 0, 300000, ?, ?)`,
  );
  for (let i = 0; i < RUNS; i++) {
    const id = `run-${String(i).padStart(6, '0')}`;
    const pipeline = `pipeline_${i % 5}`;
    const at = start + i * 3_600_000;
    const failed = i % 17 === 0;
    run.run(
      id,
      pipeline,
      iso(at),
      iso(at + 60_000),
      failed ? 'failed' : 'succeeded',
      failed ? 'download' : null,
      failed ? 'SLUICE_TIMEOUT' : null,
      failed ? 'a download did not finish within its poll timeout' : null,
      '{"property":1000}',
    );
    for (const j of ['homes', 'owners']) {
      job.run(id, pipeline, j, failed ? 'failed' : 'loaded', iso(at), iso(at + 60_000));
      const download = `${id}-${j}`;
      attempt.run(
        download,
        pipeline,
        j,
        download,
        j,
        j,
        iso(at),
        iso(at),
        iso(at),
        id,
        '{"property":500}',
      );
      fileRow.run(download, `${download}_0.csv`, j, iso(at + 50_000), id);
    }
  }
  const reject = db.prepare(
    `insert into _sluice_rejects (download_id, job, file_name, line, raw, reason, created_at) values (?, 'homes', ?, ?, ?, ?, ?)`,
  );
  for (let i = 0; i < REJECTS; i++) {
    const r = i % RUNS;
    const download = `run-${String(r).padStart(6, '0')}-homes`;
    reject.run(
      download,
      `${download}_0.csv`,
      i,
      `x0,x1,x2,"broken ${i}`,
      i % 1000 === 0 ? 'unterminated quote' : 'expected 45 cells as in the header, got 47',
      iso(start + r * 3_600_000 + 50_000),
    );
  }
})();
db.close();
console.log(
  `seeded ${RUNS.toLocaleString('en-US')} runs, ${REJECTS.toLocaleString('en-US')} rejects in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);

const { url: base, server } = await startUi({
  sources: sourcesOf([], [url], process.env),
  host: '127.0.0.1',
  port: 0,
});
const pages = [
  '/',
  '/runs',
  '/runs?page=150',
  '/runs?pipeline=pipeline_3&status=failed',
  '/runs?from=2025-06-01&until=2025-06-30',
  `/run?id=run-${String(RUNS - 1).padStart(6, '0')}`,
  '/credits',
  '/tables',
  '/rejects',
  '/rejects?page=10000',
  '/rejects?q=unterminated',
  '/rejects?pipeline=pipeline_2',
  '/api/live',
];
for (const path of pages) {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    const answer = await fetch(new URL(path, base));
    bytes = (await answer.text()).length;
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status}`);
    times.push(performance.now() - t);
  }
  const best = Math.min(...times);
  console.log(
    `${path.padEnd(44)} ${best.toFixed(0).padStart(6)} ms (best of 3)  ${bytes.toLocaleString('en-US')} bytes`,
  );
}
server.close();
