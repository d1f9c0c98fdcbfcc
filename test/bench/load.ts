/**
 * Loader speed and memory, end to end: `sluice run` against each database's own bulk loader
 * reading the same CSV result files: `sqlite3 .import` for SQLite, `psql \copy` for PostgreSQL.
 *
 *   npx tsx test/bench/load.ts [--records 1000000] [--formats csv,json] [--destinations sqlite,postgres]
 *
 * PostgreSQL comes from SLUICE_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test);
 * each run there loads into a throwaway schema, dropped at the end.
 *
 * The emulator runs in this process and serves a download of property records (about 1.3 KB
 * each). Its result files are rendered once by a warm-up download first, so the emulator is not
 * what is measured. Then, for each format, `sluice run` (a child process, append mode) loads the
 * download into a fresh SQLite file; and `sqlite3` (Debian's CLI; `apt-get install sqlite3`)
 * imports the same CSV files into a fresh file. Printed side by side: rows/s, MB/s, peak RSS of
 * the loading process, and the ratio to sqlite3.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { startEmulator } from '../../src/emulator/index.js';
import { dropSchema, postgresUrl, queryPostgres, randomSchemaName } from '../helpers/postgres.js';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    formats: { type: 'string', default: 'csv,json' },
    keep: { type: 'boolean', default: false },
    destinations: { type: 'string', default: 'sqlite' },
  },
});
const DESTINATIONS = values.destinations.split(',') as ('sqlite' | 'postgres')[];
const PG_URL = postgresUrl();
const schema = randomSchemaName('sluice_bench');
let runs = 0;
const RECORDS = Number(values.records);
const FORMATS = values.formats.split(',') as ('csv' | 'json')[];
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
const credits = { business: 1e9, people: 1e9, product: 1e9, property: 1e9 };
const emulator = await startEmulator({
  port: 0,
  scale: Math.max(1, Math.ceil(RECORDS / 20_000)),
  rate: 1e9,
  queueMs: 0,
  credits,
});
const { email, password } = emulator.options;

interface Measure {
  label: string;
  rows: number;
  bytes: number;
  seconds: number;
  peakRssMb: number;
}

try {
  for (const destination of DESTINATIONS) {
    const results: Measure[] = [];
    for (const format of FORMATS) {
      const files = await warm(format);
      const bytes = files.reduce((sum, f) => sum + statSync(f).size, 0);
      console.log(
        `${format}: ${files.length} files, ${(bytes / 1e6).toFixed(0)} MB, warmed in the emulator's spool`,
      );
      if (destination === 'sqlite') {
        results.push(await sluiceRun(destination, format, 'json', 'append', bytes));
        if (format === 'csv') {
          results.push(await sluiceRun(destination, format, 'tables', 'append', bytes));
          results.push(await sqliteImport(files, bytes));
        }
      } else {
        results.push(await sluiceRun(destination, format, 'json', 'append', bytes));
        if (format === 'csv') {
          results.push(await sluiceRun(destination, format, 'json', 'merge', bytes));
          results.push(await psqlCopy(files, bytes));
        }
      }
    }
    report(destination, results);
  }
} finally {
  await emulator.close();
  if (DESTINATIONS.includes('postgres')) await dropSchema(schema, PG_URL);
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}

function report(destination: string, results: Measure[]) {
  const reference = results.find(
    (r) => r.label.startsWith('sqlite3') || r.label.startsWith('psql'),
  );
  const name = destination === 'sqlite' ? 'sqlite3' : 'psql';
  console.log('');
  console.log(
    `${`loader (${destination})`.padEnd(40)} ${'rows'.padStart(9)} ${'s'.padStart(7)} ${'rows/s'.padStart(9)} ${'MB/s'.padStart(6)} ${'peak RSS'.padStart(9)}  vs ${name}`,
  );
  for (const r of results) {
    const rate = r.rows / r.seconds;
    const ratio = reference ? (rate / (reference.rows / reference.seconds)).toFixed(2) : '-';
    console.log(
      `${r.label.padEnd(40)} ${String(r.rows).padStart(9)} ${r.seconds.toFixed(1).padStart(7)} ${Math.round(rate).toString().padStart(9)} ${(r.bytes / 1e6 / r.seconds).toFixed(1).padStart(6)} ${`${r.peakRssMb.toFixed(0)} MB`.padStart(9)}  ${ratio}x`,
    );
  }
  console.log('');
}

/** Downloads the records once through the API so the emulator renders (spools) every file. */
async function warm(format: 'csv' | 'json'): Promise<string[]> {
  const auth = (await api('POST', '/v4/auth', { email, password })) as { token: string };
  const headers = { authorization: `Bearer ${auth.token}` };
  const start = (await api(
    'POST',
    '/v4/properties/search',
    { query: '*', num_records: RECORDS, download: true, format },
    headers,
  )) as {
    download_id: string;
  };
  let download: { status: string; results: { url: string }[] };
  do {
    await new Promise((r) => setTimeout(r, 20));
    download = (await api(
      'GET',
      `/v4/downloads/${start.download_id}`,
      undefined,
      headers,
    )) as typeof download;
  } while (download.status !== 'completed');
  const paths: string[] = [];
  for (const [i, { url }] of download.results.entries()) {
    const res = await request(url);
    const path = join(dir, `warm-${format}-${i}.${format}`);
    writeFileSync(path, Buffer.from(await res.body.arrayBuffer()));
    paths.push(path);
  }
  return paths;
}

