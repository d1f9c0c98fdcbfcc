import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';
import { creditsUsed, downloadsByType, runToEnd, snapshot, stopAt } from '../helpers/runs.js';

/**
 * Incremental sync: a first run loads everything, the emulator's world changes as its clock
 * moves (records updated and added, deterministically), and the next run pays only for what
 * changed, leaving tables equal to a fresh full download of the same query.
 */

const DAY = 86_400_000;
const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';
const QUERY = 'province:TX';

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  // 2% of records a day are updated and as many added: three days change about one in eight.
  harness = await EmulatorHarness.start({ scale: 0.1, fileRecords: 100, churn: 0.02 });
  dir = tempDir('sluice-incremental-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

/**
 * Properties (CSV, with child tables) and businesses (NDJSON), merged on id; incremental unless
 * `full`; with `autotrace` the properties come with their owners.
 */
function syncJobs(
  options: { full?: boolean; lookback?: string; autotrace?: boolean } = {},
): string {
  const incremental = options.full
    ? ''
    : `    incremental: { cursor: dateUpdated${options.lookback ? `, lookback: ${options.lookback}` : ''} }\n`;
  const homes = `  homes:
    type: properties
    query: '${QUERY}'
    format: csv
    write: merge
${options.autotrace ? '    auto_trace: true\n' : ''}${incremental}    ${POLL}
`;
  const shops = `  shops:
    type: businesses
    query: 'province:TX'
    format: json
    write: merge
${incremental}    ${POLL}
`;
  return `jobs:\n${homes}${options.autotrace ? '' : shops}`;
}

/** Properties (incremental unless `full`) and an owner lookup that follows them. */
function lookupJobs(options: { full?: boolean } = {}): string {
  return `jobs:
  homes:
    type: properties
    query: 'city:Austin'
    format: json
    write: merge
${options.full ? '' : '    incremental: { cursor: dateUpdated }\n'}    ${POLL}
  owners:
    type: people
    people_keys_from: homes
    format: csv
    ${POLL}
`;
}

function pipelineFor(t: TestTarget, name: string, jobs: string): string {
  return writePipeline(dir, `${t.kind}-${name}`, `${pipelineHead(name, t.destinationYaml)}${jobs}`);
}

type Clock = ReturnType<EmulatorHarness['clock']>;

async function run(file: string, clock: Clock, extra: string[] = []) {
  const result = await runCli(
    ['run', file, '--json', '--no-progress', ...extra],
    emulatorEnv(harness),
    undefined,
    clock,
  );
  assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
  return JSON.parse(result.stdout);
}

/** A table's rows by id, as JSON without the columns that name a download or a load time. */
async function rowsById(t: TestTarget, table: string): Promise<Map<string, string>> {
  const rows = await t.all<Record<string, unknown>>(`select * from "${table}"`);
  return new Map(
    rows.map((row) => [
      String(row.id),
      JSON.stringify(
        Object.entries(row)
          .filter(([k]) => !k.startsWith('_sluice_'))
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]),
      ),
    ]),
  );
}

function dateOf(value: unknown): number {
  return value instanceof Date ? value.getTime() : Date.parse(String(value));
}

function spent(before: Record<string, number>, after: Record<string, number>) {
  const out: Record<string, number> = {};
  for (const [type, n] of Object.entries(after)) {
    if (n !== (before[type] ?? 0)) out[type] = n - (before[type] ?? 0);
  }
  return out;
}

async function cursorRow(t: TestTarget, job: string) {
  const rows = await t.all<{ value: string; run_id: string }>(
    `select value, run_id from _sluice_cursors where job = '${job}'`,
  );
  return rows[0];
}

/** Per job of a first run: its rows by id, and its cursor. */
async function firstLoad(t: TestTarget, summary: { jobs: JobResult[] }) {
  const out = new Map<string, { rows: Map<string, string>; dates: Map<string, number> }>();
  for (const job of summary.jobs) {
    const dates = await t.all<{ id: string; d: unknown }>(
      `select id, "dateUpdated" as d from "${job.job}"`,
    );
    out.set(job.job, {
      rows: await rowsById(t, job.job),
      dates: new Map(dates.map((r) => [String(r.id), dateOf(r.d)])),
    });
  }
  return out;
}

interface JobResult {
  job: string;
  status: string;
  download_id: string;
  downloaded: number;
  found: number;
  reattached: boolean;
  incremental: {
    from: string | null;
    last: string | null;
    next: string | null;
    full_refresh: boolean;
  };
}

