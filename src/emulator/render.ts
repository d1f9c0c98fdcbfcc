import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Download } from './state.js';
import { projection } from './views.js';
import type { SearchEngine } from './world/search.js';

/**
 * One CSV cell as the service writes it: arrays of objects as JSON text, arrays of strings
 * comma-joined, and (wire form `wholeNumbersAsFloat`) whole numbers with a trailing `.0`.
 */
export function csvCell(value: unknown, wholeNumbersAsFloat: boolean): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'number') {
    return wholeNumbersAsFloat && Number.isInteger(value) ? `${value}.0` : String(value);
  }
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  let text: string;
  if (typeof value === 'string') text = value;
  else if (Array.isArray(value) && value.every((v) => typeof v !== 'object' || v === null)) {
    text = value.join(',');
  } else text = JSON.stringify(value);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvRow(
  columns: readonly string[],
  record: Record<string, unknown>,
  wholeNumbersAsFloat: boolean,
) {
  let line = '';
  for (let i = 0; i < columns.length; i++) {
    if (i > 0) line += ',';
    line += csvCell(record[columns[i]!], wholeNumbersAsFloat);
  }
  return `${line}\n`;
}

/**
 * What a file holds, hashed: its form, and which records at which versions. The same query can
 * find other records, or the same records changed, at another moment, so the records are named
 * one by one (a hash and a version a record, cheap beside rendering it).
 */
function contentKey(
  engine: SearchEngine,
  d: Download,
  records: { from: number; to: number },
  options: { wholeNumbersAsFloat: boolean; corrupt: number },
): string {
  const world = engine.world;
  const what = JSON.stringify([
    d.type,
    d.autoTrace,
    d.viewFields ?? null,
    d.format,
    records.from,
    options.wholeNumbersAsFloat,
    options.corrupt,
    // Changes are dated from the origin; a reset moves it (and empties the spool).
    world.origin,
    d.extras.list.map((field) => field.spec),
  ]);
  const hash = createHash('sha256').update(what);
  const ids = new Float64Array(Math.min(4096, (records.to - records.from) * 2));
  let n = 0;
  for (let p = records.from; p < records.to; p++) {
    const index = d.matches.at(p);
    ids[n++] = index;
    ids[n++] = world.version(d.type, index, d.createdAt, d.autoTrace);
    if (n === ids.length) {
      hash.update(ids);
      n = 0;
    }
  }
  hash.update(ids.subarray(0, n));
  return hash.digest('hex').slice(0, 32);
}

/** A deterministic number in [0, 1) for a record position. */
function unitHash(position: number): number {
  let h = Math.imul(position ^ 0x9e3779b9, 0x85ebca6b) ^ 0x27d4eb2f;
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  return ((h ^ (h >>> 13)) >>> 0) / 4294967296;
}

/** A broken line in place of a record: too many cells for CSV, cut-off JSON for NDJSON. */
function malformed(format: 'csv' | 'json', cells: number, position: number): string {
  if (format === 'json') return `{"id": "broken-${position}", "address": "12 Truncated St\n`;
  return `${Array.from({ length: cells + 2 }, (_, i) => `x${i}`).join(',')}\n`;
}

export function fileName(d: Download, n: number): string {
  return `${d.publicId}_${n}.${d.format === 'csv' ? 'csv' : 'txt'}`;
}

const CHUNK_BYTES = 256 * 1024;

/**
 * Result files are written once to a spool directory and served from there, as a storage
 * service serves them: with a length, ranges and an ETag, and at disk speed, while memory stays
 * flat whatever the size of the download (records are generated and written a chunk at a time).
 */
export class FileSpool {
  readonly #dir: string;
  readonly #pending = new Map<string, Promise<{ path: string; size: number }>>();

  constructor(dir: string) {
    this.#dir = dir;
  }

  get dir(): string {
    return this.#dir;
  }

  /** The spooled file for part `n` of a download, rendered on first use. */
  file(
    engine: SearchEngine,
    d: Download,
    n: number,
    records: { from: number; to: number },
    options: { wholeNumbersAsFloat: boolean; gzip: boolean; corrupt: number },
  ): Promise<{ path: string; size: number }> {
    // Spooled by content, not by download: two downloads of the same records in the same form
    // share their files, so a benchmark can warm the spool before it measures a loader.
    const name = `${contentKey(engine, d, records, options)}.${d.format === 'csv' ? 'csv' : 'txt'}${options.gzip ? '.gz' : ''}`;
    let pending = this.#pending.get(name);
    if (!pending) {
      pending = options.gzip
        ? this.file(engine, d, n, records, { ...options, gzip: false }).then((plain) =>
            this.#gzip(plain.path, join(this.#dir, name)),
          )
        : this.#render(engine, d, records, options, join(this.#dir, name));
      // A failed render must not stay cached: the next request tries again.
      pending.catch(() => this.#pending.delete(name));
      this.#pending.set(name, pending);
    }
    return pending;
  }

  async #render(
    engine: SearchEngine,
    d: Download,
    { from, to }: { from: number; to: number },
    { wholeNumbersAsFloat, corrupt }: { wholeNumbersAsFloat: boolean; corrupt: number },
    path: string,
  ): Promise<{ path: string; size: number }> {
    await mkdir(this.#dir, { recursive: true });
    const temp = `${path}.part`;
    const out = createWriteStream(temp);
    const { columns, project } = projection(d.type, d.viewFields, d.extras);
    let chunk = d.format === 'csv' ? `${columns.join(',')}\n` : '';
    try {
      for (let p = from; p < to; p++) {
        const record = project(
          engine.record(d.type, d.matches.at(p), d.autoTrace, d.createdAt, d.extras),
        );
        if (corrupt > 0 && unitHash(p) < corrupt) chunk += malformed(d.format, columns.length, p);
        else
          chunk +=
            d.format === 'csv'
              ? csvRow(columns, record, wholeNumbersAsFloat)
              : `${JSON.stringify(record)}\n`;
        if (chunk.length >= CHUNK_BYTES) {
          if (!out.write(chunk)) await once(out, 'drain');
          chunk = '';
        }
      }
      out.end(chunk);
      await once(out, 'finish');
    } catch (error) {
      out.destroy();
      await rm(temp, { force: true });
      throw error;
    }
    await rename(temp, path);
    return { path, size: (await stat(path)).size };
  }

  async #gzip(source: string, path: string): Promise<{ path: string; size: number }> {
    const temp = `${path}.part`;
    await pipeline(createReadStream(source), createGzip(), createWriteStream(temp));
    await rename(temp, path);
    return { path, size: (await stat(path)).size };
  }

  async clear(): Promise<void> {
    this.#pending.clear();
    await rm(this.#dir, { recursive: true, force: true });
  }
}