async function sluiceRun(
  destination: 'sqlite' | 'postgres',
  format: 'csv' | 'json',
  nested: 'json' | 'tables',
  write: 'append' | 'merge',
  bytes: number,
): Promise<Measure> {
  const table = `homes_${++runs}`;
  const db = join(dir, `sluice-${format}-${nested}.sqlite`);
  const pipeline = join(dir, `bench-${format}-${nested}-${write}-${destination}.yaml`);
  const where =
    destination === 'sqlite' ? `sqlite:${db}` : `{ url: '${PG_URL}', schema: ${schema} }`;
  writeFileSync(
    pipeline,
    `version: 1
name: bench-${format}
source: { api: v4, url: '${emulator.v4Url}', email: '${email}', password: '${password}' }
destination: ${where}
jobs:
  homes:
    type: properties
    query: '*'
    records: ${RECORDS}
    format: ${format}
    table: ${table}
    write: ${write}
    nested: ${nested}
    poll: { interval: 100ms, max_interval: 100ms }
`,
  );
  // What users run: the installed command (bin/sluice.js, the built code).
  if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error('run `npm run build` first');
  const { seconds, peakRssMb, code, stderr } = await measure(
    join(ROOT, 'bin/sluice.js'),
    ['run', pipeline, '--no-progress', '--json'],
    ROOT,
  );
  if (code !== 0) throw new Error(`sluice run failed (${code}): ${stderr}`);
  const rows = destination === 'sqlite' ? countRows(db, table) : await countPostgres(table);
  const label = `sluice run (${format}, ${write}, nested ${nested})`;
  return { label, rows, bytes, seconds, peakRssMb };
}

async function sqliteImport(files: string[], bytes: number): Promise<Measure> {
  const db = join(dir, 'sqlite3.sqlite');
  const script = join(dir, 'import.sql');
  // The first file creates the table from its header; the rest skip theirs.
  const lines = [
    '.mode csv',
    `.import '${files[0]}' homes`,
    ...files.slice(1).map((f) => `.import --skip 1 '${f}' homes`),
  ];
  writeFileSync(script, `${lines.join('\n')}\n`);
  const { seconds, peakRssMb, code, stderr } = await measure(
    'sh',
    ['-c', `sqlite3 '${db}' < '${script}'`],
    dir,
  );
  if (code !== 0) throw new Error(`sqlite3 failed (${code}): ${stderr}`);
  return {
    label: 'sqlite3 .import (csv)',
    rows: countRows(db, 'homes'),
    bytes,
    seconds,
    peakRssMb,
  };
}

/** `psql \copy` of the same CSV files into a table of text columns named by their header. */
async function psqlCopy(files: string[], bytes: number): Promise<Measure> {
  const header = readFileSync(files[0]!, 'utf8').slice(0, 100_000).split('\n')[0]!.split(',');
  const table = `"${schema}".psql_homes`;
  const create = `CREATE TABLE ${table} (${header.map((c) => `"${c}" text`).join(', ')})`;
  await queryPostgres(create, [], PG_URL);
  const script = join(dir, 'copy.sql');
  writeFileSync(
    script,
    `${files.map((f) => `\\copy ${table} FROM '${f}' CSV HEADER`).join('\n')}\n`,
  );
  const { seconds, peakRssMb, code, stderr } = await measure(
    'psql',
    [PG_URL, '-q', '-v', 'ON_ERROR_STOP=1', '-f', script],
    dir,
  );
  if (code !== 0) throw new Error(`psql failed (${code}): ${stderr}`);
  return {
    label: 'psql \\copy (csv)',
    rows: await countPostgres('psql_homes'),
    bytes,
    seconds,
    peakRssMb,
  };
}

async function countPostgres(table: string): Promise<number> {
  const [row] = await queryPostgres<{ n: string }>(
    `SELECT count(*) AS n FROM "${schema}"."${table}"`,
    [],
    PG_URL,
  );
  return Number(row?.n ?? 0);
}

function countRows(db: string, table: string): number {
  return Number(
    execFileSync('sqlite3', [db, `select count(*) from "${table}"`], { encoding: 'utf8' }).trim(),
  );
}

/** Runs a command, sampling the peak resident memory of it and its children from /proc. */
function measure(
  cmd: string,
  args: string[],
  cwd: string,
): Promise<{ seconds: number; peakRssMb: number; code: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr = (stderr + d).slice(-4000);
    });
    let peak = 0;
    const timer = setInterval(() => {
      peak = Math.max(peak, treeRssKb(child.pid!));
    }, 25);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearInterval(timer);
      resolve({
        seconds: (performance.now() - t0) / 1000,
        peakRssMb: peak / 1024,
        code: code ?? 1,
        stderr,
      });
    });
  });
}

function treeRssKb(pid: number): number {
  let total = 0;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    for (const child of children ? children.split(/\s+/) : []) total += treeRssKb(Number(child));
  } catch {
    // The process ended between two samples.
  }
  return total;
}

async function api(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await request(emulator.url + path, {
    method: method as 'GET',
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path} -> ${res.statusCode}: ${text}`);
  return JSON.parse(text) as unknown;
}
