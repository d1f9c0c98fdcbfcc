import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import {
  emulatorEnv,
  pipelineHead,
  runCli,
  SLUICE_BIN,
  tempDir,
  writePipeline,
} from '../helpers/pipeline.js';
import { postgresUrl } from '../helpers/postgres.js';
import { downloadsByType, startRun, stopAt } from '../helpers/runs.js';
import { type HostileService, startHostileService } from './hostile-server.js';

/**
 * Wrong data, stuck pipelines and hostile inputs: what each gets. Every case names what went
 * wrong before: a value PostgreSQL refuses blocking a pipeline for good, field names taken as
 * object keys, a record twice in a batch, another pipeline's download adopted, a job changed
 * half way, two pipelines replacing one table (now refused), dependent views, long waits,
 * hostile files.
 */

let hostile: HostileService;
let harness: EmulatorHarness;
let dir: string;

before(async () => {
  hostile = await startHostileService();
  harness = await EmulatorHarness.start({ scale: 0.2, fileRecords: 100, churn: 0, queueMs: 200 });
  dir = tempDir('sluice-hostile-');
});
after(async () => {
  await hostile.close();
  await harness.close();
});

const POLL = 'poll: { interval: 50ms, max_interval: 100ms, timeout: 30s }';

/** Both parse paths: in the main thread, and parse workers sharing a file in blocks. */
const PARSINGS = [
  ['', '0'],
  [' (parse workers)', '2'],
] as const;

/** Runs a statement that returns no rows, over a connection of the test's own. */
function exec(t: TestTarget, text: string): Promise<void> {
  return t.exec(text);
}

function hostileEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    SLUICE_API_URL: hostile.v4Url,
    SLUICE_EMAIL: 'h@sluice.test',
    SLUICE_PASSWORD: 'h',
    ...extra,
  };
}

async function runJson(file: string, env: NodeJS.ProcessEnv, args: string[] = []) {
  const result = await runCli(['run', file, '--json', '--no-progress', ...args], env);
  return { ...result, summary: JSON.parse(result.stdout) };
}

/** `sluice run --json` as a process of its own, as users run it, with its own environment. */
function runProcess(file: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, 'run', file, '--json', '--no-progress'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * A stored time as text (PostgreSQL's and DuckDB's `2024-01-01 05:30:00.123456+05:30`, SQLite's
 * text as written) as the instant it names, in UTC to the microsecond.
 */
function instant(text: string): string {
  const m =
    /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}(?::?\d{2})?)$/.exec(text);
  assert.ok(m, `a time: ${text}`);
  const [, day, time, fraction = '', zone] = m;
  const offset =
    zone === 'Z' ? '+00:00' : `${zone!.slice(0, 3)}:${zone!.slice(3).replace(':', '') || '00'}`;
  const ms = Date.parse(`${day}T${time}${offset}`);
  assert.ok(!/[1-9]/.test(fraction.slice(6)), `no digit past the microsecond: ${text}`);
  return `${new Date(ms).toISOString().slice(0, 19)}.${fraction.padEnd(6, '0').slice(0, 6)}Z`;
}

/**
 * A file of three records whose second is `mib` MiB of one line, generated a MiB at a time: the
 * server never holds it, and a reader that gathered it would need several times its size.
 */
