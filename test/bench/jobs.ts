/**
 * Jobs at once: the wall time of a pipeline of independent jobs against its slowest job run
 * alone, in one run of this script, where what takes time is the service preparing downloads
 * (an emulator whose downloads are queued 4 s, then delivered at 2,000 records a second, as on
 * the issue that asked for it). For 4 jobs (two property queries, businesses, products; 4,000 to
 * 6,000 records each) and for 10, each run into a destination of its own:
 *
 * - each job alone (`--job NAME`), the slowest of which is the bound;
 * - the pipeline one job at a time (`--parallel 1`), as sluice ran before;
 * - the pipeline with its jobs at once (the default: at most 16 in flight);
 * - with more jobs than that, every job in flight (`--parallel N`): the last jobs no longer
 *   wait for the first to end before their downloads are asked for;
 *
 * with the peak resident memory of each run, and a check that the tables the jobs-at-once run
 * made equal those of the one-at-a-time run (rows and content, less the load columns).
 *
 * `--loads-at-once 2,4` adds, for PostgreSQL, the every-job-in-flight run with that many jobs
 * loading at once (`SLUICE_JOB_LOADS_AT_ONCE`; one on two cores by default), tables checked too.
 *
 *   npx tsx test/bench/jobs.ts [--destinations sqlite,postgres] [--sizes 4,10]
 *       [--queue-ms 4000] [--rate 2000] [--loads-at-once 2,4]
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { startEmulator } from '../../src/emulator/index.js';
import { DEFAULT_PARALLEL_JOBS } from '../../src/pipeline/spec/spec-format.js';
import { dropSchema, postgresUrl, queryPostgres, randomSchemaName } from '../helpers/postgres.js';
import { measure } from './measure.js';

const { values } = parseArgs({
  options: {
    destinations: { type: 'string', default: 'sqlite' },
    sizes: { type: 'string', default: '4,10' },
    'queue-ms': { type: 'string', default: '4000' },
    rate: { type: 'string', default: '2000' },
    'loads-at-once': { type: 'string', default: '' },
  },
});
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error('run `npm run build` first');
const PG_URL = postgresUrl();
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-jobs-'));
const schemas: string[] = [];
const emulator = await startEmulator({
  port: 0,
  scale: 1,
  queueMs: Number(values['queue-ms']),
  rate: Number(values.rate),
  credits: { business: 1e9, people: 1e9, product: 1e9, property: 1e9 },
  churn: 0,
});
const { email, password } = emulator.options;

/** Independent jobs of 4,000 to 6,000 records each; the first four are the issue's. */
const JOBS: { name: string; type: string; query: string; records: number; format: string }[] = [
  { name: 'texas_homes', type: 'properties', query: 'province:TX', records: 5000, format: 'csv' },
  { name: 'other_homes', type: 'properties', query: '-province:TX', records: 6000, format: 'json' },
  { name: 'shops', type: 'businesses', query: '*', records: 5000, format: 'json' },
  { name: 'goods', type: 'products', query: '*', records: 4000, format: 'csv' },
  {
    name: 'homes_5',
    type: 'properties',
    query: 'yearBuilt:[1900 TO 1980]',
    records: 4000,
    format: 'json',
  },
  {
    name: 'homes_6',
    type: 'properties',
    query: 'yearBuilt:[1981 TO *]',
    records: 4500,
    format: 'csv',
  },
  { name: 'shops_7', type: 'businesses', query: 'province:TX', records: 4000, format: 'csv' },
  { name: 'shops_8', type: 'businesses', query: '-province:TX', records: 5500, format: 'json' },
  { name: 'goods_9', type: 'products', query: 'brand:*', records: 4000, format: 'json' },
  {
    name: 'homes_10',
    type: 'properties',
    query: 'numBedroom:[3 TO *]',
    records: 5000,
    format: 'json',
  },
];

