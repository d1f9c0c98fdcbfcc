/**
 * Loader speed and memory, end to end: `sluice run` (the installed command, a child process)
 * against each database's own bulk loader reading the same result files (`sqlite3 .import` for
 * SQLite, `psql \copy` for PostgreSQL, DuckDB's `read_json_auto` and `read_csv_auto` for DuckDB,
 * on one thread and on two), and against the tools a user would pick instead (Debian
 * packages: `sqlite-utils`, csvkit's `csvsql`, `pgloader`; installed with apt-get when missing
 * and possible, else skipped with a line). Then where the time goes (each stage in one thread,
 * and the naive one-thread floor: stages.ts), how a run scales with parse workers (`--scaling`,
 * into SQLite) and with files loaded at once (`--files`, into PostgreSQL: NDJSON appends, each
 * file over its own connection).
 *
 *   npx tsx test/bench/load.ts [--records 1000000] [--formats json,csv]
 *       [--destinations sqlite,postgres,duckdb] [--peers] [--scaling 1,2,4] [--files 1,2,3]
 *       [--no-stages]
 *
 * PostgreSQL comes from SLUICE_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test);
 * each run there loads into a throwaway schema, dropped at the end.
 *
 * The emulator runs in this process and serves a download of property records (about 1.75 KB
 * each as CSV, 2.2 KB as NDJSON). Its result files are rendered once by a warm-up download
 * first, so the emulator is not what is measured. Peers are slow (csvkit loads a few hundred
 * rows a second): they load the first result file only, and are compared by rows per second.
 * Peak memory is the loading processes' high-water mark (VmHWM), sampled every 25 ms.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { dropSchema, postgresUrl, queryPostgres, randomSchemaName } from '../helpers/postgres.js';
import { measure } from './measure.js';
import { printStages, stageProfile } from './stages.js';
import { benchEmulator, warmDownload } from './warm.js';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    formats: { type: 'string', default: 'json,csv' },
    keep: { type: 'boolean', default: false },
    destinations: { type: 'string', default: 'sqlite' },
    peers: { type: 'boolean', default: false },
    scaling: { type: 'string', default: '' },
    files: { type: 'string', default: '' },
    'no-stages': { type: 'boolean', default: false },
  },
});
type Kind = 'sqlite' | 'postgres' | 'duckdb';
const DESTINATIONS = values.destinations.split(',') as Kind[];
const PG_URL = postgresUrl();
const schema = randomSchemaName('sluice_bench');
let runs = 0;
const RECORDS = Number(values.records);
const FORMATS = values.formats.split(',') as ('csv' | 'json')[];
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
const emulator = await benchEmulator(RECORDS);
const { email, password } = emulator.options;

interface Measure {
  label: string;
  rows: number;
  bytes: number;
  seconds: number;
  peakRssMb: number;
  /** The table a sluice run loaded. */
  table?: string;
  /** The database file it loaded (SQLite, DuckDB). */
  db?: string;
}

const warmed = new Map<'csv' | 'json', { files: string[]; bytes: number }>();
/** The warmed download's result file URLs, for the fetch floor. */
const resultUrls = new Map<'csv' | 'json', string[]>();
for (const format of new Set<'csv' | 'json'>([...FORMATS, 'csv'])) {
  const { files, urls } = await warmDownload(emulator, { records: RECORDS, format, dir });
  resultUrls.set(format, urls);
  const bytes = files.reduce((sum, f) => sum + statSync(f).size, 0);
  warmed.set(format, { files, bytes });
  console.log(
    `${format}: ${files.length} files, ${(bytes / 1e6).toFixed(0)} MB, warmed in the emulator's spool`,
  );
}
const csv = warmed.get('csv')!;