/**
 * Where the tables of an incremental autotrace (or owner lookup) load may differ from a fresh
 * full download: a person whose record changed while none of their properties did still has the
 * data of when a property of theirs was last read. Checks that every difference is of that kind
 * (no other table differs), and returns how many people it concerns.
 */
async function stalePeopleOnly(t: TestTarget, ref: TestTarget, firstDownload: string) {
  const reread = new Set(
    (
      await t.all<{ id: string }>(
        `select id from homes where _sluice_download_id <> '${firstDownload}'`,
      )
    ).map((r) => String(r.id)),
  );
  const [mine, theirs] = [await snapshot(t), await snapshot(ref)];
  const owned = new Map<string, string[]>();
  for (const r of await ref.all<{ property_id: string; people_key: string }>(
    'select property_id, people_key from homes__owners',
  )) {
    owned.set(r.people_key, [...(owned.get(r.people_key) ?? []), String(r.property_id)]);
  }
  const stale = new Set<string>();
  for (const table of Object.keys(theirs)) {
    if (JSON.stringify(mine[table]) === JSON.stringify(theirs[table])) continue;
    const by = table.startsWith('homes__people')
      ? '_parent_id'
      : table === 'people'
        ? 'people_key'
        : table === 'people__phone_numbers'
          ? '_parent_people_key'
          : undefined;
    assert.ok(by, `${table} differs from the fresh full download`);
    const [a, b] = [await groups(t, table, by), await groups(ref, table, by)];
    for (const key of new Set([...a.keys(), ...b.keys()])) {
      if (a.get(key) === b.get(key)) continue;
      const properties = by === '_parent_id' ? [key] : (owned.get(key) ?? []);
      for (const id of properties) {
        assert.ok(!reread.has(id), `${table} ${key} differs though property ${id} was read again`);
      }
      stale.add(by === '_parent_id' ? `property ${key}` : key);
    }
  }
  return stale.size;
}

