/**
 * PostgreSQL, rows built on the server (issue 41): in one run, on the same NDJSON result files,
 *
 *   (a) `psql \copy` of the CSV export into text columns (the reference of load.ts),
 *   (b) `psql \copy` into a copy of the typed table sluice made (the floor of any loader of it),
 *   (c) `sluice run`, append (nested json), as load.ts runs it,
 *   (d) the bound: each file's raw lines `\copy`'d into a staging table of one text column,
 *       then one INSERT ... SELECT through jsonb_populate_record, per file in a transaction;
 *       (d0) to (d2) where its time goes: the staging alone, with a jsonb parse of each line,
 *       and the bound through json_populate_record instead,
 *   (e) the same with the checks a real path needs to send a file with any problem down today's
 *       path, and the load's own columns and a `_sluice_files`-like row, per file in one
 *       transaction: (e1) one check query over the staging table, then the insert; (e2) the
 *       checks folded into the insert, a line with a problem failing the statement; (e3) e1
 *       with keys named twice found at any depth (a recursive count of json's keys).
 *
 *   npx tsx test/bench/pg-server.ts [--records 100000] [--keep]
 *
 * (e) is checked against (c): the data columns of both tables must hold the same rows. The
 * checks (PostgreSQL 15 has no pg_input_is_valid; a value the server cannot cast fails the
 * statement, which rolls the file back, and the file would go down today's path):
 *   - a line that is not a JSON object, or names a key twice (at the top level: jsonb keeps the
 *     last, so json_object_keys of `line::json` is counted against jsonb's; nested objects
 *     counted the same way, one level down; deeper only in e3), or a key the plan has no column
 *     for;
 *   - a value the server would take where sluice would not, or would take otherwise: a string
 *     or a fraction in an integer column (a string in a float column), an integer past 2^53 in
 *     a float column, anything but a string in a text column, anything but a boolean in a
 *     boolean column, a timestamp that is not strict ISO 8601 with at most microseconds
 *     (`now`, `epoch`, `infinity` and finer fractions are taken by the server);
 *   - a line over the record-size limit.
 * Dates that are no dates (2021-02-30), numbers past a double's range or rounded to zero fail
 * the cast itself, which fails the statement. At the end, the first line changed one way for
 * each of these goes through the checks, which must find it or fail (a self-check, printed).
 * Figures and the decision: docs/speed.md, "PostgreSQL: rows built on the server".
 *
 * PostgreSQL comes from SLUICE_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test);
 * the run loads into a throwaway schema, dropped at the end unless --keep.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { dropSchema, postgresUrl, queryPostgres, randomSchemaName } from '../helpers/postgres.js';
import { measure } from './measure.js';
import { benchEmulator, warmDownload } from './warm.js';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '100000' },
    keep: { type: 'boolean', default: false },
  },
});
const RECORDS = Number(values.records);
const PG_URL = postgresUrl();
const schema = randomSchemaName('sluice_pgserver');
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-pgserver-'));
/** sluice's record-size limit as the checks use it (a line over it is a reject today). */
const RECORD_LIMIT = 16 * 2 ** 20;
const q = (name: string) => `"${name.replaceAll('"', '""')}"`;
const emulator = await benchEmulator(RECORDS);
const { email, password } = emulator.options;

interface Measure {
  label: string;
  rows: number;
  seconds: number;
  peakRssMb: number;
  load: string;
}

const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

try {
  const [version] = await queryPostgres<{ v: string }>('SELECT version() AS v', [], PG_URL);
  console.log(`${version?.v}\nload average at start: ${load()}`);
  const json = await warm('json');
  const csv = await warm('csv');
  await queryPostgres(`CREATE SCHEMA ${q(schema)}`, [], PG_URL);
  const results: Measure[] = [];
  results.push(await psqlCopy(csv));
  const sluice = await sluiceRun();
  const columns = await columnsOf(sluice.table);
  results.push(await psqlTyped(sluice.table));
  results.push(sluice.measure);
  results.push(await bound(sluice.table, json));
  results.push(...(await parts(sluice.table, json)));
  results.push(await checked(sluice.table, columns, json, 'e1'));
  await same(sluice.table, 'checked_e1', columns);
  results.push(await checked(sluice.table, columns, json, 'e2'));
  await same(sluice.table, 'checked_e2', columns);
  results.push(await checked(sluice.table, columns, json, 'e3'));
  await same(sluice.table, 'checked_e3', columns);
  report(results);
  await selfCheck(sluice.table, columns, json[0]!);
  console.log(`load average at end: ${load()}`);
} finally {
  await emulator.close();
  if (!values.keep) {
    await dropSchema(schema, PG_URL);
    rmSync(dir, { recursive: true, force: true });
  } else console.log(`kept: schema ${schema}, files in ${dir}`);
}

