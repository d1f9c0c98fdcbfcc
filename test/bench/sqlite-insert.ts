/**
 * The SQLite hot path: the same rows inserted through a cached prepared statement (what
 * SqliteDestination does), through prepared statements of several rows each, and through Kysely's query builder (multi-row `insertInto().values()`
 * per batch), in one transaction each, into fresh tables of the same file.
 *
 *   npx tsx test/bench/sqlite-insert.ts [--rows 200000] [--batch 500]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';

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
rmSync(dir, { recursive: true, force: true });
