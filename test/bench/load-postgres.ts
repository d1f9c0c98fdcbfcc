/**
 * Loader speed into PostgreSQL: sluice's destination against psql's `\copy` of the same CSV.
 *
 *   npx tsx test/bench/load-postgres.ts [rows]        (default 200000)
 *
 * PostgreSQL comes from SLUICE_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test);
 * `psql` must be on the PATH. N property-like rows (30 columns: text, integers, reals, two ISO
 * timestamps, a boolean and a JSON column) are generated once and written as a CSV file. Then:
 *
 *   psql append    `\copy t FROM file CSV HEADER` into a pre-created table
 *   psql merge     `\copy` into a temp table, then INSERT .. ON CONFLICT (id) DO UPDATE, into a
 *                  table that already holds every row (so all updates), in one psql session
 *   sluice append  the CSV read with csv-parse, values typed, writeRows(.., 'append') in batches
 *                  of 5000, one transaction per 100k rows. Parsing is inside sluice's time.
 *   sluice merge   the same, 'merge' on key id: first pass into an empty table (inserts), second
 *                  pass of the same rows (all updates, key index already there)
 *   (pre-parsed)   append and the all-updates merge again, from rows parsed beforehand (untimed):
 *                  the destination's own speed, without csv-parse
 *
 * Everything happens in a throwaway schema, dropped at the end.
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse';
import type { ColumnType, Destination } from '../../src/load/destination.js';
import { openDestination } from '../../src/load/index.js';
import { PG_TYPE } from '../../src/load/postgres/types.js';
import type { Row, RowValue } from '../../src/records/types.js';
import type { TableDef } from '../../src/schema/plan.js';
import { dropSchema, postgresUrl, randomSchemaName } from '../helpers/postgres.js';

const ROWS = Number(process.argv[2] ?? 200_000);
const BATCH = 5000;
const PER_TRANSACTION = 100_000;
if (!Number.isInteger(ROWS) || ROWS <= 0) {
  console.error('usage: npx tsx test/bench/load-postgres.ts [rows]');
  process.exit(2);
}

const COLUMNS: [string, ColumnType][] = [
  ['id', 'integer'],
  ['listing_id', 'text'],
  ['address', 'text'],
  ['city', 'text'],
  ['state', 'text'],
  ['zip', 'text'],
  ['county', 'text'],
  ['latitude', 'real'],
  ['longitude', 'real'],
  ['beds', 'integer'],
  ['baths', 'real'],
  ['sqft', 'integer'],
  ['lot_sqft', 'integer'],
  ['year_built', 'integer'],
  ['price', 'integer'],
  ['tax_amount', 'real'],
  ['hoa_fee', 'real'],
  ['status', 'text'],
  ['property_type', 'text'],
  ['listed_at', 'timestamp'],
  ['updated_at', 'timestamp'],
  ['description', 'text'],
  ['agent_name', 'text'],
  ['broker', 'text'],
  ['mls', 'text'],
  ['photos', 'integer'],
  ['garage_spaces', 'integer'],
  ['has_pool', 'boolean'],
  ['stories', 'integer'],
  ['features', 'json'],
];

// A small deterministic PRNG, so every run loads the same data.
let seed = 42;
function rand(): number {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const CITIES = [
  'Springfield',
  'Riverside',
  'Fairview',
  'Franklin',
  'Greenville',
  'Bristol',
  'Clinton',
  'Salem',
];
const STATES = ['CA', 'TX', 'FL', 'NY', 'OH', 'WA', 'OR', 'GA'];
const STREETS = [
  'Main St',
  'Oak Ave',
  'Pine Rd',
  'Maple Dr',
  'Cedar Ln',
  'Elm St',
  'Lakeview Blvd',
];
const WORDS = [
  'sunny',
  'spacious',
  'renovated',
  'quiet',
  'cozy',
  'modern',
  'charming',
  'open-plan',
  'bright',
];
const FEATURES = ['fireplace', 'deck', 'basement', 'solar', 'ev charger', 'garden', 'view'];

function generate(i: number): Record<string, RowValue> {
  const listed = Date.UTC(2020, 0, 1) + Math.floor(rand() * 4 * 365 * 86_400_000);
  const words = Array.from({ length: 12 + Math.floor(rand() * 20) }, () => pick(WORDS)).join(' ');
  const description =
    i % 50 === 0 ? `${words}, "as is"\nsecond line` : `${words}, close to schools`;
  return {
    id: i + 1,
    listing_id: `L${(1_000_000 + i).toString(36).toUpperCase()}`,
    address: `${1 + Math.floor(rand() * 9999)} ${pick(STREETS)}`,
    city: pick(CITIES),
    state: pick(STATES),
    zip: String(10_000 + Math.floor(rand() * 89_999)),
    county: `${pick(CITIES)} County`,
    latitude: Math.round((25 + rand() * 23) * 1e6) / 1e6,
    longitude: Math.round((-124 + rand() * 57) * 1e6) / 1e6,
    beds: 1 + Math.floor(rand() * 6),
    baths: 1 + Math.floor(rand() * 8) / 2,
    sqft: 500 + Math.floor(rand() * 4500),
    lot_sqft: rand() < 0.1 ? null : 1000 + Math.floor(rand() * 40_000),
    year_built: 1900 + Math.floor(rand() * 124),
    price: 50_000 + Math.floor(rand() * 2_000_000),
    tax_amount: Math.round(rand() * 2_000_000) / 100,
    hoa_fee: rand() < 0.5 ? null : Math.round(rand() * 80_000) / 100,
    status: pick(['active', 'pending', 'sold', 'off market']),
    property_type: pick(['single family', 'condo', 'townhouse', 'multi family']),
    listed_at: new Date(listed).toISOString(),
    updated_at: new Date(listed + Math.floor(rand() * 90 * 86_400_000)).toISOString(),
    description,
    agent_name: `${pick(['Ann', 'Bob', 'Cy', 'Dee', 'Eve'])} ${pick(['Smith', 'Jones', "O'Brien", 'García'])}`,
    broker: `${pick(['Acme', 'Home', 'Key'])} Realty`,
    mls: `MLS-${Math.floor(rand() * 1e8)}`,
    photos: Math.floor(rand() * 40),
    garage_spaces: Math.floor(rand() * 4),
    has_pool: rand() < 0.2,
    stories: 1 + Math.floor(rand() * 3),
    features: JSON.stringify({
      tags: Array.from({ length: Math.floor(rand() * 4) }, () => pick(FEATURES)),
      rating: Math.round(rand() * 50) / 10,
      note: i % 97 === 0 ? 'tab\there "quoted"' : null,
    }),
  };
}

function csvField(value: RowValue): string {
  if (value === null) return '';
  const text = String(value);
  return /[",\n\r]/.test(text) || text === '' ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Turns one CSV record back into typed values, as sluice's records stage would. */
