/**
 * Where a load's time goes, stage by stage, in this one thread, on result files already on
 * disk: read (the bytes), parse (JSON.parse of each line, or csv-parse), decode, shape and pack
 * (sluice's records stage: catalogue decoding, nested values to JSON text or child rows, the
 * job's rows packed in column order), transfer (what moving a packed batch between threads
 * costs: its values put in one string and one buffer and V8's serializer, which postMessage
 * uses, in the parsing thread; V8's deserializer and the values taken back in the writing one;
 * timed apart), and write (prepared inserts of the packed rows into a
 * SQLite file of sluice's page size, in one transaction). And the floor: a naive
 * loop doing the same work, JSON.parse of each line, nested values stringified again and a
 * prepared insert, with no batches, no workers and no checks. Used by load.ts; also runs alone:
 *
 *   npx tsx test/bench/stages.ts <file.txt|file.csv>...
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { deserialize, serialize } from 'node:v8';
import Database from 'better-sqlite3';
import { parse } from 'csv-parse/sync';
import { PAGE_SIZE } from '../../src/load/sqlite/connection.js';
import { BLOCK_BYTES, packedBatches } from '../../src/records/index.js';
import { JobTables } from '../../src/records/tables.js';
import type { PackedBatch } from '../../src/records/types.js';
import { fromWire, type PostedBatch, toWire } from '../../src/records/workers/posted-batch.js';
import type { PackedRows } from '../../src/schema/types.js';

export interface StageFigures {
  rows: number;
  /** Seconds per stage, in this thread. */
  read: number;
  parse: number;
  decodeShape: number;
  /** Serializing batches (in a parse worker) and deserializing them (in the writing thread). */
  transferOut: number;
  transferIn: number;
  write: number;
  /** The naive one-thread loop (NDJSON only): parse, stringify nested values, insert. */
  naive?: number;
}