async function groups(t: TestTarget, table: string, by: string): Promise<Map<string, string>> {
  const rows = await t.all<Record<string, unknown>>(`select * from "${table}"`);
  const out = new Map<string, string[]>();
  for (const row of rows) {
    const key = String(row[by]);
    const line = JSON.stringify(
      Object.entries(row)
        .filter(([k]) => !k.startsWith('_sluice_'))
        .sort(([x], [y]) => x.localeCompare(y))
        .map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]),
    );
    out.set(key, [...(out.get(key) ?? []), line]);
  }
  return new Map([...out].map(([k, v]) => [k, v.sort().join('\n')]));
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`incremental sync on ${kind}`, { skip: reason }, () => {
    test('three days later the next run pays exactly for what changed, and the tables equal a fresh full download', async () => {
      const t = await target('three-days');
      const file = pipelineFor(t, 'three-days', syncJobs());
      const clock = harness.clock();
      const first = await run(file, clock);
      const before = await firstLoad(t, first);
      for (const job of first.jobs as JobResult[]) {
        assert.equal(job.incremental.from, null, 'the first run downloads everything');
        assert.equal(job.incremental.last, null);
        const cursor = job.incremental.next!;
        assert.equal((await cursorRow(t, job.job))?.value, cursor);
        assert.equal(
          Math.max(...before.get(job.job)!.dates.values()),
          Date.parse(cursor),
          'the cursor is the largest dateUpdated loaded',
        );
      }

      await harness.advanceClock(3 * DAY);
      const used = creditsUsed(harness);
      const downloadsBefore = harness.emulator.context.state.downloads.length;
      const second = await run(file, clock);
      const paid = spent(used, creditsUsed(harness));
      const queries = harness.emulator.context.state.downloads
        .slice(downloadsBefore)
        .map((d) => d.query);

      // What changed, found independently: a fresh full download of the same queries.
      const ref = await target('three-days-ref');
      await run(pipelineFor(ref, 'three-days-ref', syncJobs({ full: true })), harness.clock());
      const expected: Record<string, number> = {};
      for (const job of second.jobs as JobResult[]) {
        const was = before.get(job.job)!;
        const cursor = (first.jobs as JobResult[]).find((j) => j.job === job.job)!.incremental
          .next!;
        const now = await rowsById(ref, job.job);
        const changed = [...now].filter(([id, row]) => was.rows.get(id) !== row).map(([id]) => id);
        const added = changed.filter((id) => !was.rows.has(id));
        assert.ok(added.length > 0 && changed.length > added.length, `${job.job}: both kinds`);
        // The range is inclusive: records stamped with the cursor's own second are read again.
        const atCursor = [...was.dates].filter(
          ([id, d]) => d === Date.parse(cursor) && !changed.includes(id),
        ).length;
        assert.ok(atCursor <= 2, `${job.job}: ${atCursor} records share the cursor's second`);
        assert.equal(job.incremental.from, cursor);
        assert.equal(job.downloaded, changed.length + atCursor, `${job.job} paid for`);
        assert.ok(Date.parse(job.incremental.next!) > Date.parse(cursor), 'the cursor moved');
        expected[job.job === 'homes' ? 'property' : 'business'] = job.downloaded;
      }
      assert.deepEqual(paid, expected, "the emulator's credit counters");
      assert.deepEqual(second.credits, paid, 'the summary says what the run spent');
      assert.deepEqual(
        // The range ends the second before the guard counted, by the service's clock.
        queries.map((q) => q.replace(/\[\S+ TO \S+\]/, '[<cursor> TO <just before>]')),
        [
          '(province:TX) AND dateUpdated:[<cursor> TO <just before>]',
          '(province:TX) AND dateUpdated:[<cursor> TO <just before>]',
        ],
      );
      assert.deepEqual(
        await snapshot(t),
        await snapshot(ref),
        'every table, child tables included, equals the fresh full download',
      );
    });

    test('SIGKILL during the incremental load: the cursor stays, the rerun finishes the same range, tables equal a fresh full download', async () => {
      const t = await target('killed');
      // One job at a time: the run is killed in a subprocess on this machine's clock, three
      // emulated days behind the emulator's, and the kill is to land in one job's load, never
      // between another job's start and its id (adopt.ts would then have to find it).
      const file = pipelineFor(t, 'killed', `max_parallel_jobs: 1\n${syncJobs()}`);
      await run(file, harness.clock());
      const cursor1 = (await cursorRow(t, 'homes'))!.value;
      await harness.advanceClock(3 * DAY);
      const used = creditsUsed(harness);
      await stopAt(file, harness, 'file-batch:homes@0', 'SIGKILL');
      assert.equal((await cursorRow(t, 'homes'))?.value, cursor1, 'the killed run left the cursor');
      const rerun = (await runToEnd(file, harness)) as unknown as { jobs: JobResult[] };
      const homes = rerun.jobs[0]!;
      assert.equal(homes.reattached, true, 'the rerun re-attached to the paid download');
      assert.equal(homes.incremental.from, cursor1, 'with the range it was started with');
      assert.deepEqual(
        downloadsByType(harness),
        { properties: 2, businesses: 2 },
        'one download per job and range',
      );
      // Jobs run at once: the businesses job may have loaded before the kill (the rerun skips it
      // then), and either way its one download was paid once.
      const shops = harness.emulator.context.state.downloads.filter((d) => d.type === 'businesses');
      assert.deepEqual(spent(used, creditsUsed(harness)), {
        property: homes.downloaded,
        business: shops.at(-1)!.target,
      });
      const ref = await target('killed-ref');
      await run(pipelineFor(ref, 'killed-ref', syncJobs({ full: true })), harness.clock());
      assert.deepEqual(await snapshot(t), await snapshot(ref));
      assert.equal((await cursorRow(t, 'homes'))?.value, homes.incremental.next);
      assert.notEqual(homes.incremental.next, cursor1, 'the rerun moved it');
    });

    test('a lookback re-reads without duplicates; plan shows the saving; status the cursor; --full-refresh starts over', async () => {
      const t = await target('lookback');
      const file = pipelineFor(t, 'lookback', syncJobs({ lookback: '2d' }));
      const clock = harness.clock();
      const first = await run(file, clock);
      const cursor1 = first.jobs[0].incremental.next as string;
      await harness.advanceClock(DAY);

      const plan = await runCli(['plan', file, '--json'], emulatorEnv(harness));
      assert.equal(plan.code, 0, plan.stderr);
      const planned = JSON.parse(plan.stdout).jobs[0];
      assert.equal(planned.incremental.last, cursor1);
      assert.equal(Date.parse(planned.incremental.from), Date.parse(cursor1) - 2 * DAY);
      assert.ok(planned.incremental.full_records >= first.jobs[0].downloaded);
      assert.ok(planned.records < planned.incremental.full_records);
      assert.equal(
        planned.incremental.credits_saved,
        planned.incremental.full_records - planned.records,
      );
      const text = await runCli(['plan', file], emulatorEnv(harness));
      assert.match(
        text.stdout,
        /homes: incremental, dateUpdated since \S+ \(cursor \S+\): [\d,]+ records? to pay for, [\d,]+ records in a full refresh \([\d,]+ credits saved\)/,
      );

      const second = await run(file, clock);
      assert.equal(second.jobs[0].downloaded, planned.records, 'the run pays what plan said');
      const { n, ids } = await t.one<{ n: number; ids: number }>(
        'select count(*) as n, count(distinct id) as ids from homes',
      );
      assert.equal(Number(n), Number(ids), 'the overlap merged, not duplicated');
      const ref = await target('lookback-ref');
      await run(pipelineFor(ref, 'lookback-ref', syncJobs({ full: true })), harness.clock());
      assert.deepEqual(await snapshot(t), await snapshot(ref));

      const status = await runCli(['status', file, '--json'], emulatorEnv(harness));
      assert.deepEqual(
        JSON.parse(status.stdout).cursors.map(
          (c: { job: string; field: string; value: string }) => [c.job, c.field, c.value],
        ),
        [
          ['homes', 'dateUpdated', second.jobs[0].incremental.next],
          ['shops', 'dateUpdated', second.jobs[1].incremental.next],
        ],
      );
      const statusText = await runCli(['status', file], emulatorEnv(harness));
      assert.match(statusText.stdout, /Cursors of incremental jobs/);

      const full = await run(file, clock, ['--full-refresh', '--job', 'homes']);
      assert.equal(full.jobs.length, 1);
      const range = full.jobs[0].incremental;
      assert.equal(range.full_refresh, true);
      assert.equal(range.from, null);
      assert.equal(full.jobs[0].downloaded, Number(ids), 'every record, once more');
      assert.deepEqual(await snapshot(t), await snapshot(ref));
      assert.equal((await cursorRow(t, 'homes'))?.run_id, full.run_id, 'the cursor is reset');
      assert.equal((await cursorRow(t, 'shops'))?.run_id, second.run_id, 'only the job asked for');
    });

    test('autotrace: properties and owner links as a fresh download; people who changed alone wait for --full-refresh', async () => {
      const t = await target('traced');
      const file = pipelineFor(t, 'traced', syncJobs({ autotrace: true }));
      const clock = harness.clock();
      const first = await run(file, clock);
      await harness.advanceClock(3 * DAY);
      const used = creditsUsed(harness);
      const second = await run(file, clock);
      const homes = second.jobs[0] as JobResult;
      assert.ok(homes.downloaded > 0 && homes.downloaded < first.jobs[0].downloaded);
      assert.deepEqual(spent(used, creditsUsed(harness)), {
        property: homes.downloaded,
        people: homes.downloaded,
      });
      const ref = await target('traced-ref');
      await run(pipelineFor(ref, 'traced-ref', syncJobs({ autotrace: true, full: true })), clock);
      const stale = await stalePeopleOnly(t, ref, first.jobs[0].download_id);
      assert.ok(stale > 0, 'the emulator changed some owners while their properties stayed');
      await run(file, clock, ['--full-refresh']);
      assert.deepEqual(await snapshot(t), await snapshot(ref), 'a full refresh catches up');
    });

    test('an owner lookup after an incremental job looks up only the owners of what it loaded', async () => {
      const t = await target('lookup');
      const file = pipelineFor(t, 'lookup', lookupJobs());
      const clock = harness.clock();
      const first = await run(file, clock);
      assert.ok(first.jobs[1].downloaded > 0);
      assert.equal(first.jobs[1].incremental.from, null, 'the first lookup covers every property');
      await harness.advanceClock(3 * DAY);
      const second = await run(file, clock);
      const homes = second.jobs[0] as JobResult;
      assert.ok(homes.downloaded > 0 && homes.downloaded < first.jobs[0].downloaded);
      const owners = await t.all<{ k: string }>(
        `select distinct "mostRecentOwnerPeopleKey" as k from homes where _sluice_download_id = '${homes.download_id}' and "mostRecentOwnerPeopleKey" is not null`,
      );
      const lookup = second.jobs[1] as JobResult;
      assert.equal(lookup.status, 'loaded');
      assert.ok(
        lookup.found <= owners.length,
        `${lookup.found} looked up, ${owners.length} owners`,
      );
      assert.ok(lookup.found < first.jobs[1].found, 'not every owner again');
      assert.equal(lookup.incremental.from, first.jobs[1].incremental.next);
      const ref = await target('lookup-ref');
      await run(pipelineFor(ref, 'lookup-ref', lookupJobs({ full: true })), clock);
      await stalePeopleOnly(t, ref, first.jobs[0].download_id);
      await run(file, clock, ['--full-refresh']);
      assert.deepEqual(await snapshot(t), await snapshot(ref), 'a full refresh catches up');
    });
  });
}