function typed(record: string[]): Row {
  const row: Row = {};
  for (let i = 0; i < COLUMNS.length; i++) {
    const [name, type] = COLUMNS[i]!;
    const raw = record[i] ?? '';
    if (raw === '') row[name] = null;
    else if (type === 'integer' || type === 'real') row[name] = Number(raw);
    else if (type === 'boolean') row[name] = raw === 'true';
    else row[name] = raw;
  }
  return row;
}

const url = postgresUrl();
const schema = randomSchemaName('sluice_bench');
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-pg-'));
const csvPath = join(dir, 'properties.csv');
const q = (name: string) => `"${name.replaceAll('"', '""')}"`;
const createSql = (table: string) =>
  `CREATE TABLE ${q(schema)}.${q(table)} (${COLUMNS.map(([n, t]) => `${q(n)} ${PG_TYPE[t]}`).join(', ')})`;

function psql(...commands: string[]): void {
  const args = [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1'];
  for (const command of commands) args.push('-c', command);
  execFileSync('psql', args, { stdio: ['ignore', 'ignore', 'inherit'] });
}

function timed(work: () => void): number {
  const start = process.hrtime.bigint();
  work();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function timedAsync(work: () => Promise<void>): Promise<number> {
  const start = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** The CSV's rows, typed, from csv-parse. */
async function* csvRows(): AsyncGenerator<Row> {
  for await (const record of createReadStream(csvPath).pipe(parse({ from_line: 2 }))) {
    yield typed(record as string[]);
  }
}

/** Writes `source` through the destination: batches of 5000, 100k rows per transaction. */
async function sluiceLoad(
  dest: Destination,
  table: TableDef,
  mode: 'append' | 'merge',
  source: AsyncIterable<Row> | Iterable<Row>,
): Promise<number> {
  const rows =
    Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
  let done = false;
  let total = 0;
  await dest.prepareTables([table]);
  const target = { table: table.name, mode, key: table.key, hints: {} };
  while (!done) {
    await dest.loadFile(async (tx) => {
      let inTransaction = 0;
      let batch: Row[] = [];
      while (inTransaction < PER_TRANSACTION) {
        const next = await rows.next();
        if (next.done) {
          done = true;
          break;
        }
        batch.push(next.value);
        inTransaction++;
        if (batch.length === BATCH) {
          await tx.write(target, batch);
          batch = [];
        }
      }
      if (batch.length > 0) await tx.write(target, batch);
      total += inTransaction;
    });
  }
  return total;
}

interface Result {
  label: string;
  seconds: number;
  reference?: string;
}

let dest: Destination | undefined;
try {
  console.log(`generating ${ROWS} rows ...`);
  const header = COLUMNS.map(([n]) => n).join(',');
  const lines: string[] = [header];
  for (let i = 0; i < ROWS; i++) {
    const row = generate(i);
    lines.push(COLUMNS.map(([n]) => csvField(row[n] ?? null)).join(','));
  }
  writeFileSync(csvPath, lines.join('\n') + '\n');
  lines.length = 0;
  const bytes = statSync(csvPath).size;
  console.log(`CSV: ${(bytes / 1e6).toFixed(1)} MB, ${COLUMNS.length} columns, schema ${schema}`);

  dest = await openDestination(url, { settings: { schema } });
  const results: Result[] = [];

  // (a) psql \copy into a pre-created table.
  psql(createSql('psql_append'));
  results.push({
    label: 'psql \\copy (append)',
    seconds: timed(() => psql(`\\copy ${q(schema)}.psql_append FROM '${csvPath}' CSV HEADER`)),
  });

  // psql merge: the table already holds every row; \copy into a temp table, then upsert.
  psql(
    createSql('psql_merge'),
    `CREATE UNIQUE INDEX ON ${q(schema)}.psql_merge (id)`,
    `INSERT INTO ${q(schema)}.psql_merge SELECT * FROM ${q(schema)}.psql_append`,
    `VACUUM ANALYZE ${q(schema)}.psql_merge`,
  );
  const sets = COLUMNS.filter(([n]) => n !== 'id')
    .map(([n]) => `${q(n)} = EXCLUDED.${q(n)}`)
    .join(', ');
  results.push({
    label: 'psql \\copy + upsert (merge)',
    seconds: timed(() =>
      psql(
        `CREATE TEMP TABLE s (LIKE ${q(schema)}.psql_merge)`,
        `\\copy s FROM '${csvPath}' CSV HEADER`,
        `INSERT INTO ${q(schema)}.psql_merge SELECT * FROM s ON CONFLICT (id) DO UPDATE SET ${sets}`,
      ),
    ),
  });

  // (b) sluice append, table created by the first batch: with csv-parse, then pre-parsed rows.
  const columns = COLUMNS.map(([name, type]) => ({ name, type }));
  const run = async (
    label: string,
    table: TableDef,
    mode: 'append' | 'merge',
    source: () => AsyncIterable<Row> | Iterable<Row>,
    reference: string,
  ) => {
    let loaded = 0;
    const seconds = await timedAsync(async () => {
      loaded = await sluiceLoad(dest!, table, mode, source());
    });
    if (loaded !== ROWS) throw new Error(`${label}: loaded ${loaded} rows, expected ${ROWS}`);
    results.push({ label, seconds, reference });
  };
  const APPEND_REF = 'psql \\copy (append)';
  const MERGE_REF = 'psql \\copy + upsert (merge)';
  await run(
    'sluice append (csv-parse)',
    { name: 'sluice_append', columns, key: [], hints: {} },
    'append',
    csvRows,
    APPEND_REF,
  );

  // (c) sluice merge: first pass into an empty table (inserts), second pass all updates.
  const merge: TableDef = { name: 'sluice_merge', columns, key: ['id'], hints: {} };
  await run('sluice merge 1st (csv-parse)', merge, 'merge', csvRows, APPEND_REF);
  psql(`VACUUM ANALYZE ${q(schema)}.sluice_merge`);
  await run('sluice merge 2nd (csv-parse)', merge, 'merge', csvRows, MERGE_REF);

  // The same, with the rows parsed beforehand (untimed): the destination's own speed.
  const parsed: Row[] = [];
  for await (const row of csvRows()) parsed.push(row);
  await run(
    'sluice append (pre-parsed)',
    { name: 'sluice_append2', columns, key: [], hints: {} },
    'append',
    () => parsed,
    APPEND_REF,
  );
  psql(`VACUUM ANALYZE ${q(schema)}.sluice_merge`);
  await run('sluice merge 2nd (pre-parsed)', merge, 'merge', () => parsed, MERGE_REF);

  const counts = execFileSync(
    'psql',
    [
      url,
      '-X',
      '-At',
      '-c',
      `SELECT (SELECT count(*) FROM ${q(schema)}.sluice_append) || ' ' || (SELECT count(*) FROM ${q(schema)}.sluice_merge)`,
    ],
    { encoding: 'utf8' },
  ).trim();
  if (counts !== `${ROWS} ${ROWS}`) throw new Error(`row counts after loading: ${counts}`);

  console.log('');
  console.log(
    `${'loader'.padEnd(30)} ${'rows'.padStart(8)} ${'s'.padStart(7)} ${'rows/s'.padStart(9)} ${'MB/s'.padStart(7)}  sluice/psql`,
  );
  for (const r of results) {
    const ref = results.find((x) => x.label === r.reference);
    const ratio = ref ? `${(ref.seconds / r.seconds).toFixed(2)} (vs ${ref.label})` : '';
    console.log(
      `${r.label.padEnd(30)} ${String(ROWS).padStart(8)} ${r.seconds.toFixed(2).padStart(7)} ${Math.round(
        ROWS / r.seconds,
      )
        .toString()
        .padStart(9)} ${(bytes / 1e6 / r.seconds).toFixed(1).padStart(7)}  ${ratio}`,
    );
  }
  console.log(
    '\nratio = psql time / sluice time (1.00 = as fast as psql). (csv-parse): reading and parsing\n' +
      'the CSV is inside the time; (pre-parsed): rows parsed beforehand, untimed.',
  );
} finally {
  await dest?.close();
  await dropSchema(schema, url).catch((error) =>
    console.error('could not drop schema', schema, error),
  );
  rmSync(dir, { recursive: true, force: true });
}