try {
  if (DESTINATIONS.includes('postgres')) {
    await queryPostgres(`CREATE SCHEMA IF NOT EXISTS "${schema}"`, [], PG_URL);
  }
  for (const destination of DESTINATIONS) {
    if (destination === 'duckdb') {
      await duckdbBench();
      continue;
    }
    const results: Measure[] = [];
    results.push(
      destination === 'sqlite'
        ? await sqliteImport(csv.files, csv.bytes)
        : await psqlCopy(csv.files, csv.bytes),
    );
    for (const format of FORMATS) {
      const { bytes } = warmed.get(format)!;
      if (destination === 'sqlite') {
        results.push(await sluiceRun(destination, format, 'json', 'append', bytes));
        results.push(await sluiceRun(destination, format, 'tables', 'append', bytes));
      } else {
        results.push(await sluiceRun(destination, format, 'json', 'append', bytes));
        results.push(await sluiceRun(destination, format, 'json', 'merge', bytes));
      }
    }
    // The server's own cost of the typed columns sluice makes (jsonb, timestamptz, bigint),
    // which psql's text columns do not pay: the floor for any loader of such a table.
    const typed = results.find((r) => r.table !== undefined);
    if (destination === 'postgres' && typed) results.push(await psqlTyped(typed.table!));
    // The server-side path: raw NDJSON lines in, typed rows built by the server.
    const json = warmed.get('json');
    if (destination === 'postgres' && typed && json) {
      results.push(await psqlServerSide(typed.table!, json.files, json.bytes));
    }
    if (values.peers) results.push(...(await peers(destination)));
    report(destination, results);
  }
  if (values.scaling) {
    await scaling('scaling', 'sqlite', values.scaling, (workers, format) => ({
      env: { SLUICE_PARSE_WORKERS: String(workers) },
      label: `${workers} parse worker${workers === 1 ? '' : 's'} (${format}, sqlite)`,
    }));
  }
  if (values.files && !DESTINATIONS.includes('postgres')) {
    console.log(
      '--files skipped: files are loaded at once into PostgreSQL only (--destinations postgres)',
    );
  }
  if (values.files && DESTINATIONS.includes('postgres')) {
    await scaling('files at once', 'postgres', values.files, (files, format) => ({
      env: { SLUICE_FILES_AT_ONCE: String(files) },
      label: `${files} file${files === 1 ? '' : 's'} at once (${format}, postgres, append)`,
    }));
  }
  if (!values['no-stages']) {
    for (const format of FORMATS) {
      const files = warmed.get(format)!.files;
      printStages(`${format}, nested json`, await stageProfile(files, format));
    }
  }
} finally {
  await emulator.close();
  if (DESTINATIONS.includes('postgres')) await dropSchema(schema, PG_URL);
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}

/** Runs of the first format's append (nested json), one for each of `counts`, in a table. */
async function scaling(
  title: string,
  destination: 'sqlite' | 'postgres',
  counts: string,
  setting: (n: number, format: 'csv' | 'json') => { env: Record<string, string>; label: string },
): Promise<void> {
  const format = FORMATS[0]!;
  const results: Measure[] = [];
  for (const n of counts.split(',').map(Number)) {
    const { env, label } = setting(n, format);
    const m = await sluiceRun(
      destination,
      format,
      'json',
      'append',
      warmed.get(format)!.bytes,
      env,
    );
    results.push({ ...m, label });
  }
  report(title, results);
}