interface Run {
  label: string;
  seconds: number;
  peakRssMb: number;
  /** The machine's busy CPU seconds during the run (sluice, the emulator, the database). */
  cpu: number;
  /** Of which the emulator's (this process's): the service's work, elsewhere in real life. */
  emulatorCpu: number;
  tables?: Map<string, string>;
}

try {
  for (const destination of values.destinations.split(',') as ('sqlite' | 'postgres')[]) {
    for (const size of values.sizes.split(',').map(Number)) {
      const jobs = JOBS.slice(0, size);
      const alone: Run[] = [];
      for (const job of jobs)
        alone.push(await run(destination, jobs, `${job.name} alone`, ['--job', job.name]));
      const slowest = alone.reduce((a, b) => (b.seconds > a.seconds ? b : a));
      const serial = await run(
        destination,
        jobs,
        'one job at a time (--parallel 1)',
        ['--parallel', '1'],
        true,
      );
      const together = await run(
        destination,
        jobs,
        `jobs at once (default, ${Math.min(size, DEFAULT_PARALLEL_JOBS)} in flight)`,
        [],
        true,
      );
      const sameAs = (r: Run) =>
        [...serial.tables!].every(([t, h]) => r.tables!.get(t) === h) &&
        serial.tables!.size === r.tables!.size;
      const same = sameAs(together);
      const overlapped: Run[] = [];
      // More jobs than the default keeps in flight: the last ones start only when the first end,
      // so the pipeline takes two downloads' time whatever the loads cost. Every job in flight
      // (`--parallel N`, `max_parallel_jobs: N`) is the run that waits for its slowest download.
      const all =
        size > DEFAULT_PARALLEL_JOBS
          ? await run(
              destination,
              jobs,
              `every job in flight (--parallel ${size})`,
              ['--parallel', String(size)],
              true,
            )
          : together;
      if (all !== together)
        overlapped.push({ ...all, label: `${all.label}${sameAs(all) ? '' : ' (tables DIFFER)'}` });
      if (destination === 'postgres' && values['loads-at-once']) {
        for (const n of values['loads-at-once'].split(',').map(Number)) {
          const r = await run(
            destination,
            jobs,
            `every job in flight, ${n} loads at once`,
            ['--parallel', String(size)],
            true,
            { SLUICE_JOB_LOADS_AT_ONCE: String(n) },
          );
          overlapped.push({ ...r, label: `${r.label}${sameAs(r) ? '' : ' (tables DIFFER)'}` });
        }
      }
      console.log(
        `\n${destination}, ${size} jobs (emulator: queued ${values['queue-ms']} ms, ${values.rate} records/s)`,
      );
      console.log(
        'run                                  seconds  x slowest alone  peak MB  machine CPU s',
      );
      for (const r of [...alone, serial, together, ...overlapped]) {
        console.log(
          `${r.label.padEnd(36)} ${r.seconds.toFixed(1).padStart(7)}  ${(r.seconds / slowest.seconds).toFixed(2).padStart(15)}  ${r.peakRssMb.toFixed(0).padStart(7)}  ${r.cpu.toFixed(1).padStart(13)}`,
        );
      }
      // The bound of jobs at once on this machine: their CPU work spread over every core, on top
      // of the time every job spends waiting for its download to be prepared (no CPU, the same
      // for all of them at once).
      // The emulator's share is the service's work, done elsewhere in real life: left out.
      const queued = Number(values['queue-ms']) / 1000;
      const work = all.cpu - all.emulatorCpu;
      const floor = work / availableParallelism() + queued;
      console.log(
        `CPU floor of every job in flight: ${work.toFixed(1)} CPU s (the machine's ${all.cpu.toFixed(1)}, less the emulator's ${all.emulatorCpu.toFixed(1)}) over ${availableParallelism()} cores + ${queued.toFixed(1)} s queued = ${floor.toFixed(1)} s (${(floor / slowest.seconds).toFixed(2)}x the slowest job alone)`,
      );
      console.log(
        `jobs at once: ${(together.seconds / slowest.seconds).toFixed(2)}x the slowest job alone (${slowest.label}), ${(serial.seconds / together.seconds).toFixed(2)}x faster than one at a time; tables ${same ? 'equal' : 'DIFFER'} to the one-at-a-time run`,
      );
      if (all !== together)
        console.log(
          `every job in flight: ${(all.seconds / slowest.seconds).toFixed(2)}x the slowest job alone; tables ${sameAs(all) ? 'equal' : 'DIFFER'} to the one-at-a-time run`,
        );
    }
  }
} finally {
  await emulator.close();
  for (const schema of schemas) await dropSchema(schema, PG_URL).catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}

