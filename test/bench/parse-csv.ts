/**
 * Where the CSV loader's time goes, one stage at a time, on the same property file (about
 * 1.3 KB a row): csv-parse's stream with its default options, and with raw text and line info
 * (what a loader needs for rejects, if it asks csv-parse for them); then the loader's own
 * reading (src/records/csv.ts: whole records cut out first, csv-parse on blocks of them, the
 * raw text and lines known without asking), decoding by the catalogue, and shaping into tables.
 *
 *   npx tsx test/bench/parse-csv.ts [--records 40000]
 */
import { createReadStream, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'csv-parse';
import { startEmulator } from '../../src/emulator/index.js';
import { shapePlanOf } from '../../src/pipeline/context.js';
import { parsePipeline } from '../../src/pipeline/spec/spec.js';
import { recordBatches } from '../../src/records/index.js';
import { JobTables } from '../../src/records/tables.js';

const { values } = parseArgs({ options: { records: { type: 'string', default: '40000' } } });
const RECORDS = Number(values.records);
const dir = mkdtempSync(join(tmpdir(), 'sluice-parse-'));
const file = join(dir, 'homes.csv');
const emulator = await startEmulator({
  port: 0,
  // This script reads the emulator's answers itself, in the interface's own forms.
  wire: 'contract',
  scale: Math.max(1, RECORDS / 20_000),
  rate: 1e9,
  queueMs: 0,
  fileRecords: RECORDS,
});
try {
  const { email, password } = emulator.options;
  const post = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(emulator.url + path, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify(body),
    });
    return (await res.json()) as Record<string, unknown>;
  };
  const { token } = (await post('/v4/auth', { email, password })) as { token: string };
  const start = await post(
    '/v4/properties/search',
    { query: '*', num_records: RECORDS, download: true, format: 'csv' },
    token,
  );
  let download: { status: string; results: { url: string }[] };
  do {
    await new Promise((r) => setTimeout(r, 50));
    const res = await fetch(`${emulator.url}/v4/downloads/${start.download_id}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    download = (await res.json()) as typeof download;
  } while (download.status !== 'completed');
  writeFileSync(file, Buffer.from(await (await fetch(download.results[0]!.url)).arrayBuffer()));
} finally {
  await emulator.close();
}
const bytes = statSync(file).size;
console.log(`${RECORDS} records, ${(bytes / 1e6).toFixed(1)} MB of CSV\n`);

const spec = parsePipeline(
  `version: 1\nname: b\nsource: { api: v4, url: 'http://x.test/v4', email: e, password: p }\njobs:\n  homes:\n    type: properties\n    query: '*'\n`,
  'bench.yaml',
  {},
);
const plan = shapePlanOf(spec.jobs[0]!, spec);

async function time(label: string, work: () => Promise<number>) {
  const t0 = performance.now();
  const rows = await work();
  const s = (performance.now() - t0) / 1000;
  console.log(
    `${label.padEnd(44)} ${Math.round(rows / s)
      .toString()
      .padStart(8)} rows/s ${(bytes / 1e6 / s).toFixed(1).padStart(6)} MB/s`,
  );
}

const stream = (highWaterMark?: number) =>
  createReadStream(file, highWaterMark ? { highWaterMark } : {});
for (const hwm of [undefined, 1 << 20]) {
  const buffer = hwm ? ', 1 MB reads' : '';
  await time(`csv-parse, defaults${buffer}`, async () => {
    let n = 0;
    for await (const _ of stream(hwm).pipe(parse())) n++;
    return n - 1;
  });
  await time(`csv-parse, raw + info${buffer}`, async () => {
    let n = 0;
    for await (const _ of stream(hwm).pipe(
      parse({ raw: true, info: true, relax_column_count: true }),
    ))
      n++;
    return n - 1;
  });
  await time(`recordBatches, nested json${buffer}`, async () => {
    let n = 0;
    for await (const b of recordBatches(stream(hwm), 'csv', 'properties')) n += b.rows.length;
    return n;
  });
  await time(`recordBatches, nested tables${buffer}`, async () => {
    let n = 0;
    const tables = new JobTables(plan);
    for await (const b of recordBatches(stream(hwm), 'csv', 'properties', { shape: tables.shape }))
      n += b.rows.length;
    return n;
  });
}
if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
else console.log(file);