/** The tools a user would pick instead, on the first result file: installed, or skipped. */
async function peers(destination: 'sqlite' | 'postgres'): Promise<Measure[]> {
  const out: Measure[] = [];
  const json = warmed.get('json');
  const firstCsv = csv.files[0]!;
  const csvBytes = statSync(firstCsv).size;
  if (destination === 'sqlite') {
    if (have('sqlite-utils', 'sqlite-utils')) {
      if (json) {
        const file = json.files[0]!;
        const db = join(dir, 'peer-nl.sqlite');
        out.push(
          await peer(
            'sqlite-utils insert --nl',
            ['sqlite-utils', 'insert', db, 'homes', file, '--nl'],
            statSync(file).size,
            () => countRows(db, 'homes'),
          ),
        );
      }
      const db = join(dir, 'peer-csv.sqlite');
      out.push(
        await peer(
          'sqlite-utils insert --csv --detect-types',
          ['sqlite-utils', 'insert', db, 'homes', firstCsv, '--csv', '--detect-types'],
          csvBytes,
          () => countRows(db, 'homes'),
        ),
      );
    }
    if (have('csvsql', 'csvkit')) {
      const db = join(dir, 'peer-csvkit.sqlite');
      out.push(
        await peer(
          'csvkit csvsql --insert',
          ['csvsql', '--db', `sqlite:///${db}`, '--insert', '--tables', 'homes', firstCsv],
          csvBytes,
          () => countRows(db, 'homes'),
        ),
      );
    }
  } else if (have('pgloader', 'pgloader')) {
    const header = readFileSync(firstCsv, 'utf8').slice(0, 100_000).split('\n')[0]!.split(',');
    const fields = header.map((_, i) => `f${i}`);
    await queryPostgres(
      `CREATE TABLE "${schema}".pgloader_homes (${fields.map((f) => `${f} text`).join(', ')})`,
      [],
      PG_URL,
    );
    const command = join(dir, 'pgloader.load');
    const url = new URL(PG_URL);
    writeFileSync(
      command,
      `LOAD CSV FROM '${firstCsv}' (${fields.join(', ')})
INTO postgresql://${url.username || 'postgres'}${url.password ? `:${url.password}` : ''}@${url.hostname}:${url.port || 5432}${url.pathname}?${schema}.pgloader_homes (${fields.join(', ')})
WITH skip header = 1, fields optionally enclosed by '"', fields escaped by double-quote, fields terminated by ',';
`,
    );
    out.push(
      await peer('pgloader (csv)', ['pgloader', '--quiet', command], csvBytes, () =>
        countPostgres('pgloader_homes'),
      ),
    );
  }
  return out;
}