function hugeRecordFile(format: 'csv' | 'json', mib: number) {
  const [head, tail] =
    format === 'csv'
      ? ['id,address\nr1,1 Main St\nhuge,', '\nr3,3 Elm Rd\n']
      : [
          `${JSON.stringify({ id: 'r1', address: '1 Main St' })}\n{"id":"huge","address":"`,
          `"}\n${JSON.stringify({ id: 'r3', address: '3 Elm Rd' })}\n`,
        ];
  const block = Buffer.alloc(1 << 20, 'x');
  const bytes = (text: string) => Buffer.byteLength(text.slice(text.lastIndexOf('\n') + 1));
  return {
    /** The huge record's size, its line end not counted. */
    size: bytes(head) + mib * block.length + Buffer.byteLength(tail.slice(0, tail.indexOf('\n'))),
    *body() {
      yield head;
      for (let i = 0; i < mib; i++) yield block;
      yield tail;
    },
  };
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  const pipeline = (t: TestTarget, name: string, jobs: string) =>
    writePipeline(dir, `${kind}-${name}`, `${pipelineHead(name, t.destinationYaml)}jobs:\n${jobs}`);

  describe(`hostile inputs on ${kind}`, { skip: reason }, () => {
    // Parse workers hand PostgreSQL the rows as COPY text: the same rows and rejects.
    for (const [parsing, workers] of PARSINGS) {
      test(`values a database refuses, field names that are JavaScript builtins, empty and long names, a record twice: rejects with reasons, the rest loads, later jobs run${parsing}`, async () => {
        const long = `x${'LongFieldName'.repeat(7)}`;
        hostile.serve([
          JSON.stringify({ id: 'ok1', address: '1 Main St', yearBuilt: 1999 }),
          JSON.stringify({ id: 'feb30', mostRecentStatusDate: '2021-02-30T00:00:00Z' }),
          JSON.stringify({ id: 'year0', dateAdded: '0000-01-01' }),
          JSON.stringify({ id: 'nul', address: 'a\u0000b' }),
          '{"id":"proto","__proto__":"p","constructor":"c","toString":"t","address":"2 Oak Ave"}',
          JSON.stringify({ id: 'empty', '': 'a value with no name' }),
          JSON.stringify({ id: 'long', [long]: 'kept' }),
          JSON.stringify({
            id: 'dup',
            prices: [{ amountMin: 1 }, { amountMin: 2 }, { amountMin: 3 }],
          }),
          JSON.stringify({ id: 'ok2', address: '3 Elm Rd' }),
          JSON.stringify({ id: 'dup', prices: [{ amountMin: 9 }] }),
        ]);
        const t = await target(`refused-${workers}`);
        const file = pipeline(
          t,
          `refused-${workers}`,
          `  homes:\n    type: properties\n    query: '*'\n    ${POLL}\n  again:\n    type: properties\n    query: 'city:X'\n    table: homes_again\n    ${POLL}\n`,
        );
        const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
        assert.equal(run.code, 0, run.stdout + run.stderr);
        const [homes, again] = run.summary.jobs;
        assert.equal(homes.rejected, 4);
        assert.equal(homes.loaded, 6);
        assert.equal(again.status, 'loaded', 'the next job runs');
        const reasons = await t.all<{ reason: string }>(
          "select reason from _sluice_rejects where job = 'homes' order by line",
        );
        const expected = [
          /^mostRecentStatusDate: '2021-02-30T00:00:00Z' is not a valid date$/,
          /^dateAdded: '0000-01-01' is not a valid date$/,
          /NUL character \(U\+0000\), which PostgreSQL cannot store/,
          /^a field with an empty name$/,
        ];
        assert.equal(reasons.length, expected.length);
        for (const [i, r] of reasons.entries()) assert.match(r.reason, expected[i]!);
        const proto = await t.one<Record<string, unknown>>(
          `select "__proto__" as p, "constructor" as c, "toString" as s from homes where id = 'proto'`,
        );
        assert.deepEqual({ ...proto }, { p: 'p', c: 'c', s: 't' });
        const others = await t.one<{ n: number }>(
          `select count(*) as n from homes where id <> 'proto' and ("__proto__" is not null or "constructor" is not null)`,
        );
        assert.equal(Number(others.n), 0, 'other rows do not inherit them');
        const prices = await t.all<{ amountMin: number }>(
          `select "amountMin" from homes__prices where _parent_id = 'dup' order by _position`,
        );
        assert.deepEqual(
          prices.map((p) => Number(p.amountMin)),
          [9],
          'the last record of an id in a batch, with its children only',
        );
        const longColumn = await t.all(`select * from homes where id = 'long'`);
        assert.ok(Object.values(longColumn[0]!).includes('kept'), 'a long field name is a column');
      });
      test(`fields that would meet in one column (City and city, sluice's own names, a CSV header naming city twice) keep every value, each in a column of its own${parsing}`, async () => {
        const env = hostileEnv({ SLUICE_PARSE_WORKERS: workers });
        const t = await target(`meet-${workers}`);
        const file = pipeline(
          t,
          `meet-${workers}`,
          `  homes:\n    type: properties\n    query: '*'\n    ${POLL}\n`,
        );
        hostile.serve([
          JSON.stringify({
            id: 'c1',
            City: 'Austin',
            city: 'austin',
            _sluice_download_id: 'mine',
            _sluice_loaded_at: 'then',
            _position: 7,
            _parent_id: 'top',
            prices: [
              { amountMin: 1, _position: 9, _parent_id: 'item', _sluice_download_id: 'item-dl' },
              { amountMin: 2 },
            ],
          }),
          JSON.stringify({ id: 'c2', city: 'dallas' }),
        ]);
        const first = await runJson(file, env);
        assert.equal(first.code, 0, first.stdout + first.stderr);
        assert.equal(first.summary.jobs[0].loaded, 2);
        // A later run, its fields in another order, finds the same columns.
        hostile.serve([JSON.stringify({ id: 'c3', city: 'waco', City: 'Waco' })]);
        const second = await runJson(file, env);
        assert.equal(second.code, 0, second.stdout + second.stderr);
        const rows = await t.all<Record<string, unknown>>('select * from homes order by id');
        const columns = Object.keys(rows[0]!);
        const folded = new Set(columns.map((c) => c.toLowerCase()));
        assert.equal(folded.size, columns.length, `no two columns but for case: ${columns}`);
        const upper = columns.find((c) => /^City__[0-9a-f]{6}$/.test(c));
        assert.ok(upper, `City has a column of its own beside city: ${columns}`);
        assert.deepEqual(
          rows.map((r) => [r.id, r.city, r[upper]]),
          [
            ['c1', 'austin', 'Austin'],
            ['c2', 'dallas', null],
            ['c3', 'waco', 'Waco'],
          ],
        );
        const [c1] = rows;
        assert.equal(c1!._sluice_download_id, first.summary.jobs[0].download_id, "sluice's own");
        assert.equal(c1!._sluice_download_id_, 'mine');
        assert.equal(c1!._sluice_loaded_at_, 'then');
        assert.ok(c1!._sluice_loaded_at !== null && c1!._sluice_loaded_at !== 'then');
        assert.equal(Number(c1!._position), 7, 'no position is written to the job table');
        assert.equal(c1!._parent_id, 'top');
        const prices = await t.all<Record<string, unknown>>(
          `select * from homes__prices where _parent_id = 'c1' order by _position`,
        );
        assert.deepEqual(
          prices.map((p) => [
            Number(p._position),
            p._parent_id,
            p._position_ === null ? null : Number(p._position_),
            p._parent_id_,
            p._sluice_download_id_,
            p._sluice_download_id,
          ]),
          [
            [0, 'c1', 9, 'item', 'item-dl', first.summary.jobs[0].download_id],
            [1, 'c1', null, null, null, first.summary.jobs[0].download_id],
          ],
          "child rows keep sluice's positions and links, and the fields so named their values",
        );

        const csvFile = pipeline(
          t,
          `meet-csv-${workers}`,
          `  listed:\n    type: properties\n    query: '*'\n    format: csv\n    ${POLL}\n`,
        );
        hostile.serve(['l1,Austin,1 Main St,AUSTIN', 'l2,Dallas,,DALLAS'], {
          header: 'id,city,address,city',
        });
        const csv = await runJson(csvFile, env);
        assert.equal(csv.code, 0, csv.stdout + csv.stderr);
        assert.equal(csv.summary.jobs[0].rejected, 0);
        assert.deepEqual(await t.all('select id, city, city__2, address from listed order by id'), [
          { id: 'l1', city: 'Austin', city__2: 'AUSTIN', address: '1 Main St' },
          { id: 'l2', city: 'Dallas', city__2: 'DALLAS', address: null },
        ]);
        const said = csv.stderr.match(/names a column more than once[^\n]*/g) ?? [];
        assert.equal(said.length, 1, csv.stderr);
        assert.match(said[0]!, /city \(column 4\) as city__2/);
      });
    }

    for (const [parsing, workers] of PARSINGS) {
      test(`a raw NUL byte in a CSV cell or an NDJSON line is one reject, stored as text on every destination; the rest loads${parsing}`, async () => {
        const files: Record<string, { lines: string[]; header?: string }> = {
          csv: {
            lines: ['n1,1 Main St', 'n2,2 N\u0000ul St', 'n3,3 Elm Rd'],
            header: 'id,address',
          },
          json: {
            lines: [
              JSON.stringify({ id: 'n1', address: '1 Main St' }),
              '{"id":"n2","address":"2 N\u0000ul St"}',
              JSON.stringify({ id: 'n3', address: '3 Elm Rd' }),
            ],
          },
        };
        for (const [format, { lines, header }] of Object.entries(files)) {
          hostile.serve(lines, header === undefined ? {} : { header });
          const t = await target(`nul-${format}-${workers}`);
          const file = pipeline(
            t,
            `nul-${format}-${workers}`,
            `  homes:\n    type: properties\n    query: '*'\n    format: ${format}\n    ${POLL}\n`,
          );
          const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
          assert.equal(run.code, 0, `${format}: ${run.stdout}${run.stderr}`);
          assert.equal(run.summary.jobs[0].loaded, 2, format);
          assert.equal(run.summary.jobs[0].rejected, 1, format);
          const rejects = await t.all<{ line: number; raw: string; reason: string }>(
            'select line, raw, reason from _sluice_rejects',
          );
          assert.equal(rejects.length, 1);
          assert.equal(Number(rejects[0]!.line), 3 - (format === 'json' ? 1 : 0));
          assert.match(
            rejects[0]!.reason,
            /NUL character \(U\+0000\), which PostgreSQL cannot store/,
          );
          assert.ok(
            rejects[0]!.raw.includes('2 N\\u0000ul St'),
            `the NUL shown escaped: ${rejects[0]!.raw}`,
          );
          const ids = await t.all<{ id: string }>('select id from homes order by id');
          assert.deepEqual(
            ids.map((r) => r.id),
            ['n1', 'n3'],
          );
        }
      });

      test(`an NDJSON file that begins with a byte order mark loads its first record${parsing}`, async () => {
        hostile.serve([
          `\ufeff${JSON.stringify({ id: 'b1', address: '1 Main St' })}`,
          JSON.stringify({ id: 'b2', address: '2 Oak Ave' }),
        ]);
        const t = await target(`bom-${workers}`);
        const file = pipeline(
          t,
          `bom-${workers}`,
          `  homes:\n    type: properties\n    query: '*'\n    ${POLL}\n`,
        );
        const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
        assert.equal(run.code, 0, run.stdout + run.stderr);
        assert.equal(run.summary.jobs[0].rejected, 0);
        const rows = await t.all<{ id: string; address: string }>(
          'select id, address from homes order by id',
        );
        assert.deepEqual(
          rows.map((r) => [r.id, r.address]),
          [
            ['b1', '1 Main St'],
            ['b2', '2 Oak Ave'],
          ],
        );
      });
    }

    for (const [parsing, workers] of PARSINGS) {
      test(`numbers past a double are kept exactly or rejected with their reason, never changed${parsing}`, async () => {
        const files = {
          json: [
            '{"id":"n1","yearBuilt":9007199254740993,"prices":[{"amountMin":1.5,"listingId":9007199254740993}]}',
            '{"id":"n2","yearBuilt":-9223372036854775808}',
            '{"id":"n3","yearBuilt":1e400}',
            '{"id":"n4","numBedroom":99999999999999999999999}',
            '{"id":"n5","floorSizeValue":1.5}',
            '{"id":"n6","floorSizeValue":9007199254740993}',
          ],
          csv: [
            'id,yearBuilt,numBedroom,floorSizeValue,prices',
            'n1,9007199254740993,,,"[{""amountMin"":1.5,""listingId"":9007199254740993}]"',
            'n2,-9223372036854775808,,,',
            'n3,1e400,,,',
            'n4,,99999999999999999999999,,',
            'n5,,,1.5,',
            'n6,,,9007199254740993,',
          ],
        };
        for (const [format, lines] of Object.entries(files)) {
          // A CSV file's header is none of its records.
          if (format === 'csv') hostile.serve(lines.slice(1), { header: lines[0]! });
          else hostile.serve(lines);
          const t = await target(`numbers-${format}-${workers}`);
          const file = pipeline(
            t,
            `numbers-${format}-${workers}`,
            `  homes:\n    type: properties\n    query: '*'\n    format: ${format}\n    ${POLL}\n`,
          );
          const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
          assert.equal(run.code, 0, `${format}: ${run.stdout}${run.stderr}`);
          assert.equal(run.summary.jobs[0].loaded, 3, format);
          assert.equal(run.summary.jobs[0].rejected, 3, format);
          // Read back as text: a driver would read an integer past 2^53 as a rounded number.
          const homes = await t.all<{ id: string; y: string | null; f: string | null }>(
            'select id, cast("yearBuilt" as text) as y, cast("floorSizeValue" as text) as f from homes order by id',
          );
          assert.deepEqual(
            homes.map((h) => [h.id, h.y, h.f]),
            [
              ['n1', '9007199254740993', null],
              ['n2', '-9223372036854775808', null],
              ['n5', null, '1.5'],
            ],
            format,
          );
          const child = await t.one<{ listing: string }>(
            `select cast("listingId" as text) as listing from homes__prices where _parent_id = 'n1'`,
          );
          assert.equal(child.listing, '9007199254740993', `${format}: in a child table`);
          const rejects = await t.all<{ line: number; reason: string }>(
            'select line, reason from _sluice_rejects order by line',
          );
          const at = format === 'csv' ? 1 : 0;
          assert.deepEqual(
            rejects.map((r) => [Number(r.line), r.reason]),
            [
              [
                3 + at,
                "yearBuilt: the number 1e400 cannot be stored exactly: beyond a double's range",
              ],
              [
                4 + at,
                'numBedroom: the number 99999999999999999999999 cannot be stored exactly: an integer beyond 64 bits',
              ],
              [
                6 + at,
                'homes: floorSizeValue: the number 9007199254740993 cannot be stored exactly: the column is floating point, which rounds an integer past 2^53',
              ],
            ],
            format,
          );
        }
        // Alone in its batch, the number is written as an integer (as COPY text, by parse
        // workers for PostgreSQL) into the table's floating-point column: refused all the same.
        hostile.serve([
          '{"id":"f1","floorSizeValue":9007199254740993}',
          '{"id":"f2","address":"2 Oak Ave"}',
        ]);
        const t = await target(`numbers-float-${workers}`);
        const file = pipeline(
          t,
          `numbers-float-${workers}`,
          `  homes:\n    type: properties\n    query: '*'\n    ${POLL}\n`,
        );
        const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
        assert.equal(run.code, 0, run.stdout + run.stderr);
        assert.equal(run.summary.jobs[0].rejected, 1);
        const [kept] = await t.all<{ id: string }>('select id from homes');
        assert.equal(kept?.id, 'f2');
        const [reject] = await t.all<{ raw: string }>('select raw from _sluice_rejects');
        assert.match(reject!.raw, /"floorSizeValue":9007199254740993/, 'its row, digits and all');
      });
    }

    for (const [parsing, workers] of PARSINGS) {
      test(`pinned doubles stored integers past 2^53 rounded and 1e-400 as 0, with no reject: now each is a reject with its reason, the same numbers however written load${parsing}`, async () => {
        const PINNED = '    columns: { numBathroom: double, latitude: double }\n';
        const files = {
          json: [
            '{"id":"d1","numBathroom":9007199254740993}',
            '{"id":"d2","latitude":"9223372036854775807"}',
            '{"id":"d3","latitude":"1e-400"}',
            '{"id":"d4","numBathroom":9223372036854775807}',
            '{"id":"d5","numBathroom":2.5,"latitude":"30.2672"}',
            '{"id":"d6","numBathroom":1e2,"latitude":"1.10"}',
            '{"id":"d7","numBathroom":9007199254740994,"latitude":"-0"}',
          ],
          csv: [
            'id,numBathroom,latitude',
            'd1,9007199254740993,',
            'd2,,9223372036854775807',
            'd3,,1e-400',
            'd4,9223372036854775807,',
            'd5,2.5,30.2672',
            'd6,1e2,1.10',
            'd7,9007199254740994,-0',
          ],
        };
        for (const [format, lines] of Object.entries(files)) {
          if (format === 'csv') hostile.serve(lines.slice(1), { header: lines[0]! });
          else hostile.serve(lines);
          const name = `pinned-doubles-${format}-${workers}`;
          const t = await target(name);
          const file = pipeline(
            t,
            name,
            `  homes:\n    type: properties\n    query: '*'\n    format: ${format}\n    nested: json\n${PINNED}    ${POLL}\n`,
          );
          const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
          assert.equal(run.code, 0, `${format}: ${run.stdout}${run.stderr}`);
          assert.equal(run.summary.jobs[0].rejected, 4, format);
          assert.equal(run.summary.jobs[0].loaded, 3, format);
          const homes = await t.all<{ id: string; b: number | null; l: number | null }>(
            'select id, "numBathroom" as b, latitude as l from homes order by id',
          );
          assert.deepEqual(
            homes.map((h) => [h.id, h.b, h.l]),
            [
              ['d5', 2.5, 30.2672],
              ['d6', 100, 1.1],
              // -0 is 0 everywhere (PostgreSQL and DuckDB would keep the sign, SQLite not).
              ['d7', 9007199254740994, 0],
            ],
            format,
          );
          const rejects = await t.all<{ line: number; reason: string }>(
            'select line, reason from _sluice_rejects order by line',
          );
          const at = format === 'csv' ? 2 : 1;
          const pinned = ' (its type is pinned by columns:)';
          assert.deepEqual(
            rejects.map((r) => [Number(r.line), r.reason]),
            [
              [
                at,
                `numBathroom: the number 9007199254740993 cannot be stored exactly: a double holds it as 9007199254740992${pinned}`,
              ],
              [
                at + 1,
                `latitude: the number 9223372036854775807 cannot be stored exactly: a double holds it as 9223372036854776000${pinned}`,
              ],
              [
                at + 2,
                `latitude: the number 1e-400 cannot be stored exactly: a double rounds it to 0${pinned}`,
              ],
              [
                at + 3,
                `numBathroom: the number 9223372036854775807 cannot be stored exactly: a double holds it as 9223372036854776000${pinned}`,
              ],
            ],
            format,
          );
        }
      });
    }

    for (const [parsing, workers] of PARSINGS) {
      test(`times finer than a microsecond were rounded on PostgreSQL, cut on DuckDB, kept on SQLite, with no reject: now a reject with its reason on each, in any table; zeros past the sixth digit load${parsing}`, async () => {
        const fine = '2024-01-01T00:00:00.1234567Z';
        const files = {
          json: [
            JSON.stringify({ id: 't1', dateAdded: fine }),
            JSON.stringify({ id: 't2', dateAdded: '2024-01-01T00:00:00.1234560000Z' }),
            // PostgreSQL would round it into the next second.
            JSON.stringify({ id: 't3', dateAdded: '2024-01-01T05:30:00.9999995+05:30' }),
            // PostgreSQL refuses the offset, DuckDB read it as +06:39.
            JSON.stringify({ id: 't4', dateAdded: '2024-01-01T00:00:00+05:99' }),
            JSON.stringify({
              id: 't5',
              prices: [{ amountMin: 1, date: '2024-01-01T00:00:00.0000001Z' }],
            }),
            JSON.stringify({ id: 't6', dateUpdated: '2024-01-01T00:00:00.0000005Z' }),
            JSON.stringify({
              id: 't7',
              dateAdded: '2024-01-01T05:30:00.123456+05:30',
              dateUpdated: '2024-01-01T00:00:00Z',
            }),
          ],
          csv: [
            'id,dateAdded,dateUpdated,prices',
            `t1,${fine},,`,
            't2,2024-01-01T00:00:00.1234560000Z,,',
            't3,2024-01-01T05:30:00.9999995+05:30,,',
            't4,2024-01-01T00:00:00+05:99,,',
            't5,,,"[{""amountMin"":1,""date"":""2024-01-01T00:00:00.0000001Z""}]"',
            't6,,2024-01-01T00:00:00.0000005Z,',
            't7,2024-01-01T05:30:00.123456+05:30,2024-01-01T00:00:00Z,',
          ],
        };
        for (const [format, lines] of Object.entries(files)) {
          if (format === 'csv') hostile.serve(lines.slice(1), { header: lines[0]! });
          else hostile.serve(lines);
          const name = `fine-times-${format}-${workers}`;
          const t = await target(name);
          const file = pipeline(
            t,
            name,
            `  homes:\n    type: properties\n    query: '*'\n    format: ${format}\n    columns: { dateUpdated: timestamp }\n    ${POLL}\n`,
          );
          const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
          assert.equal(run.code, 0, `${format}: ${run.stdout}${run.stderr}`);
          const homes = await t.all<{ id: string; added: string | null }>(
            'select id, cast("dateAdded" as text) as added from homes order by id',
          );
          assert.deepEqual(
            homes.map((h) => [h.id, h.added === null ? null : instant(h.added)]),
            [
              ['t2', '2024-01-01T00:00:00.123456Z'],
              ['t5', null],
              ['t7', '2024-01-01T00:00:00.123456Z'],
            ],
            format,
          );
          const prices = await t.all('select * from homes__prices');
          assert.equal(prices.length, 0, `${format}: the child row is refused`);
          const rejects = await t.all<{ line: number; reason: string }>(
            'select line, reason from _sluice_rejects order by line',
          );
          const at = format === 'csv' ? 2 : 1;
          const finer =
            'cannot be stored exactly: a timestamp column holds microseconds, not finer';
          assert.deepEqual(
            rejects.map((r) => [Number(r.line), r.reason]),
            [
              [at, `homes: dateAdded: the time ${fine} ${finer}`],
              [at + 2, `homes: dateAdded: the time 2024-01-01T05:30:00.9999995+05:30 ${finer}`],
              [at + 3, "dateAdded: '2024-01-01T00:00:00+05:99' is not a valid date"],
              [at + 4, `homes__prices: date: the time 2024-01-01T00:00:00.0000001Z ${finer}`],
              [at + 5, `homes: dateUpdated: the time 2024-01-01T00:00:00.0000005Z ${finer}`],
            ],
            format,
          );
        }
      });
    }

    for (const [parsing, workers] of PARSINGS) {
      test(`integers written with an exponent (9.007199254740993e15) were rounded as doubles, with no reject: now each is kept exactly or refused, as its plain spelling is${parsing}`, async () => {
        const files = {
          json: [
            '{"id":"e1","yearBuilt":9.007199254740993e15}',
            '{"id":"e2","yearBuilt":9.1e16,"numBedroom":2.022e3}',
            '{"id":"e3","numBedroom":1e20}',
            '{"id":"e4","floorSizeValue":2.5e-1}',
            '{"id":"e5","prices":[{"amountMin":1.5,"listingId":-9.223372036854775808E18}]}',
          ],
          csv: [
            'id,yearBuilt,numBedroom,floorSizeValue,prices',
            'e1,9.007199254740993e15,,,',
            'e2,9.1e16,2.022e3,,',
            'e3,,1e20,,',
            'e4,,,2.5e-1,',
            'e5,,,,"[{""amountMin"":1.5,""listingId"":-9.223372036854775808E18}]"',
          ],
        };
        for (const [format, lines] of Object.entries(files)) {
          if (format === 'csv') hostile.serve(lines.slice(1), { header: lines[0]! });
          else hostile.serve(lines);
          const name = `exponents-${format}-${workers}`;
          const t = await target(name);
          const file = pipeline(
            t,
            name,
            `  homes:\n    type: properties\n    query: '*'\n    format: ${format}\n    ${POLL}\n`,
          );
          const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
          assert.equal(run.code, 0, `${format}: ${run.stdout}${run.stderr}`);
          assert.equal(run.summary.jobs[0].loaded, 4, format);
          assert.equal(run.summary.jobs[0].rejected, 1, format);
          assert.deepEqual(
            (await t.columns('homes')).find((c) => c.name === 'yearBuilt')?.type,
            t.integerType,
            `${format}: yearBuilt stays an integer column`,
          );
          // Read back as text: a driver would read an integer past 2^53 as a rounded number.
          const homes = await t.all<{
            id: string;
            y: string | null;
            b: string | null;
            f: number | null;
          }>(
            'select id, cast("yearBuilt" as text) as y, cast("numBedroom" as text) as b, "floorSizeValue" as f from homes order by id',
          );
          assert.deepEqual(
            homes.map((h) => [h.id, h.y, h.b, h.f === null ? null : Number(h.f)]),
            [
              ['e1', '9007199254740993', null, null],
              ['e2', '91000000000000000', '2022', null],
              ['e4', null, null, 0.25],
              ['e5', null, null, null],
            ],
            format,
          );
          const child = await t.one<{ listing: string }>(
            `select cast("listingId" as text) as listing from homes__prices where _parent_id = 'e5'`,
          );
          assert.equal(child.listing, '-9223372036854775808', `${format}: in a child table`);
          const rejects = await t.all<{ line: number; reason: string }>(
            'select line, reason from _sluice_rejects order by line',
          );
          assert.deepEqual(
            rejects.map((r) => [Number(r.line), r.reason]),
            [
              [
                format === 'csv' ? 4 : 3,
                'numBedroom: the number 1e20 cannot be stored exactly: an integer beyond 64 bits',
              ],
            ],
            format,
          );
        }
      });
    }

    test('times of a column widened to text read .000000Z on PostgreSQL and DuckDB, as sent on SQLite: now as the service sent them on every destination', async () => {
      const sent = [
        '2020-04-12T03:46:45Z',
        '2024-01-01T00:00:00.5Z',
        '2023-06-30T23:59:59.123456Z',
      ];
      const t = await target('widened-times');
      const file = pipeline(
        t,
        'widened-times',
        `  homes:\n    type: properties\n    query: '*'\n    ${POLL}\n`,
      );
      hostile.serve(
        sent.map((time, i) =>
          JSON.stringify({ id: `w${i}`, dateAdded: time, prices: [{ amountMin: i, date: time }] }),
        ),
      );
      const first = await runJson(file, hostileEnv());
      assert.equal(first.code, 0, first.stdout + first.stderr);
      const typeOf = async (table: string, column: string) =>
        (await t.columns(table)).find((c) => c.name === column)?.type;
      assert.notEqual(await typeOf('homes', 'dateAdded'), 'text', 'a time column first');
      // A later record holds text in both: each column widens to text, its times cast.
      hostile.serve([
        JSON.stringify({
          id: 'later',
          dateAdded: 'soon',
          prices: [{ amountMin: 9, date: 'unknown' }],
        }),
      ]);
      const second = await runJson(file, hostileEnv());
      assert.equal(second.code, 0, second.stdout + second.stderr);
      assert.match(String(await typeOf('homes', 'dateAdded')), /text|varchar/);
      const homes = await t.all<{ id: string; added: string }>(
        'select id, "dateAdded" as added from homes order by id',
      );
      assert.deepEqual(
        homes.map((h) => [h.id, h.added]),
        [['later', 'soon'], ...sent.map((time, i) => [`w${i}`, time])],
      );
      const prices = await t.all<{ date: string }>(
        'select "date" as date from homes__prices order by "amountMin"',
      );
      assert.deepEqual(
        prices.map((p) => p.date),
        [...sent, 'unknown'],
        'in a child table too',
      );
    });

    for (const [parsing, workers] of PARSINGS) {
      test(`a text pin stored the parsed number's spelling (2022.0 as 2022): now the text as the service sent it${parsing}`, async () => {
        const PINNED =
          '    columns: { yearBuilt: text, floorSizeValue: text, numBathroom: text, lotSizeValue: text }\n';
        const files = {
          json: [
            '{"id":"s1","yearBuilt":2022.0,"floorSizeValue":"1500.50","numBathroom":1e400}',
            '{"id":"s2","yearBuilt":"2022.0","floorSizeValue":9.007199254740993e15,"lotSizeValue":0.50}',
          ],
          csv: [
            'id,yearBuilt,floorSizeValue,numBathroom,lotSizeValue',
            's1,2022.0,1500.50,1e400,',
            's2,2022.0,9.007199254740993e15,,0.50',
          ],
        };
        for (const [format, lines] of Object.entries(files)) {
          if (format === 'csv') hostile.serve(lines.slice(1), { header: lines[0]! });
          else hostile.serve(lines);
          const name = `text-pins-${format}-${workers}`;
          const t = await target(name);
          const file = pipeline(
            t,
            name,
            `  homes:\n    type: properties\n    query: '*'\n    format: ${format}\n${PINNED}    ${POLL}\n`,
          );
          const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
          assert.equal(run.code, 0, `${format}: ${run.stdout}${run.stderr}`);
          assert.equal(run.summary.jobs[0].rejected, 0, format);
          const homes = await t.all<Record<string, string | null>>(
            'select id, "yearBuilt" as y, "floorSizeValue" as f, "numBathroom" as b, "lotSizeValue" as s from homes order by id',
          );
          assert.deepEqual(
            homes.map((h) => ({ ...h })),
            [
              { id: 's1', y: '2022.0', f: '1500.50', b: '1e400', s: null },
              { id: 's2', y: '2022.0', f: '9.007199254740993e15', b: null, s: '0.50' },
            ],
            format,
          );
        }
      });
    }

    for (const [parsing, workers] of PARSINGS) {
      test(`a JSON cell naming a key twice kept both values on SQLite and DuckDB, the last on PostgreSQL: now a reject naming the key on every destination${parsing}`, async () => {
        const PINNED = '    nested: json\n    columns: { extra: json }\n';
        const twice = (key: string) =>
          `its JSON names the key '${key}' twice in one object, so one of its values would be lost`;
        const files = {
          json: [
            JSON.stringify({ id: 'k1', extra: '{"a":1,"a":2}' }),
            JSON.stringify({ id: 'k2', extra: '{"a":{"x":1},"b":{"x":2}}' }),
            JSON.stringify({ id: 'k3', extra: '[{"a":1},{"a":2}]' }),
            JSON.stringify({ id: 'k4', extra: '{"a":1,"\\u0061":2}' }),
          ],
          csv: [
            'id,extra,prices',
            'k1,"{""a"":1,""a"":2}",',
            'k2,"{""a"":{""x"":1},""b"":{""x"":2}}",',
            'k3,"[{""a"":1},{""a"":2}]","[{""amountMin"":1},{""amountMin"":2}]"',
            'k4,"{""a"":1,""\\u0061"":2}",',
            'k5,,"[{""amountMin"":1,""amountMin"":2}]"',
          ],
        };
        for (const [format, lines] of Object.entries(files)) {
          if (format === 'csv') hostile.serve(lines.slice(1), { header: lines[0]! });
          else hostile.serve(lines);
          const name = `twice-${format}-${workers}`;
          const t = await target(name);
          const file = pipeline(
            t,
            name,
            `  homes:\n    type: properties\n    query: '*'\n    format: ${format}\n${PINNED}    ${POLL}\n`,
          );
          const run = await runJson(file, hostileEnv({ SLUICE_PARSE_WORKERS: workers }));
          assert.equal(run.code, 0, `${format}: ${run.stdout}${run.stderr}`);
          const homes = await t.all<{ id: string; extra: string }>(
            'select id, cast(extra as text) as extra from homes order by id',
          );
          assert.deepEqual(
            homes.map((h) => [h.id, JSON.parse(h.extra)]),
            [
              ['k2', { a: { x: 1 }, b: { x: 2 } }],
              ['k3', [{ a: 1 }, { a: 2 }]],
            ],
            format,
          );
          const rejects = await t.all<{ line: number; reason: string }>(
            'select line, reason from _sluice_rejects order by line',
          );
          const at = format === 'csv' ? 2 : 1;
          assert.deepEqual(
            rejects.map((r) => [Number(r.line), r.reason]),
            [
              [at, `extra: ${twice('a')}`],
              [at + 3, `extra: ${twice('a')}`],
              ...(format === 'csv' ? [[at + 4, `prices: ${twice('amountMin')}`]] : []),
            ],
            format,
          );
        }
      });
    }

    for (const [parsing, workers] of PARSINGS) {
      test(`a single record of 100 MB is one reject with its size, found in bounded memory; the rest loads, exit 0${parsing}`, async () => {
        for (const format of ['json', 'csv'] as const) {
          const huge = hugeRecordFile(format, 100);
          hostile.serveGenerated(3, () => huge.body());
          const t = await target(`huge-${format}-${workers}`);
          const file = pipeline(
            t,
            `huge-${format}-${workers}`,
            `  homes:\n    type: properties\n    query: '*'\n    format: ${format}\n    ${POLL}\n`,
          );
          // A heap of 192 MB, as the installed command runs: a run that gathered the record
          // ran out of memory after minutes (exit 134, no JSON, the pipeline blocked for good).
          const env = hostileEnv({
            SLUICE_PARSE_WORKERS: workers,
            NODE_OPTIONS: '--max-old-space-size=192',
          });
          const run = await runProcess(file, env);
          assert.equal(run.code, 0, `${format}: ${run.stdout}${run.stderr}`);
          const [job] = JSON.parse(run.stdout).jobs;
          assert.equal(job.loaded, 2, format);
          assert.equal(job.rejected, 1, format);
          const [reject] = await t.all<{ line: number; raw: string; reason: string }>(
            'select line, raw, reason from _sluice_rejects',
          );
          assert.equal(Number(reject!.line), format === 'csv' ? 3 : 2);
          assert.equal(
            reject!.reason,
            `a record of ${huge.size.toLocaleString('en-US')} bytes, more than the 4,194,304 a record may hold (SLUICE_MAX_RECORD_BYTES)`,
          );
          assert.equal(reject!.raw.length, 10_000, 'its first 10 kB');
          assert.ok(reject!.raw.startsWith(format === 'csv' ? 'huge,xxx' : '{"id":"huge"'));
          const ids = await t.all<{ id: string }>('select id from homes order by id');
          assert.deepEqual(
            ids.map((r) => r.id),
            ['r1', 'r3'],
          );
        }
      });
    }

    test('more fields than the database has columns: one clear line, exit 2', async () => {
      const record: Record<string, unknown> = { id: 'wide' };
      for (let i = 0; i < 2100; i++) record[`extra${i}`] = i;
      hostile.serve([JSON.stringify(record)]);
      const t = await target('wide');
      const file = pipeline(
        t,
        'wide',
        `  homes:\n    type: properties\n    query: '*'\n    ${POLL}\n`,
      );
      const run = await runJson(file, hostileEnv());
      assert.equal(run.code, 2, run.stderr);
      assert.equal(run.summary.jobs[0].error.code, 'SLUICE_DESTINATION_LIMIT');
      assert.match(run.summary.jobs[0].error.message, /columns, more than the \d+/);
    });

    test("another pipeline's download is never adopted: one that cannot be shown to be this job's is left", async () => {
      await harness.reset();
      const t = await target('adopt');
      const file = pipeline(
        t,
        'adopt',
        `  homes:\n    type: properties\n    query: 'province:TX'\n    records: 150\n    ${POLL}\n`,
      );
      // Killed between asking for its download and hearing the id: the request is recorded...
      await stopAt(file, harness, 'download-started:homes', 'SIGKILL');
      const mine = harness.emulator.context.state.downloads[0]!.publicId;
      await exec(t, `update _sluice_downloads set download_id = null, status = 'requested'`);
      // ...and meanwhile other pipelines of the account start downloads of their own.
      const { createServiceClient } = await import('../../src/client/index.js');
      const client = createServiceClient({ url: harness.v4Url, ...harness.credentials });
      await client.startDownload({ type: 'businesses', query: 'province:TX', numRecords: 150 });
      await client.startDownload({ type: 'properties', query: 'province:CA', numRecords: 150 });
      await client.close();
      // Only the first-created download not known to this destination used to be adopted.
      await exec(t, 'delete from _sluice_files');
      const run = await runJson(file, emulatorEnv(harness));
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.summary.jobs[0].download_id, mine, 'its own download, found by its records');
      const wrong = await t.one<{ n: number }>(
        `select count(*) as n from homes where province <> 'TX'`,
      );
      assert.equal(Number(wrong.n), 0);
    });

    test('a job that changes its table or write mode half way is refused, never misplaced', async () => {
      await harness.reset();
      const t = await target('changed');
      const job = (write: string) =>
        `  homes:\n    type: properties\n    query: 'province:TX'\n    records: 300\n    format: csv\n    write: ${write}\n    ${POLL}\n`;
      const file = pipeline(t, 'changed', job('merge'));
      await stopAt(file, harness, 'file-committed:homes@0', 'SIGKILL');
      const before = await t.one<{ n: number }>('select count(*) as n from homes');
      writeFileSync(file, `${pipelineHead('changed', t.destinationYaml)}jobs:\n${job('replace')}`);
      const refused = await runJson(file, emulatorEnv(harness));
      assert.equal(refused.code, 2);
      assert.equal(refused.summary.jobs[0].error.code, 'SLUICE_JOB_CHANGED');
      assert.match(refused.summary.jobs[0].error.message, /half loaded.*--fresh/);
      assert.equal((await t.one<{ n: number }>('select count(*) as n from homes')).n, before.n);
      const fresh = await runJson(file, emulatorEnv(harness), ['--fresh']);
      assert.equal(fresh.code, 0, fresh.stderr);
      assert.equal(Number((await t.one<{ n: number }>('select count(*) as n from homes')).n), 300);
      assert.deepEqual(await t.tables('homes__sluice'), []);
    });

    for (const [what, top, settings, said] of [
      [
        'columns:',
        '',
        '    columns: { latitude: double, numBathroom: text }\n',
        /: columns\.latitude is now real, was not pinned; columns\.numBathroom is now text, was not pinned\. Set them back/,
      ],
      ['naming:', 'naming: snake_case\n', '', /: naming is now snake_case, was keep\. Set it back/],
    ] as const) {
      test(`a ${what} change on a half-loaded download names what changed (it said "now merge into texasHomes, was merge into texasHomes"); set back, the download finishes, bought once`, async () => {
        await harness.reset();
        const name = `changed-${what.replace(':', '')}`;
        const t = await target(name);
        const write = (head: string, extra: string) =>
          writeFileSync(
            file,
            `${pipelineHead(name, t.destinationYaml)}${head}jobs:\n  texasHomes:\n    type: properties\n    query: 'province:TX'\n    records: 300\n    format: csv\n${extra}    ${POLL}\n`,
          );
        const file = join(dir, `${kind}-${name}.yaml`);
        write('', '');
        await stopAt(file, harness, 'file-committed:texasHomes@0', 'SIGKILL');
        const loaded = await t.one<{ n: number }>('select count(*) as n from "texasHomes"');
        write(top, settings);
        const refused = await runJson(file, emulatorEnv(harness));
        assert.equal(refused.code, 2, refused.stderr);
        const error = refused.summary.jobs[0].error;
        assert.equal(error.code, 'SLUICE_JOB_CHANGED');
        assert.match(error.message, /half loaded \(1 file of it in the tables\)/);
        assert.match(error.message, said);
        assert.match(error.message, /--fresh/);
        assert.doesNotMatch(error.message, /was merge into texasHomes/);
        const count = await t.one<{ n: number }>('select count(*) as n from "texasHomes"');
        assert.equal(Number(count.n), Number(loaded.n), 'nothing more loaded');
        write('', '');
        const finished = await runJson(file, emulatorEnv(harness));
        assert.equal(finished.code, 0, finished.stderr);
        assert.equal(finished.summary.jobs[0].reattached, true);
        const all = await t.one<{ n: number }>('select count(*) as n from "texasHomes"');
        assert.equal(Number(all.n), 300);
        assert.deepEqual(downloadsByType(harness), { properties: 1 }, 'bought once');
      });
    }

    test('two pipelines replacing one table at once: one owns it, the other is refused before buying (each used to swap its own table in over the other)', async () => {
      await harness.reset();
      const t = await target('shared');
      const job = (records: number) =>
        `  homes:\n    type: properties\n    query: '*'\n    records: ${records}\n    write: replace\n    ${POLL}\n`;
      const a = writePipeline(
        dir,
        `${kind}-shared-a`,
        `${pipelineHead('shared-a', t.destinationYaml)}jobs:\n${job(200)}`,
      );
      const b = writePipeline(
        dir,
        `${kind}-shared-b`,
        `${pipelineHead('shared-b', t.destinationYaml)}jobs:\n${job(300)}`,
      );
      // Where one process at a time has the database (DuckDB), the second waits for the first.
      const args = t.oneProcess ? ['--wait'] : [];
      const runs = await Promise.all([
        startRun(a, harness, { args }).finished,
        startRun(b, harness, { args }).finished,
      ]);
      const codes = runs.map((r) => r.code).sort();
      assert.deepEqual(codes, [0, 2], runs.map((r) => r.stdout + r.stderr).join('\n'));
      const loser = JSON.parse(runs.find((r) => r.code === 2)!.stdout);
      assert.equal(loser.error.code, 'SLUICE_TABLE_OWNED');
      assert.match(loser.error.message, /is the table of job 'homes' of pipeline 'shared-[ab]'/);
      assert.deepEqual(
        downloadsByType(harness),
        { properties: 1 },
        'the refused one bought nothing',
      );
      const winner = JSON.parse(runs.find((r) => r.code === 0)!.stdout);
      const { n, ids } = await t.one<{ n: number; ids: number }>(
        'select count(*) as n, count(distinct id) as ids from homes',
      );
      assert.equal(Number(n), winner.jobs[0].loaded, "the owner's whole table");
      assert.equal(Number(ids), Number(n));
      assert.deepEqual(await t.tables('homes__sluice'), [], 'no staging table left');
    });

    test('a 429 asking for a longer wait than the poll timeout says so', async () => {
      await harness.reset();
      const t = await target('wait');
      await harness.faults([
        { match: 'GET /v4/downloads/', action: '429', retry_after: 300, times: 5 },
      ]);
      const file = pipeline(
        t,
        'wait',
        `  homes:\n    type: properties\n    query: '*'\n    records: 50\n    poll: { interval: 50ms, timeout: 5s }\n`,
      );
      const run = await runJson(file, emulatorEnv(harness));
      await harness.clearFaults();
      assert.equal(run.code, 1);
      assert.match(run.summary.jobs[0].error.message, /asked to wait 300 seconds/);
      assert.deepEqual(downloadsByType(harness), { properties: 1 });
    });

    /** NDJSON property records `<prefix>0`, `<prefix>1`, ... with an address each. */
    const homes = (n: number, prefix: string) =>
      Array.from({ length: n }, (_, i) =>
        JSON.stringify({ id: `${prefix}${i}`, address: `${i} Main St` }),
      );
    const homesJob = (write = 'merge') =>
      `  homes:\n    type: properties\n    query: '*'\n    write: ${write}\n    ${POLL}\n`;
    const count = async (t: TestTarget, sql: string) => Number((await t.one<{ n: number }>(sql)).n);
    const filesOf = async (t: TestTarget, id: string) =>
      (
        await t.all<{ file_index: number }>(
          `select file_index from _sluice_files where download_id = '${id}' order by file_index`,
        )
      ).map((f) => Number(f.file_index));

    test('a result file answered with a 302 to where it is: every row loads', async () => {
      hostile.serve(homes(6, 'moved'), {
        files: 2,
        answer: (n) => (n === 1 ? 'redirect' : undefined),
      });
      const t = await target('redirect');
      const run = await runJson(pipeline(t, 'redirect', homesJob()), hostileEnv());
      assert.equal(run.code, 0, run.stdout + run.stderr);
      assert.equal(run.summary.jobs[0].loaded, 6);
      assert.equal(await count(t, 'select count(*) as n from homes'), 6);
      assert.deepEqual(await filesOf(t, run.summary.jobs[0].download_id), [0, 1]);
    });

    for (const [answer, what] of [
      ['empty', 'an empty 200'],
      ['short', 'fewer records than the download says'],
    ] as const) {
      test(`a result file that is ${what} was recorded as loaded: now exit 1, SLUICE_FILE_INCOMPLETE, nothing recorded for it, and a rerun that gets it whole loads every row, bought once`, async () => {
        const lines = homes(6, answer);
        hostile.serve(lines, { files: 2, answer: (n) => (n === 1 ? answer : undefined) });
        const bought = hostile.downloads();
        const t = await target(`incomplete-${answer}`);
        const file = pipeline(t, `incomplete-${answer}`, homesJob());
        const run = await runJson(file, hostileEnv());
        assert.equal(run.code, 1, run.stdout + run.stderr);
        const job = run.summary.jobs[0];
        const id = job.download_id as string;
        assert.equal(job.error.code, 'SLUICE_FILE_INCOMPLETE');
        assert.match(
          job.error.message,
          answer === 'empty'
            ? new RegExp(
                `${id}_1\\.txt held no records each of the 3 times .* download ${id} holds 6; .* run again later`,
              )
            : new RegExp(
                `download ${id} holds 6 records .* ${id}_0\\.txt 3 \\(loaded\\), ${id}_1\\.txt 2 \\(fetched 3 times, not loaded\\); .*run again later`,
              ),
        );
        assert.equal(hostile.fileGets(`${id}_1.txt`), 3, 'fetched again twice');
        assert.deepEqual(await filesOf(t, id), [0], 'the short file is not recorded');
        assert.equal(await count(t, 'select count(*) as n from homes'), 3);

        hostile.serve(lines, { files: 2 });
        const rerun = await runJson(file, hostileEnv());
        assert.equal(rerun.code, 0, rerun.stdout + rerun.stderr);
        assert.equal(rerun.summary.jobs[0].download_id, id, 'the same download, re-attached');
        assert.equal(await count(t, 'select count(*) as n from homes'), 6);
        assert.deepEqual(await filesOf(t, id), [0, 1]);
        assert.equal(hostile.downloads() - bought, 1, 'one purchase');
      });
    }

    test('a damaged gzip result file (corrupt, cut short, text sent as gzip) was an internal error: now fetched again, then SLUICE_FILE_DAMAGED naming it; a rerun loads it', async () => {
      for (const answer of ['gzip-corrupt', 'gzip-cut', 'gzip-text'] as const) {
        const lines = homes(4, answer);
        hostile.serve(lines, { answer: () => answer });
        const bought = hostile.downloads();
        const t = await target(answer);
        const file = pipeline(t, answer, homesJob());
        const run = await runJson(file, hostileEnv());
        assert.equal(run.code, 1, run.stdout + run.stderr);
        const job = run.summary.jobs[0];
        const id = job.download_id as string;
        assert.equal(job.error.code, 'SLUICE_FILE_DAMAGED', answer);
        assert.match(
          job.error.message,
          new RegExp(`^result file ${id}_0\\.txt is damaged: .*\\(zlib: [^)]+\\); fetched 3 times`),
        );
        assert.doesNotMatch(run.stderr, /internal error|\n\s+at /);
        assert.equal(hostile.fileGets(`${id}_0.txt`), 3, 'fetched again twice');
        assert.deepEqual(await filesOf(t, id), []);

        hostile.serve(lines);
        const rerun = await runJson(file, hostileEnv());
        assert.equal(rerun.code, 0, rerun.stdout + rerun.stderr);
        assert.equal(await count(t, 'select count(*) as n from homes'), 4);
        assert.equal(hostile.downloads() - bought, 1, 'one purchase');
      }
    });

    if (kind === 'postgres') {
      const sql = async (schema: string, text: string) => {
        const client = new pg.Client({ connectionString: postgresUrl() });
        await client.connect();
        try {
          await client.query(`set search_path to "${schema}"`);
          await client.query(text);
        } finally {
          await client.end();
        }
      };

      test('views on a column that must widen, and on a replace target: one clear line, exit 2', async () => {
        const t = await target('views');
        hostile.serve([JSON.stringify({ id: 'v1', yearBuilt: 1999 })]);
        const widen = pipeline(
          t,
          'views',
          `  homes:\n    type: properties\n    query: '*'\n    ${POLL}\n`,
        );
        assert.equal((await runJson(widen, hostileEnv())).code, 0);
        await sql(t.settings.schema!, 'create view old_homes as select id, "yearBuilt" from homes');
        hostile.serve([JSON.stringify({ id: 'v2', yearBuilt: 'unknown' })]);
        const run = await runJson(widen, hostileEnv());
        assert.equal(run.code, 2, run.stderr);
        assert.equal(run.summary.jobs[0].error.code, 'SLUICE_DESTINATION_DEPENDENT');
        assert.match(run.summary.jobs[0].error.message, /a view depends on it; drop the view/);

        const replace = pipeline(
          t,
          'views-replace',
          `  listed:\n    type: properties\n    query: '*'\n    write: replace\n    ${POLL}\n`,
        );
        hostile.serve([JSON.stringify({ id: 'r1' })]);
        assert.equal((await runJson(replace, hostileEnv())).code, 0);
        await sql(t.settings.schema!, 'create view listed_ids as select id from listed');
        const swapped = await runJson(replace, hostileEnv());
        assert.equal(swapped.code, 2);
        assert.match(
          swapped.summary.jobs[0].error.message,
          /a replace swaps the table.*views depend on it/,
        );
      });

      test('files loaded at once (SLUICE_FILES_AT_ONCE=2), one short: the download is never recorded as whole', async () => {
        // Each file's first answer waits for the other's request: both are written together,
        // and whichever ends its writing second checks the records of both.
        hostile.serve(homes(40, 'together'), {
          files: 2,
          answer: (n) => (n === 1 ? 'short' : undefined),
          together: true,
        });
        const t = await target('at-once');
        const file = pipeline(t, 'at-once', homesJob('append'));
        const run = await runJson(file, hostileEnv({ SLUICE_FILES_AT_ONCE: '2' }));
        assert.ok(hostile.servedTogether(), 'both files were in flight at once');
        assert.equal(run.code, 1, run.stdout + run.stderr);
        const job = run.summary.jobs[0];
        assert.equal(job.error.code, 'SLUICE_FILE_INCOMPLETE');
        const recorded = await t.all<{ rows_loaded: number }>(
          `select rows_loaded from _sluice_files where download_id = '${job.download_id}'`,
        );
        assert.equal(recorded.length, 1, 'one file of two is recorded, never both');
        assert.equal(
          await count(t, 'select count(*) as n from homes'),
          Number(recorded[0]!.rows_loaded),
          'the file not recorded left no rows',
        );
      });

      test('a statement_timeout too short for the load: one clear line, exit 1', async () => {
        const t = await target('timeout');
        const url = new URL(postgresUrl());
        url.searchParams.set('options', '-c statement_timeout=1');
        hostile.serve(Array.from({ length: 50 }, (_, i) => JSON.stringify({ id: `s${i}` })));
        const file = writePipeline(
          dir,
          'pg-timeout',
          `${pipelineHead('timeout', `{ url: '${url}', schema: ${t.settings.schema} }`)}jobs:\n  homes:\n    type: properties\n    query: '*'\n    ${POLL}\n`,
        );
        const run = await runCli(['run', file, '--no-progress'], hostileEnv());
        assert.equal(run.code, 1, run.stderr);
        assert.match(run.stderr, /statement_timeout .* too short .* raise it/);
        assert.doesNotMatch(run.stderr, /internal error|\n\s+at /);
      });
    }
  });
}