/** Downloads the records once through the API, so the emulator spools every file. */
async function warm(format: 'csv' | 'json'): Promise<string[]> {
  const { files } = await warmDownload(emulator, { records: RECORDS, format, dir });
  const bytes = files.reduce((sum, f) => sum + statSync(f).size, 0);
  console.log(`${format}: ${files.length} files, ${(bytes / 1e6).toFixed(0)} MB`);
  return files;
}

/** A psql script, timed with its peak memory (psql's; the server's work is in the time). */
async function psql(
  label: string,
  script: string,
  table: string,
  rows = () => count(table),
): Promise<Measure> {
  const path = join(dir, `${label.replace(/\W+/g, '-')}.sql`);
  writeFileSync(path, `${script}\n`);
  const at = load();
  const result = await measure(
    'psql',
    [PG_URL, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', path],
    dir,
  );
  if (result.code !== 0)
    throw new Error(`${label}: psql failed (${result.code}): ${result.stderr}`);
  return {
    label,
    rows: await rows(),
    seconds: result.seconds,
    peakRssMb: result.peakRssMb,
    load: at,
  };
}

async function count(table: string): Promise<number> {
  const [row] = await queryPostgres<{ n: string }>(
    `SELECT count(*) AS n FROM ${q(schema)}.${q(table)}`,
    [],
    PG_URL,
  );
  return Number(row?.n ?? 0);
}

/** (a) The CSV files into a table of text columns named by their header. */
async function psqlCopy(files: string[]): Promise<Measure> {
  const header = readFileSync(files[0]!, 'utf8').slice(0, 100_000).split('\n')[0]!.split(',');
  const table = `${q(schema)}.psql_text`;
  await queryPostgres(
    `CREATE TABLE ${table} (${header.map((c) => `${q(c)} text`).join(', ')})`,
    [],
    PG_URL,
  );
  const script = files.map((f) => `\\copy ${table} FROM '${f}' CSV HEADER`).join('\n');
  return psql('(a) psql \\copy (csv, text columns)', script, 'psql_text');
}

/** (c) `sluice run`, NDJSON, append, nested json: the installed command, as load.ts runs it. */
async function sluiceRun(): Promise<{ table: string; measure: Measure }> {
  const table = 'homes_sluice';
  const pipeline = join(dir, 'bench.yaml');
  writeFileSync(
    pipeline,
    `version: 1
name: bench-pgserver
source: { api: v4, url: '${emulator.v4Url}', email: '${email}', password: '${password}' }
destination: { url: '${PG_URL}', schema: ${schema} }
jobs:
  homes:
    type: properties
    query: '*'
    records: ${RECORDS}
    format: json
    table: ${table}
    write: append
    nested: json
    poll: { interval: 100ms, max_interval: 100ms }
`,
  );
  if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error('run `npm run build` first');
  const at = load();
  const run = await measure(
    join(ROOT, 'bin/sluice.js'),
    ['run', pipeline, '--no-progress', '--json'],
    ROOT,
  );
  if (run.code !== 0) throw new Error(`sluice run failed (${run.code}): ${run.stderr}`);
  const label = '(c) sluice run (json, append)';
  return {
    table,
    measure: {
      label,
      rows: await count(table),
      seconds: run.seconds,
      peakRssMb: run.peakRssMb,
      load: at,
    },
  };
}

/** The typed table's columns in order, with their types as PostgreSQL writes them. */
async function columnsOf(table: string): Promise<[string, string][]> {
  const rows = await queryPostgres<{ name: string; type: string }>(
    `SELECT column_name AS name, data_type AS type FROM information_schema.columns
     WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [schema, table],
    PG_URL,
  );
  return rows.map((r) => [r.name, r.type]);
}

/** (b) `\copy` into a copy of sluice's table, from a CSV export of it. */
async function psqlTyped(table: string): Promise<Measure> {
  const file = join(dir, 'typed.csv');
  const source = `${q(schema)}.${q(table)}`;
  execFileSync('psql', [PG_URL, '-X', '-q', '-c', `\\copy ${source} TO '${file}' CSV`]);
  await queryPostgres(`CREATE TABLE ${q(schema)}.psql_typed (LIKE ${source})`, [], PG_URL);
  return psql(
    "(b) psql \\copy into sluice's typed table",
    `\\copy ${q(schema)}.psql_typed FROM '${file}' CSV`,
    'psql_typed',
  );
}

/** A file's raw lines into the staging table: CSV mode, quote and delimiter no line holds. */
function stage(file: string): string {
  return `\\copy staging (line) FROM '${file}' WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')`;
}

/** (d) The bound: raw lines in, jsonb_populate_record, no check, no own columns, no file row. */
async function bound(table: string, files: string[]): Promise<Measure> {
  const script = await populated(table, 'bound', files, 'jsonb');
  return psql('(d) raw lines, typed on the server (bound)', script, 'bound');
}

/**
 * The script of the bound: a copy of sluice's table named `name`, and per file in a
 * transaction its raw lines staged and each typed by `json[b]_populate_record`.
 */
async function populated(
  table: string,
  name: string,
  files: string[],
  type: 'json' | 'jsonb',
): Promise<string> {
  const typed = `${q(schema)}.${name}`;
  await queryPostgres(`CREATE TABLE ${typed} (LIKE ${q(schema)}.${q(table)})`, [], PG_URL);
  const lines = ['CREATE TEMP TABLE staging (line text);'];
  for (const file of files) {
    lines.push(
      'BEGIN;',
      stage(file),
      `INSERT INTO ${typed} SELECT r.* FROM staging, ${type}_populate_record(NULL::${typed}, staging.line::${type}) r;`,
      'TRUNCATE staging;',
      'COMMIT;',
    );
  }
  return lines.join('\n');
}

/**
 * Where the bound's time goes, each part per file in a transaction as there: the raw lines
 * into the staging table alone; with each line parsed as jsonb; the bound through
 * json_populate_record (the json type, checked then parsed again by the function).
 */
async function parts(table: string, files: string[]): Promise<Measure[]> {
  const out: Measure[] = [];
  const tally = (name: string, select: string) => {
    const lines = [
      `CREATE TABLE ${q(schema)}.${name} (n bigint);`,
      'CREATE TEMP TABLE staging (line text);',
    ];
    for (const file of files) {
      lines.push('BEGIN;', stage(file), `INSERT INTO ${q(schema)}.${name} ${select};`);
      lines.push('TRUNCATE staging;', 'COMMIT;');
    }
    return lines.join('\n');
  };
  const sum = (name: string) => async () => {
    const [row] = await queryPostgres<{ n: string }>(
      `SELECT sum(n) AS n FROM ${q(schema)}.${name}`,
      [],
      PG_URL,
    );
    return Number(row?.n ?? 0);
  };
  out.push(
    await psql(
      '(d0) raw lines into staging only',
      tally('staged', 'SELECT count(*) FROM staging'),
      'staged',
      sum('staged'),
    ),
  );
  out.push(
    await psql(
      '(d1) and each line parsed as jsonb',
      tally('parsed', 'SELECT count(*) FROM staging WHERE line::jsonb IS NOT NULL'),
      'parsed',
      sum('parsed'),
    ),
  );
  const script = await populated(table, 'bound_json', files, 'json');
  out.push(await psql('(d2) the bound through json_populate_record', script, 'bound_json'));
  return out;
}

/**
 * Whether a line's value `v` (jsonb) of a column of type `type` is one the server would take
 * where sluice would not, or would store otherwise: a condition true for a problem.
 */
function problem(type: string, key: string): string {
  const v = `(j -> ${key})`;
  const kind = `jsonb_typeof(${v})`;
  switch (type) {
    case 'bigint':
    case 'integer':
      return `(${kind} NOT IN ('number', 'null') OR (${kind} = 'number' AND ${v}::numeric <> trunc(${v}::numeric)))`;
    case 'double precision':
    case 'real':
      return `(${kind} NOT IN ('number', 'null') OR (${kind} = 'number' AND abs(${v}::numeric) > 9007199254740991 AND ${v}::numeric = trunc(${v}::numeric)))`;
    case 'boolean':
      return `${kind} NOT IN ('boolean', 'null')`;
    case 'text':
      return `${kind} NOT IN ('string', 'null')`;
    case 'timestamp with time zone':
    case 'timestamp without time zone':
    case 'date':
      return `(${kind} NOT IN ('string', 'null') OR (${kind} = 'string' AND ${v} #>> '{}' !~ '^\\d{4}-\\d{2}-\\d{2}([T ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,6})?)?(Z|[+-]\\d{2}(:?\\d{2})?)?)?$'))`;
    case 'jsonb':
    case 'json':
      // Keys named twice one level down: jsonb keeps the last, json keeps both.
      return `(${kind} = 'object' AND (SELECT count(*) FROM jsonb_object_keys(${v})) <> (SELECT count(*) FROM json_object_keys(t -> ${key})))`;
    default:
      return 'true'; // a type this bench does not know: today's path
  }
}

/** Each line parsed once as jsonb (`j`) and once as json (`t`, which keeps keys named twice). */
function PARSED(): string {
  // OFFSET 0 keeps the subquery: pulled up, each mention of j would parse the line again.
  return `staging, LATERAL (SELECT staging.line::jsonb AS j, staging.line::json AS t OFFSET 0) p`;
}

/** The condition, over PARSED, of a line with a problem; `deep`: keys named twice at any depth. */
function problems(columns: [string, string][], deep: boolean): string {
  const data = columns.filter(([n]) => !n.startsWith('_sluice_'));
  const planned = `ARRAY[${data.map(([n]) => `'${n.replaceAll("'", "''")}'`).join(', ')}]::text[]`;
  const lineProblems = [
    `jsonb_typeof(j) <> 'object'`,
    `octet_length(staging.line) > ${RECORD_LIMIT}`,
    `EXISTS (SELECT 1 FROM jsonb_object_keys(j) k WHERE k <> ALL (${planned}))`,
    deep
      ? // Keys named twice at any depth: every object's keys, json's against jsonb's.
        `pg_temp.json_keys(t) <> (SELECT count(*) FROM jsonb_path_query(j, 'strict $.** ? (@.type() == "object").keyvalue()'))`
      : `(SELECT count(*) FROM jsonb_object_keys(j)) <> (SELECT count(*) FROM json_object_keys(t))`,
  ];
  const valueProblems = data.map(([n, t]) => problem(t, `'${n.replaceAll("'", "''")}'`));
  return [...lineProblems, ...valueProblems].join('\n      OR ');
}

/**
 * (e) The server-side path with its checks, per file in one transaction: the lines in, the
 * checks, the typed rows with the load's own columns, a `_sluice_files`-like row. (e1): one
 * check query over the staging table, then the insert; (e2): the checks inside the insert,
 * a line with a problem failing the statement (a cast of its line number to a date).
 */
async function checked(
  table: string,
  columns: [string, string][],
  files: string[],
  variant: 'e1' | 'e2' | 'e3',
): Promise<Measure> {
  const name = `checked_${variant}`;
  const typed = `${q(schema)}.${name}`;
  const filesTable = `${q(schema)}.files_${variant}`;
  await queryPostgres(`CREATE TABLE ${typed} (LIKE ${q(schema)}.${q(table)})`, [], PG_URL);
  await queryPostgres(
    `CREATE TABLE ${filesTable} (download_id text, file_index bigint, file_name text, table_name text,
       rows_loaded bigint, rows_rejected bigint, bytes bigint, loaded_at text, run_id text,
       PRIMARY KEY (download_id, file_index))`,
    [],
    PG_URL,
  );
  const any = problems(columns, variant === 'e3');
  const names = columns.map(([n]) => q(n)).join(', ');
  const cells = columns
    .map(([n]) =>
      n === '_sluice_download_id' ? `'bench'` : n === '_sluice_loaded_at' ? 'now()' : `r.${q(n)}`,
    )
    .join(', ');
  // The rows and the file's row in one statement: the file counts as loaded with its rows.
  const insert = (i: number, file: string, select: string) =>
    `WITH ins AS (INSERT INTO ${typed} (${names}) ${select} RETURNING 1)
  INSERT INTO ${filesTable} SELECT 'bench', ${i}, '${file}', '${name}', count(*), 0, ${statSync(file).size}, now()::text, 'run' FROM ins;`;
  const lines = [`SET TimeZone = 'UTC';`, 'CREATE TEMP TABLE staging (line text);', jsonKeys()];
  for (const [i, file] of files.entries()) {
    lines.push('BEGIN;', stage(file));
    if (variant !== 'e2') {
      lines.push(
        `SELECT NOT EXISTS (SELECT 1 FROM ${PARSED()} WHERE ${any}) AS clean \\gset`,
        '\\if :clean',
        insert(
          i,
          file,
          `SELECT ${cells} FROM staging, jsonb_populate_record(NULL::${typed}, staging.line::jsonb) r`,
        ),
        '\\else',
        `\\echo 'file ${i}: a line with a problem: today''s path'`,
        '\\endif',
      );
    } else {
      lines.push(
        insert(
          i,
          file,
          `SELECT ${cells} FROM ${PARSED()}, jsonb_populate_record(NULL::${typed}, j) r
    WHERE CASE WHEN ${any} THEN ('a line with a problem: ' || octet_length(staging.line))::date IS NULL ELSE true END`,
        ),
      );
    }
    lines.push('TRUNCATE staging;', 'COMMIT;');
  }
  const label = {
    e1: '(e1) server-side, check query + insert',
    e2: '(e2) server-side, checks in the insert',
    e3: '(e3) e1, keys named twice at any depth',
  }[variant];
  return psql(label, lines.join('\n'), name);
}

/** The keys of every object in a json value, at any depth (json keeps keys named twice). */
function jsonKeys(): string {
  return `CREATE FUNCTION pg_temp.json_keys(t json) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  WITH RECURSIVE w(v) AS (
    SELECT t
    UNION ALL
    SELECT c FROM w, LATERAL (
      SELECT value FROM json_each(CASE WHEN json_typeof(w.v) = 'object' THEN w.v END)
      UNION ALL
      SELECT value FROM json_array_elements(CASE WHEN json_typeof(w.v) = 'array' THEN w.v END)
    ) x(c)
  )
  SELECT count(*) FROM w, json_object_keys(CASE WHEN json_typeof(w.v) = 'object' THEN w.v END)
$$;`;
}

/** (e)'s rows against sluice's: the data columns of both tables hold the same rows. */
async function same(table: string, other: string, columns: [string, string][]): Promise<void> {
  const names = columns
    .filter(([n]) => !n.startsWith('_sluice_'))
    .map(([n]) => q(n))
    .join(', ');
  const a = `SELECT ${names} FROM ${q(schema)}.${q(table)}`;
  const b = `SELECT ${names} FROM ${q(schema)}.${q(other)}`;
  const [row] = await queryPostgres<{ left: string; right: string }>(
    `SELECT (SELECT count(*) FROM (${a} EXCEPT ALL ${b}) x) AS left,
            (SELECT count(*) FROM (${b} EXCEPT ALL ${a}) y) AS right`,
    [],
    PG_URL,
  );
  const ok = row?.left === '0' && row?.right === '0';
  console.log(
    `${other} against sluice's table: ${ok ? 'the same rows' : `DIFFERENT (${row?.left} rows only in sluice's, ${row?.right} only in ${other})`}`,
  );
}

function report(results: Measure[]) {
  const text = results.find((r) => r.label.startsWith('(a)'))!;
  const typed = results.find((r) => r.label.startsWith('(b)'))!;
  const rate = (r: Measure) => r.rows / r.seconds;
  console.log('');
  console.log(
    `${'loader'.padEnd(44)} ${'rows'.padStart(8)} ${'s'.padStart(7)} ${'rows/s'.padStart(8)} ${'RSS'.padStart(7)} ${'vs (a)'.padStart(7)} ${'vs (b)'.padStart(7)}  load avg`,
  );
  for (const r of results) {
    console.log(
      `${r.label.padEnd(44)} ${String(r.rows).padStart(8)} ${r.seconds.toFixed(1).padStart(7)} ${Math.round(rate(r)).toString().padStart(8)} ${`${r.peakRssMb.toFixed(0)} MB`.padStart(7)} ${`${(rate(r) / rate(text)).toFixed(2)}x`.padStart(7)} ${`${(rate(r) / rate(typed)).toFixed(2)}x`.padStart(7)}  ${r.load}`,
    );
  }
  console.log('');
}

/**
 * The checks against lines with a problem: the first line of the run, changed one way each.
 * Each must be found by the check query, or fail the insert (the file rolled back, to go down
 * today's path); an integer past 2^53 in an integer column is no problem (kept exactly).
 */
async function selfCheck(table: string, columns: [string, string][], file: string) {
  const line = readFileSync(file, 'utf8').split('\n')[0]!;
  const record = JSON.parse(line) as Record<string, unknown>;
  const set = (key: string, raw: string) =>
    `{"${key}":${raw},${line.slice(1).replace(new RegExp(`"${key}":[^,]*,`), '')}`;
  const cases: [string, string][] = [
    ['not an object', '[1, 2]'],
    ['malformed', line.slice(0, 40)],
    ['unknown key', `{"zzz":1,${line.slice(1)}`],
    ['key named twice', `{"city":"X",${line.slice(1)}`],
    [
      'key named twice, nested',
      line.replace('"currency":"USD"', '"currency":"USD","currency":"EUR"'),
    ],
    ['integer past 2^53 (no problem)', set('yearBuilt', '9007199254740993')],
    ['fraction in an integer column', set('yearBuilt', '1993.5')],
    ['number as text, integer column', set('yearBuilt', '"1993"')],
    ["past a double's range", set('floorSizeValue', '1e400')],
    ['rounded to zero by a double', set('floorSizeValue', '1e-400')],
    ['integer past 2^53, float column', set('floorSizeValue', '9007199254740993')],
    ['number in a text column', set('city', '5')],
    ['date that is no date', set('dateAdded', '"2021-02-30T00:00:00Z"')],
    ["'now' as a date", set('dateAdded', '"now"')],
    ['time finer than microseconds', set('dateAdded', '"2021-01-01T00:00:00.1234567Z"')],
  ];
  if (!('currency' in (JSON.parse(JSON.stringify(record.prices ?? [{}]))[0] ?? {}))) {
    console.log('self-check: the first line has no prices[0].currency; the nested case is void');
  }
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`SET TimeZone = 'UTC'`);
    await client.query('CREATE TEMP TABLE staging (line text)');
    await client.query(jsonKeys());
    await client.query(`CREATE TEMP TABLE target (LIKE ${q(schema)}.${q(table)})`);
    console.log(`${'self-check: a line with'.padEnd(36)} ${'(e1)'.padEnd(24)} (e3)`);
    for (const [name, text] of cases) {
      const outcome: string[] = [];
      for (const deep of [false, true]) {
        await client.query('BEGIN');
        try {
          await client.query('INSERT INTO staging VALUES ($1)', [text]);
          const found = await client.query(
            `SELECT EXISTS (SELECT 1 FROM ${PARSED()} WHERE ${problems(columns, deep)}) AS found`,
          );
          if (found.rows[0].found) outcome.push('found by the checks');
          else {
            await client.query(
              'INSERT INTO target SELECT r.* FROM staging, jsonb_populate_record(NULL::target, staging.line::jsonb) r',
            );
            outcome.push('LOADED');
          }
        } catch (error) {
          outcome.push(`fails (${(error as Error).message.slice(0, 20)})`);
        }
        await client.query('ROLLBACK');
      }
      console.log(`${name.padEnd(36)} ${outcome[0]!.padEnd(24)} ${outcome[1]}`);
    }
  } finally {
    await client.end();
  }
}