/** Whether a peer's command is here, installing its Debian package when it can. */
function have(command: string, pkg: string): boolean {
  const found = () => {
    try {
      execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  if (found()) return true;
  try {
    execFileSync('apt-get', ['install', '-y', '-q', pkg], { stdio: 'ignore' });
  } catch {
    // No apt-get, not root, or no package mirror: the line below says so.
  }
  if (found()) return true;
  console.log(
    `skipped: ${command} (Debian package ${pkg}) is not installed and apt-get could not install it`,
  );
  return false;
}

async function peer(
  label: string,
  [cmd, ...args]: string[],
  bytes: number,
  count: () => number | Promise<number>,
): Promise<Measure> {
  const { seconds, peakRssMb, code, stderr } = await measure(cmd!, args, dir);
  if (code !== 0) {
    console.log(
      `failed: ${label} (exit ${code}): ${stderr.trim().split('\n').slice(0, 3).join(' / ')}`,
    );
    return { label: `${label} (failed)`, rows: 0, bytes, seconds, peakRssMb };
  }
  return { label: `${label} (1 file)`, rows: await count(), bytes, seconds, peakRssMb };
}

function report(destination: string, results: Measure[]) {
  const native = results.find((r) => /^(sqlite3|psql|duckdb)/.test(r.label));
  // A table with no native loader in it (scaling) is read against its first row.
  const reference = native ?? results[0];
  const name = native ? native.label.split(' ')[0] : 'the first row';
  console.log('');
  console.log(
    `${`loader (${destination})`.padEnd(40)} ${'rows'.padStart(9)} ${'s'.padStart(7)} ${'rows/s'.padStart(9)} ${'MB/s'.padStart(6)} ${'peak RSS'.padStart(9)}  vs ${name}`,
  );
  for (const r of results) {
    const rate = r.rows / r.seconds;
    const ratio = reference ? `${(rate / (reference.rows / reference.seconds)).toFixed(2)}x` : '-';
    console.log(
      `${r.label.padEnd(40)} ${String(r.rows).padStart(9)} ${r.seconds.toFixed(1).padStart(7)} ${Math.round(rate).toString().padStart(9)} ${(r.bytes / 1e6 / r.seconds).toFixed(1).padStart(6)} ${`${r.peakRssMb.toFixed(0)} MB`.padStart(9)}  ${ratio}`,
    );
  }
  console.log('');
}

/**
 * DuckDB: for each format, DuckDB's own reader making its typed table from the same files (on
 * one thread, and on two), against `sluice run` into DuckDB (nested json: one table, as the
 * reader makes it), each with its peak memory.
 */
async function duckdbBench(): Promise<void> {
  for (const format of FORMATS) {
    const { files, bytes } = warmed.get(format)!;
    const results: Measure[] = [];
    for (const threads of [1, 2]) results.push(await duckdbRead(format, files, bytes, threads));
    results.push(await fetchFloor(format, bytes));
    // DuckDB reads each file itself (issue 41, load/duckdb/read-file.ts) where it gives sluice's
    // rows (the default); beside each, the same run with every file decoded by sluice
    // (SLUICE_DUCKDB_NATIVE=0).
    const append = await sluiceRun('duckdb', format, 'json', 'append', bytes);
    const merge = await sluiceRun('duckdb', format, 'json', 'merge', bytes);
    for (const made of [append, merge]) {
      results.push({ ...made, label: `${made.label}, DuckDB reads` });
      const write = made === append ? 'append' : 'merge';
      const decoded = await sluiceRun('duckdb', format, 'json', write, bytes, {
        SLUICE_DUCKDB_NATIVE: '0',
      });
      results.push({ ...decoded, label: `${decoded.label}, sluice decodes` });
    }
    // DuckDB's settings as they were before sluice set them (80% of memory, every core).
    const unbounded = await sluiceRun('duckdb', format, 'json', 'append', bytes, {
      SLUICE_DUCKDB_MEMORY_LIMIT: `${Math.floor((totalmem() * 0.8) / 2 ** 20)}MB`,
      SLUICE_DUCKDB_THREADS: String(availableParallelism()),
    });
    results.push({ ...unbounded, label: `${unbounded.label}, DuckDB unbounded` });
    // Node's heap as V8 sizes it, not capped as bin/sluice.js caps it for the 200 MB promise:
    // under the cap, the main thread's 24 MB heap is marked again and again (docs/speed.md).
    const uncapped = await sluiceRun('duckdb', format, 'json', 'append', bytes, {}, [
      '--max-semi-space-size=4',
    ]);
    results.push({ ...uncapped, label: `${uncapped.label}, V8 heap not capped` });
    for (const threads of [1, 2]) {
      results.push(await duckdbTyped(format, files, bytes, threads, append));
    }
    report(`duckdb, ${format}`, results);
  }
}

/**
 * The floor of any load that downloads the files: the result files fetched from the emulator
 * one after another in a process of its own, each body read and dropped, nothing parsed or
 * stored. sluice's runs pay this (overlapped with their loading); the databases' readers, which
 * read the files from disk, do not.
 */
async function fetchFloor(format: 'csv' | 'json', bytes: number): Promise<Measure> {
  const urls = resultUrls.get(format)!;
  const script = `
    const { request } = await import('undici');
    for (const url of ${JSON.stringify(urls)}) await (await request(url)).body.dump({ limit: Infinity });
  `;
  const { seconds, peakRssMb, code, stderr } = await measure(
    process.execPath,
    ['--input-type=module', '-e', script],
    ROOT,
  );
  if (code !== 0) throw new Error(`fetching the result files failed: ${stderr}`);
  return {
    label: `the files fetched, nothing loaded (${format})`,
    rows: RECORDS,
    bytes,
    seconds,
    peakRssMb,
  };
}

/** DuckDB's own reader of the files, in a process of its own, as `CREATE TABLE AS`. */
async function duckdbRead(
  format: 'csv' | 'json',
  files: string[],
  bytes: number,
  threads: number,
): Promise<Measure> {
  const db = join(dir, `duckdb-read-${format}-${threads}.duckdb`);
  const reader = format === 'json' ? 'read_json_auto' : 'read_csv_auto';
  const list = files.map((f) => `'${f}'`).join(', ');
  const script = `
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const conn = await (await DuckDBInstance.create(${JSON.stringify(db)})).connect();
    await conn.run('SET threads = ${threads}');
    await conn.run(${JSON.stringify(`CREATE TABLE homes AS SELECT * FROM ${reader}([${list}])`)});
  `;
  const { seconds, peakRssMb, code, stderr } = await measure(
    process.execPath,
    ['--input-type=module', '-e', script],
    ROOT,
  );
  if (code !== 0) throw new Error(`DuckDB's ${reader} failed (${code}): ${stderr}`);
  return {
    label: `duckdb ${reader} (${threads} thread${threads === 1 ? '' : 's'})`,
    rows: await countDuckDb(db, 'homes'),
    bytes,
    seconds,
    peakRssMb,
  };
}

/**
 * The bound of a load in which DuckDB reads the result files itself: its reader, with an
 * explicit column list (every field as text, nested ones as JSON), into a copy of the table
 * sluice made, each cell converted by TRY_CAST to its column's type, the load's own columns
 * constant, in one statement. No reject, no widening, no exactly-once row: what sluice adds
 * costs on top of this.
 */
async function duckdbTyped(
  format: 'csv' | 'json',
  files: string[],
  bytes: number,
  threads: number,
  made: Measure,
): Promise<Measure> {
  const db = join(dir, `duckdb-typed-${format}-${threads}.duckdb`);
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(made.db!);
  const conn = await instance.connect();
  let columns: [string, string][];
  try {
    const result = await conn.runAndReadAll(
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '${made.table}' ORDER BY ordinal_position`,
    );
    columns = result.getRows() as [string, string][];
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
  const q = (name: string) => `"${name.replaceAll('"', '""')}"`;
  const own = columns.filter(([name]) => name.startsWith('_sluice_'));
  const data = columns.filter(([name]) => !name.startsWith('_sluice_'));
  const declared = data.map(([n, t]) => `'${n}': '${t === 'JSON' ? 'JSON' : 'VARCHAR'}'`);
  const list = files.map((f) => `'${f}'`).join(', ');
  const reader =
    format === 'json'
      ? `read_json([${list}], format = 'newline_delimited', columns = {${declared.join(', ')}})`
      : `read_csv([${list}], header = true, all_varchar = true, union_by_name = true)`;
  // A CSV list arrives comma-joined (`Range,Oven`) or as JSON text; NDJSON's is JSON already.
  const json = (c: string) =>
    format === 'csv'
      ? `CASE WHEN left(${c}, 1) IN ('[', '{') THEN CAST(${c} AS JSON) ELSE to_json(string_split(${c}, ',')) END`
      : c;
  const cells = data.map(([n, t]) =>
    t === 'VARCHAR' ? q(n) : t === 'JSON' ? json(q(n)) : `TRY_CAST(${q(n)} AS ${t})`,
  );
  const constants = own.map(([, t]) =>
    t.startsWith('TIMESTAMP') ? 'now()' : t === 'VARCHAR' ? `'download'` : 'NULL',
  );
  const ddl = columns.map(([n, t]) => `${q(n)} ${t}`).join(', ');
  const names = [...data, ...own].map(([n]) => q(n)).join(', ');
  const script = `
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const conn = await (await DuckDBInstance.create(${JSON.stringify(db)})).connect();
    await conn.run('SET threads = ${threads}');
    await conn.run(${JSON.stringify(`CREATE TABLE homes (${ddl})`)});
    await conn.run(${JSON.stringify(
      `INSERT INTO homes (${names}) SELECT ${[...cells, ...constants].join(', ')} FROM ${reader}`,
    )});
  `;
  const { seconds, peakRssMb, code, stderr } = await measure(
    process.execPath,
    ['--input-type=module', '-e', script],
    ROOT,
  );
  if (code !== 0) throw new Error(`DuckDB's typed read failed (${code}): ${stderr}`);
  return {
    label: `duckdb reader, typed table (${threads} thread${threads === 1 ? '' : 's'})`,
    rows: await countDuckDb(db, 'homes'),
    bytes,
    seconds,
    peakRssMb,
  };
}

async function countDuckDb(db: string, table: string): Promise<number> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(db);
  const conn = await instance.connect();
  try {
    const result = await conn.runAndReadAll(`SELECT count(*) FROM "${table}"`);
    return Number(result.getRows()[0]![0]);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

async function sluiceRun(
  destination: Kind,
  format: 'csv' | 'json',
  nested: 'json' | 'tables',
  write: 'append' | 'merge',
  bytes: number,
  env: Record<string, string> = {},
  /** Node's flags instead of those bin/sluice.js gives (the built CLI run by this Node). */
  nodeFlags?: string[],
): Promise<Measure> {
  const table = `homes_${++runs}`;
  const db = join(dir, `sluice-${runs}.${destination === 'duckdb' ? 'duckdb' : 'sqlite'}`);
  const pipeline = join(dir, `bench-${format}-${nested}-${write}-${destination}.yaml`);
  const where =
    destination === 'postgres' ? `{ url: '${PG_URL}', schema: ${schema} }` : `${destination}:${db}`;
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
  const args = ['run', pipeline, '--no-progress', '--json'];
  const { seconds, peakRssMb, code, stderr } = nodeFlags
    ? await measure(
        process.execPath,
        [...nodeFlags, join(ROOT, 'dist/cli/main.js'), ...args],
        ROOT,
        {
          MALLOC_ARENA_MAX: '1',
          ...env,
        },
      )
    : await measure(join(ROOT, 'bin/sluice.js'), args, ROOT, env);
  if (code !== 0) throw new Error(`sluice run failed (${code}): ${stderr}`);
  const rows =
    destination === 'sqlite'
      ? countRows(db, table)
      : destination === 'duckdb'
        ? await countDuckDb(db, table)
        : await countPostgres(table);
  const label = `sluice run (${format}, ${write}, nested ${nested})`;
  return { label, rows, bytes, seconds, peakRssMb, table, db };
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

/**
 * `psql \copy` into a table of the columns sluice made for `table` (no index: the runs it is
 * set against append), from a CSV export of it.
 */
async function psqlTyped(table: string): Promise<Measure> {
  const source = `"${schema}"."${table}"`;
  const typed = `"${schema}".psql_typed_homes`;
  const file = join(dir, 'typed.csv');
  const run = async (script: string) => {
    const path = join(dir, 'typed.sql');
    writeFileSync(path, `${script}\n`);
    const result = await measure('psql', [PG_URL, '-q', '-v', 'ON_ERROR_STOP=1', '-f', path], dir);
    if (result.code !== 0) throw new Error(`psql failed (${result.code}): ${result.stderr}`);
    return result;
  };
  await run(`\\copy ${source} TO '${file}' CSV`);
  await queryPostgres(`CREATE TABLE ${typed} (LIKE ${source})`, [], PG_URL);
  const { seconds, peakRssMb } = await run(`\\copy ${typed} FROM '${file}' CSV`);
  return {
    label: "psql \\copy into sluice's typed table",
    rows: await countPostgres('psql_typed_homes'),
    bytes: statSync(file).size,
    seconds,
    peakRssMb,
  };
}

/**
 * The bound of a PostgreSQL load that parses on the server: each NDJSON file's lines copied as
 * they are into a staging table of one text column (CSV mode with a quote and a delimiter no
 * line holds, so backslashes stay), then one INSERT ... SELECT through jsonb_populate_record
 * into a table of the columns sluice made for `table`, per file in one transaction; psql's
 * time. No reject, no widening, no exactly-once row, the load's own columns left empty.
 */
async function psqlServerSide(table: string, files: string[], bytes: number): Promise<Measure> {
  const source = `"${schema}"."${table}"`;
  const typed = `"${schema}".psql_server_homes`;
  await queryPostgres(`CREATE TABLE ${typed} (LIKE ${source})`, [], PG_URL);
  const script = join(dir, 'server-side.sql');
  const lines = ['CREATE TEMP TABLE staging (line text);'];
  for (const file of files) {
    lines.push(
      'BEGIN;',
      `\\copy staging (line) FROM '${file}' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')`,
      `INSERT INTO ${typed} SELECT r.* FROM staging, jsonb_populate_record(NULL::${typed}, staging.line::jsonb) r;`,
      'TRUNCATE staging;',
      'COMMIT;',
    );
  }
  writeFileSync(script, `${lines.join('\n')}\n`);
  const { seconds, peakRssMb, code, stderr } = await measure(
    'psql',
    [PG_URL, '-q', '-v', 'ON_ERROR_STOP=1', '-f', script],
    dir,
  );
  if (code !== 0) throw new Error(`psql failed (${code}): ${stderr}`);
  return {
    label: 'psql: raw NDJSON lines, typed on the server',
    rows: await countPostgres('psql_server_homes'),
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