describe('hostile pipeline files', () => {
  test('a YAML alias bomb, a file of megabytes: exit 2 at once, no out-of-memory abort', async () => {
    const bomb = ['version: 1', 'a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 10; i++) {
      bomb.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(',')}]`,
      );
    }
    const file = join(dir, 'bomb.yaml');
    writeFileSync(file, `${bomb.join('\n')}\n`);
    // Expanded, the aliases would be 10^10 strings: getting an answer at all is the proof.
    const run = await runCli(['validate', file, '--json'], {});
    assert.equal(run.code, 2);
    assert.match(JSON.parse(run.stdout).error.message, /invalid YAML: .*alias/i);
    const huge = join(dir, 'huge.yaml');
    writeFileSync(
      huge,
      `version: 1\nname: huge\njobs:\n  a:\n    type: properties\n    query: '${'x'.repeat(20_000_000)}'\n`,
    );
    const big = await runCli(['validate', huge, '--json'], {});
    assert.equal(big.code, 2);
    assert.match(JSON.parse(big.stdout).error.message, /at most 1 MB/);
  });

  test('${VAR} feeds numeric fields; a merge key the view lacks is refused before spending', async () => {
    const file = join(dir, 'vars.yaml');
    writeFileSync(
      file,
      `version: 1\nname: vars\nsource: { api: v4, url: 'http://127.0.0.1:1/v4', email: e, password: p }\nviews:\n  v:\n    fields: [address, city]\njobs:\n  a:\n    type: properties\n    query: 'city:Austin'\n    records: \${N}\n    max_credits: \${CAP}\n    auto_trace: \${TRACE}\n`,
    );
    const ok = await runCli(['validate', file, '--json'], { N: '120', CAP: '500', TRACE: 'false' });
    assert.equal(ok.code, 0, ok.stdout);
    assert.equal(JSON.parse(ok.stdout).jobs[0].records, 120);
    writeFileSync(file, `${(await import('node:fs')).readFileSync(file, 'utf8')}    view: v\n`);
    const keyless = await runCli(['validate', file, '--json'], {
      N: '120',
      CAP: '500',
      TRACE: 'false',
    });
    assert.equal(keyless.code, 2);
    assert.match(
      JSON.parse(keyless.stdout).error.message,
      /merge key 'id' is not a field of view 'v'/,
    );
  });
});
