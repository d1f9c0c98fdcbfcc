import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { startEmulator } from '../../src/emulator/index.js';

/**
 * What the load benchmarks share: one download of property records through the emulator's v4
 * API, so that the emulator spools every result file before anything is measured, and the
 * files saved for the databases' own readers.
 */

/**
 * An emulator for `records` property records, answering in the interface's own forms (the
 * benches read its answers themselves), downloads ready at once, credits without end, and no
 * churn: each download of the query is the warmed one's files, served from the spool, where
 * with the data changing by the clock every run's download was rendered anew, beside the run
 * measured (about a second of CPU on the same two cores for 100,000 property records).
 */
export function benchEmulator(records: number) {
  return startEmulator({
    port: 0,
    wire: 'contract',
    scale: Math.max(1, Math.ceil(records / 20_000)),
    rate: 1e9,
    queueMs: 0,
    churn: 0,
    credits: { business: 1e9, people: 1e9, product: 1e9, property: 1e9 },
  });
}

export interface WarmedDownload {
  /** The result files, saved in `dir`. */
  files: string[];
  /** Their URLs on the emulator. */
  urls: string[];
}

export async function warmDownload(
  emulator: { url: string; options: { email: string; password: string } },
  options: { records: number; format: 'csv' | 'json'; dir: string },
): Promise<WarmedDownload> {
  const api = apiOf(emulator.url);
  const { email, password } = emulator.options;
  const auth = (await api('POST', '/v4/auth', { email, password })) as { token: string };
  const headers = { authorization: `Bearer ${auth.token}` };
  const body = { query: '*', num_records: options.records, download: true, format: options.format };
  const start = (await api('POST', '/v4/properties/search', body, headers)) as {
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
  const urls = download.results.map((r) => r.url);
  const files: string[] = [];
  for (const [i, url] of urls.entries()) {
    const res = await request(url);
    const path = join(options.dir, `warm-${options.format}-${i}.${options.format}`);
    writeFileSync(path, Buffer.from(await res.body.arrayBuffer()));
    files.push(path);
  }
  return { files, urls };
}

/** A JSON request to the emulator; anything but 2xx throws with what it said. */
function apiOf(base: string) {
  return async (method: string, path: string, body?: unknown, headers = {}) => {
    const res = await request(base + path, {
      method: method as 'GET',
      headers: {
        ...headers,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${path} -> ${res.statusCode}: ${text}`);
    return JSON.parse(text) as unknown;
  };
}