function cpuSeconds(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1e6;
}

/** One `sluice run` of the pipeline into a destination of its own. */
async function run(
  destination: 'sqlite' | 'postgres',
  jobs: typeof JOBS,
  label: string,
  args: string[],
  snapshot = false,
  env: Record<string, string> = {},
): Promise<Run> {
  const id = `r${Math.random().toString(36).slice(2, 8)}`;
  const db = join(dir, `${id}.sqlite`);
  const schema = randomSchemaName('sluice_bench_jobs');
  if (destination === 'postgres') schemas.push(schema);
  const where =
    destination === 'sqlite' ? `sqlite:${db}` : `{ url: '${PG_URL}', schema: ${schema} }`;
  const file = join(dir, `${id}.yaml`);
  writeFileSync(
    file,
    `version: 1
name: bench-jobs
source: { api: v4, url: '${emulator.v4Url}', email: '${email}', password: '${password}' }
destination: ${where}
jobs:
${jobs
  .map(
    (j) => `  ${j.name}:
    type: ${j.type}
    query: '${j.query}'
    records: ${j.records}
    format: ${j.format}
    write: merge
    poll: { interval: 500ms, max_interval: 1s }
`,
  )
  .join('')}`,
  );
  const ownCpu = process.cpuUsage();
  const result = await measure(
    join(ROOT, 'bin/sluice.js'),
    ['run', file, '--no-progress', '--json', ...args],
    ROOT,
    env,
  );
  if (result.code !== 0)
    throw new Error(`${label}: sluice run failed (${result.code}): ${result.stderr}`);
  const out: Run = {
    label,
    seconds: result.seconds,
    peakRssMb: result.peakRssMb,
    cpu: result.machineCpuSeconds,
    emulatorCpu: cpuSeconds(process.cpuUsage(ownCpu)),
  };
  if (snapshot) out.tables = await tables(destination, db, schema);
  return out;
}

/** Each data table's rows as a hash of their content, less the columns of the load. */
async function tables(destination: 'sqlite' | 'postgres', db: string, schema: string) {
  const out = new Map<string, string>();
  const rowsOf = async (table: string): Promise<Record<string, unknown>[]> => {
    if (destination === 'sqlite') {
      const handle = new Database(db, { readonly: true });
      try {
        return handle.prepare(`select * from "${table}"`).all() as Record<string, unknown>[];
      } finally {
        handle.close();
      }
    }
    return queryPostgres(`select * from "${schema}"."${table}"`, [], PG_URL);
  };
  const names =
    destination === 'sqlite'
      ? (() => {
          const handle = new Database(db, { readonly: true });
          try {
            return (
              handle.prepare(`select name from sqlite_master where type = 'table'`).all() as {
                name: string;
              }[]
            ).map((r) => r.name);
          } finally {
            handle.close();
          }
        })()
      : (
          await queryPostgres<{ name: string }>(
            'select table_name as name from information_schema.tables where table_schema = $1',
            [schema],
            PG_URL,
          )
        ).map((r) => r.name);
  for (const table of names.filter((n) => !n.startsWith('_sluice'))) {
    const lines = (await rowsOf(table))
      .map((row) =>
        JSON.stringify(
          Object.entries(row)
            .filter(([k]) => !k.startsWith('_sluice_'))
            .sort(([a], [b]) => a.localeCompare(b)),
        ),
      )
      .sort();
    out.set(table, createHash('sha256').update(lines.join('\n')).digest('hex'));
  }
  return out;
}