export async function stageProfile(
  files: string[],
  format: 'csv' | 'json',
  nested: 'json' | 'tables' = 'json',
): Promise<StageFigures> {
  const tables = new JobTables({
    type: 'properties',
    table: 'homes',
    key: ['id'],
    write: 'append',
    nested,
  });
  const dir = mkdtempSync(join(tmpdir(), 'sluice-stages-'));
  const figures: StageFigures = {
    rows: 0,
    read: 0,
    parse: 0,
    decodeShape: 0,
    transferOut: 0,
    transferIn: 0,
    write: 0,
  };
  const db = openDatabase(join(dir, 'write.sqlite'));
  try {
    // File by file, as a run goes, so that memory stays that of one file.
    for (const file of files) {
      let t = performance.now();
      const buffer = readFileSync(file);
      figures.read += seconds(t);

      t = performance.now();
      const text = buffer.toString('utf8');
      if (format === 'json') {
        for (const line of text.split('\n')) {
          if (!line) continue;
          JSON.parse(line);
          figures.rows++;
        }
      } else figures.rows += (parse(text, { relax_column_count: true }) as unknown[]).length - 1;
      const parsed = seconds(t);
      figures.parse += parsed;

      // The records stage as a run has it (parse, decode, shape, pack), less the parse above.
      t = performance.now();
      const batches: PackedBatch[] = [];
      // In blocks of 64 KB, as a file arrives: a batch is the records of whole blocks, 500 or
      // more (CSV: 500).
      const blocks: Buffer[] = [];
      for (let at = 0; at < buffer.byteLength; at += BLOCK_BYTES) {
        blocks.push(buffer.subarray(at, at + BLOCK_BYTES));
      }
      for await (const batch of packedBatches(Readable.from(blocks), format, tables, 500)) {
        batches.push(batch);
      }
      figures.decodeShape += Math.max(0, seconds(t) - parsed);

      // As a parse worker posts a batch and the writing thread takes it (records/workers/posted-batch.ts). Serializing
      // also copies the buffer a run moves between threads (9 bytes a value at most).
      t = performance.now();
      const serialized = batches.map((batch) => serialize(toWire(batch).batch));
      figures.transferOut += seconds(t);
      t = performance.now();
      const taken = serialized.map((bytes) => fromWire(deserialize(bytes) as PostedBatch));
      figures.transferIn += seconds(t);

      // The rows the writing thread binds: text values are slices of one string per batch.
      figures.write += insertAll(
        db,
        taken.map((b) => b.rows),
      );
    }
    db.close();
    if (format === 'json') figures.naive = naiveLoop(join(dir, 'naive.sqlite'), files);
    return figures;
  } finally {
    if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function seconds(since: number): number {
  return (performance.now() - since) / 1000;
}

/** A new file with sluice's settings (sqlite-dialect.ts), for both the stage and the floor. */
function openDatabase(path: string): Database.Database {
  const db = new Database(path);
  db.pragma(`page_size = ${PAGE_SIZE}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  return db;
}

/** Prepared inserts of packed rows into one table (made by the first batch), in a transaction. */
function insertAll(db: Database.Database, batches: PackedRows[]): number {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'homes'").get();
  if (!exists) {
    const names = [...new Set(batches.flatMap((b) => b.names))];
    db.exec(`CREATE TABLE homes (${names.map((c) => `"${c}"`).join(', ')})`);
  }
  const columns = (db.prepare('PRAGMA table_info(homes)').all() as { name: string }[]).map(
    (c) => c.name,
  );
  const insert = db.prepare(`INSERT INTO homes VALUES (${columns.map(() => '?').join(', ')})`);
  const t = performance.now();
  db.transaction(() => {
    const values = new Array<unknown>(columns.length);
    for (const batch of batches) {
      const width = batch.names.length;
      const at = columns.map((c) => batch.names.indexOf(c));
      for (let r = 0; r < batch.count; r++) {
        for (let i = 0; i < columns.length; i++) {
          const v = at[i]! < 0 ? null : batch.values[r * width + at[i]!];
          values[i] = typeof v === 'boolean' ? Number(v) : (v ?? null);
        }
        insert.run(values);
      }
    }
  })();
  return seconds(t);
}

/** The naive loop: one thread, JSON.parse, nested values stringified again, a prepared insert. */
function naiveLoop(path: string, files: string[]): number {
  const db = openDatabase(path);
  const first = JSON.parse(readFileSync(files[0]!, 'utf8').split('\n', 1)[0]!) as Record<
    string,
    unknown
  >;
  const columns = Object.keys(first);
  db.exec(`CREATE TABLE homes (${columns.map((c) => `"${c}"`).join(', ')})`);
  const insert = db.prepare(`INSERT INTO homes VALUES (${columns.map(() => '?').join(', ')})`);
  const t = performance.now();
  db.transaction(() => {
    const values = new Array<unknown>(columns.length);
    for (const file of files) {
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (!line) continue;
        const record = JSON.parse(line) as Record<string, unknown>;
        for (let i = 0; i < columns.length; i++) {
          const v = record[columns[i]!];
          values[i] =
            v === undefined || v === null
              ? null
              : typeof v === 'object'
                ? JSON.stringify(v)
                : typeof v === 'boolean'
                  ? Number(v)
                  : v;
        }
        insert.run(values);
      }
    }
  })();
  const s = seconds(t);
  db.close();
  return s;
}

export function printStages(label: string, f: StageFigures): void {
  const rate = (s: number) => (s > 0 ? Math.round(f.rows / s).toLocaleString('en-US') : '-');
  console.log(`\nstages, one thread (${label}, ${f.rows} rows)      s     rows/s`);
  const line = (name: string, s: number) =>
    console.log(`  ${name.padEnd(42)} ${s.toFixed(2).padStart(6)} ${rate(s).padStart(10)}`);
  line('read (bytes from disk)', f.read);
  line('parse (JSON.parse / csv-parse)', f.parse);
  line('decode, shape, pack (catalogue, nested)', f.decodeShape);
  line('transfer out (serialize, parse worker)', f.transferOut);
  line('transfer in (deserialize, writing thread)', f.transferIn);
  line('write (prepared inserts, one transaction)', f.write);
  const total = f.read + f.parse + f.decodeShape + f.transferOut + f.transferIn + f.write;
  line('sum of the stages', total);
  if (f.naive !== undefined) line('naive loop: parse + stringify + insert', f.naive);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const files = process.argv.slice(2);
  const format = files[0]?.endsWith('.csv') ? 'csv' : 'json';
  printStages(format, await stageProfile(files, format));
}
