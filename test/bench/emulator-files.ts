/**
 * How fast the emulator serves result files, and whether its memory stays flat.
 *
 *   npx tsx test/bench/emulator-files.ts [--records 1000000] [--format csv|json] [--scale 50]
 *
 * Starts an emulator in this process, downloads every matching property record, then fetches
 * every result file over loopback HTTP. It prints, side by side: the first fetch (the emulator
 * renders the file into its spool while serving), a second fetch (served from the spool), and a
 * plain `node:fs` read of the same spooled files as the reference ceiling, with the peak RSS of
 * the process. The bar: 100 MB/s or more on loopback, memory flat for a million records.
 */
import { createReadStream, readdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { startEmulator } from '../../src/emulator/index.js';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    format: { type: 'string', default: 'csv' },
    scale: { type: 'string', default: '' },
  },
});
const records = Number(values.records);
const format = values.format === 'json' ? 'json' : 'csv';
// A scale whose property count covers the records asked for (20,000 properties per unit).
const scale = values.scale ? Number(values.scale) : Math.max(1, Math.ceil(records / 20_000));

let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 50);
const mb = (bytes: number) => (bytes / 1e6).toFixed(1);

const emulator = await startEmulator({
  port: 0,
  // This script reads the emulator's answers itself, in the interface's own forms.
  wire: 'contract',
  scale,
  rate: 1e9,
  queueMs: 0,
  credits: { business: 1e9, people: 1e9, product: 1e9, property: 1e9 },
});
const { email, password } = emulator.options;
try {
  const auth = await post('/v4/auth', { email, password });
  const token = (auth as { token: string }).token;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const started = (await post(
    '/v4/properties/search',
    { query: '*', num_records: records, download: true, format },
    headers,
  )) as { download_id: string; num_found: number };
  let download: { status: string; num_records: number; results: { url: string }[] };
  do {
    await new Promise((resolve) => setTimeout(resolve, 20));
    download = (await get(`/v4/downloads/${started.download_id}`, headers)) as typeof download;
  } while (download.status !== 'completed');
  console.log(
    `download ${started.download_id}: ${download.num_records.toLocaleString('en-US')} ${format} records in ${download.results.length} files (scale ${scale})`,
  );

  const first = await fetchAll(download.results.map((r) => r.url));
  const second = await fetchAll(download.results.map((r) => r.url));
  const spooled = await readSpool(emulator.context.spool.dir);

  console.log('');
  console.log('                               MB        s     MB/s   records/s');
  for (const [label, run] of [
    ['first fetch (render + serve)', first],
    ['second fetch (from spool)', second],
    ['reference: fs read of spool', spooled],
  ] as const) {
    console.log(
      `${label.padEnd(30)} ${mb(run.bytes).padStart(6)} ${run.seconds.toFixed(2).padStart(8)} ${(run.bytes / 1e6 / run.seconds).toFixed(0).padStart(8)} ${Math.round(
        download.num_records / run.seconds,
      )
        .toLocaleString('en-US')
        .padStart(11)}`,
    );
  }
  console.log('');
  console.log(
    `second fetch / fs read: ${(second.seconds > 0 ? spooled.seconds / second.seconds : 0).toFixed(2)}x`,
  );
  console.log(`peak RSS of the process: ${mb(peakRss)} MB (the files total ${mb(first.bytes)} MB)`);
} finally {
  clearInterval(sampler);
  await emulator.close();
}

async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json' },
) {
  const res = await request(emulator.url + path, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${path} -> ${res.statusCode} ${text}`);
  return JSON.parse(text) as unknown;
}

async function get(path: string, headers: Record<string, string>) {
  const res = await request(emulator.url + path, { headers });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${path} -> ${res.statusCode} ${text}`);
  return JSON.parse(text) as unknown;
}

async function fetchAll(urls: string[]) {
  const t0 = performance.now();
  let bytes = 0;
  for (const url of urls) {
    const res = await request(url);
    if (res.statusCode !== 200) throw new Error(`${url} -> ${res.statusCode}`);
    for await (const chunk of res.body) bytes += (chunk as Buffer).length;
  }
  return { bytes, seconds: (performance.now() - t0) / 1000 };
}

/** Reads every file the emulator spooled (they are named by content, not by download). */
async function readSpool(dir: string) {
  const names = readdirSync(dir).filter((name) => !name.endsWith('.part'));
  const t0 = performance.now();
  let bytes = 0;
  for (const name of names) {
    for await (const chunk of createReadStream(`${dir}/${name}`, { highWaterMark: 256 * 1024 })) {
      bytes += (chunk as Buffer).length;
    }
  }
  return { bytes, seconds: (performance.now() - t0) / 1000 };
}
