/**
 * The SQLite hot path: the same rows inserted through a cached prepared statement (what
 * SqliteDestination does), through prepared statements of several rows each, and through
 * Kysely's query builder (multi-row `insertInto().values()` per batch), in one transaction
 * each, into fresh tables of the same file. Then the page size: the emulator's property records
 * (about 1.7 KB each as a row) committed 10,000 at a time (a result file each) into a new file
 * of 4 KB pages (SQLite's default) and one of sluice's (PAGE_SIZE), inserts and commits
 * timed apart, in two rounds.
 *
 *   npx tsx test/bench/sqlite-insert.ts [--rows 200000] [--batch 500]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { Dataset } from '../../src/emulator/data/dataset.js';
import { PAGE_SIZE } from '../../src/load/sqlite/connection.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '200000' },
    batch: { type: 'string', default: '500' },
  },
});
const ROWS = Number(values.rows);
const BATCH = Number(values.batch);
const COLUMNS = Array.from({ length: 30 }, (_, i) => `c${i}`);

function row(i: number): Record<string, string | number | null> {
  const r: Record<string, string | number | null> = {};
  COLUMNS.forEach((c, j) => {
    r[c] =
      j % 3 === 0
        ? i * j
        : j % 3 === 1
          ? `value ${i} of column ${j}, some text`
          : j % 7
            ? i / 7
            : null;
  });
  return r;
}
const rows = Array.from({ length: ROWS }, (_, i) => row(i));

const dir = mkdtempSync(join(tmpdir(), 'sluice-insert-'));
const handle = new Database(join(dir, 'bench.sqlite'));
handle.pragma('journal_mode = WAL');
handle.pragma('synchronous = NORMAL');
const db = new Kysely<Record<string, Record<string, unknown>>>({
  dialect: new SqliteDialect({ database: handle }),
});
const create = (table: string) =>
  handle.exec(`CREATE TABLE ${table} (${COLUMNS.map((c) => `"${c}"`).join(', ')})`);

async function time(label: string, work: () => Promise<void>) {
  const t0 = performance.now();
  await work();
  const s = (performance.now() - t0) / 1000;
  console.log(
    `${label.padEnd(44)} ${Math.round(ROWS / s)
      .toString()
      .padStart(9)} rows/s`,
  );
}

for (let round = 0; round < 2; round++) {
  create(`prepared_${round}`);
  await time('prepared statement, one run() per row', async () => {
    const statement = handle.prepare(
      `INSERT INTO prepared_${round} (${COLUMNS.map((c) => `"${c}"`).join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`,
    );
    const params: unknown[] = new Array(COLUMNS.length);
    await db.transaction().execute(async () => {
      for (const r of rows) {
        for (let j = 0; j < COLUMNS.length; j++) params[j] = r[COLUMNS[j]!];
        statement.run(params);
      }
    });
  });
  for (const per of [10, 50]) {
    create(`multi_${per}_${round}`);
    await time(`prepared statement, ${per} rows per run()`, async () => {
      const one = `(${COLUMNS.map(() => '?').join(', ')})`;
      const head = `INSERT INTO multi_${per}_${round} (${COLUMNS.map((c) => `"${c}"`).join(', ')}) VALUES `;
      const many = handle.prepare(head + Array.from({ length: per }, () => one).join(', '));
      const single = handle.prepare(head + one);
      const params: unknown[] = new Array(COLUMNS.length * per);
      await db.transaction().execute(async () => {
        let i = 0;
        for (; i + per <= rows.length; i += per) {
          for (let k = 0, o = 0; k < per; k++) {
            const r = rows[i + k]!;
            for (let j = 0; j < COLUMNS.length; j++) params[o++] = r[COLUMNS[j]!];
          }
          many.run(params);
        }
        for (; i < rows.length; i++) single.run(COLUMNS.map((c) => rows[i]![c]));
      });
    });
  }
  create(`kysely_${round}`);
  await time(`Kysely insertInto().values(), ${BATCH} rows each`, async () => {
    await db.transaction().execute(async (trx) => {
      // SQLite allows at most 32766 parameters in one statement.
      const per = Math.min(BATCH, Math.floor(32766 / COLUMNS.length));
      for (let i = 0; i < rows.length; i += per) {
        await trx
          .insertInto(`kysely_${round}`)
          .values(rows.slice(i, i + per))
          .execute();
      }
    });
  });
}
await db.destroy();

const FILE_ROWS = 10_000;
// The emulator's property records (about 1.7 KB each as a row), nested values as JSON text.
const dataset = new Dataset({ seed: 1, scale: Math.ceil(ROWS / 20_000) });
const records = Array.from({ length: ROWS }, (_, i) => dataset.record('properties', i));
const fields = [...new Set(records.flatMap((r) => Object.keys(r)))];
const propertyRows = records.map((r) =>
  fields.map((f) => {
    const v = r[f];
    if (v === undefined || v === null) return null;
    if (typeof v === 'object') return JSON.stringify(v);
    return typeof v === 'boolean' ? Number(v) : (v as string | number);
  }),
);
console.log(`\npage size, property records committed ${FILE_ROWS} at a time (a result file each)`);
// Two rounds, the order swapped in the second, so that neither size always runs first.
for (const [round, pageSize] of [4096, PAGE_SIZE, PAGE_SIZE, 4096].entries()) {
  const file = new Database(join(dir, `pages-${pageSize}-${round}.sqlite`));
  file.pragma(`page_size = ${pageSize}`);
  file.pragma('journal_mode = WAL');
  file.pragma('synchronous = NORMAL');
  file.exec(`CREATE TABLE t (${fields.map((c) => `"${c}"`).join(', ')})`);
  const statement = file.prepare(`INSERT INTO t VALUES (${fields.map(() => '?').join(', ')})`);
  let inserting = 0;
  let committing = 0;
  for (let i = 0; i < propertyRows.length; i += FILE_ROWS) {
    file.exec('BEGIN');
    let t = performance.now();
    for (const r of propertyRows.slice(i, i + FILE_ROWS)) statement.run(r);
    inserting += performance.now() - t;
    t = performance.now();
    file.exec('COMMIT');
    committing += performance.now() - t;
  }
  const pages = file.pragma('page_count', { simple: true }) as number;
  file.close();
  console.log(
    `${`${pageSize / 1024} KB pages`.padEnd(14)} insert ${Math.round(ROWS / (inserting / 1000))
      .toString()
      .padStart(7)} rows/s   commits ${(committing / 1000).toFixed(2)} s   file ${Math.round(
      (pages * pageSize) / 1e6,
    )} MB`,
  );
}
rmSync(dir, { recursive: true, force: true });
