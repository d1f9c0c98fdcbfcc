import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { type DataType, FIELDS } from '../../src/catalog.js';
import type { RunSummary } from '../../src/pipeline/index.js';
import { catalogueChildTables } from '../../src/records/nested.js';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';
import { rowLines } from '../helpers/runs.js';

/**
 * Nested records as related tables, and autotrace merges, end to end on each destination: the
 * CLI in this process, the emulator over HTTP, real SQLite files and PostgreSQL schemas.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.5, fileRecords: 150 });
  dir = tempDir();
});
after(() => harness.close());

const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';

async function run(
  target: TestTarget,
  name: string,
  jobs: string,
  env: Record<string, string> = {},
): Promise<RunSummary> {
  const file = writePipeline(
    dir,
    `${target.kind}-${name}`,
    `${pipelineHead(name, target.destinationYaml)}jobs:\n${jobs}`,
  );
  const result = await runCli(
    ['run', file, '--json', '--no-progress'],
    emulatorEnv(harness, env),
    undefined,
    harness.clock(),
  );
  assert.equal(result.code, 0, result.stderr + result.stdout);
  return JSON.parse(result.stdout);
}

const QUERIES: Record<DataType, string> = {
  properties: 'province:TX',
  businesses: 'province:TX',
  products: 'brand:*',
  people: 'province:TX',
};

/** A table's rows without the load metadata, in a stable order, for comparing two loads. */
async function contents(target: TestTarget, table: string): Promise<unknown[]> {
  return rowLines(await target.all<Record<string, unknown>>(`select * from "${table}"`));
}

for (const kind of destinationKinds()) {
  describe(`nested tables on ${kind}`, async () => {
    const reason = await skipReason(kind);
    const target = targetFactory(kind, () => dir);

    for (const type of Object.keys(QUERIES) as DataType[]) {
      test(`${type}: a child table per array of objects; CSV and NDJSON give identical tables`, {
        skip: reason,
      }, async () => {
        const csv = await target(`${type}-csv`);
        const json = await target(`${type}-json`);
        const job = (format: string) =>
          `  t:\n    type: ${type}\n    query: '${QUERIES[type]}'\n    records: 300\n    format: ${format}\n    ${POLL}\n`;
        await run(csv, `${type}-csv`, job('csv'));
        await run(json, `${type}-json`, job('json'));
        const expected = catalogueChildTables(type, 't').filter((t) => t.split('__').length === 2);
        assert.ok(expected.length > 0 || type === 'people');
        const tables = await csv.tables('t');
        for (const child of expected)
          assert.ok(tables.includes(child), `${child} in ${tables.join(', ')}`);
        assert.deepEqual(await json.tables('t'), tables, 'the same tables from CSV and NDJSON');
        for (const table of tables) {
          const a = await contents(csv, table);
          // Every table the catalogue implies exists; deeper ones may hold nothing for this data.
          if (table === 't' || expected.includes(table))
            assert.ok(a.length > 0, `${table} has rows`);
          assert.deepEqual(await contents(json, table), a, `${table}: CSV and NDJSON rows differ`);
        }
        const orphans = await csv.one<{ n: number }>(
          `select count(*) as n from "${expected[0] ?? 't'}" c where not exists (select 1 from t where t.id = c._parent_id)`,
        );
        if (expected[0]) assert.equal(orphans.n, 0, 'every child row has its parent');
      });
    }

    test("merge replaces a re-loaded parent's child rows: no stale child row remains", {
      skip: reason,
    }, async () => {
      const t = await target('merge-children');
      const job = `  homes:\n    type: properties\n    query: 'province:TX'\n    records: 200\n    format: json\n    ${POLL}\n`;
      await run(t, 'merge-children', job);
      const before = await t.one<{ n: number }>('select count(*) as n from homes__prices');
      const parent = await t.one<{ id: string }>('select id from homes order by id limit 1');
      // A price the service no longer returns, as if an earlier download had it.
      const stale = `insert into homes__prices ("_parent_id", "_position", "currency") values ('${parent.id}', 99, 'XXX')`;
      await t.exec(stale);
      await run(t, 'merge-children', job.replace('records: 200', 'records: 250'));
      const afterRun = await t.one<{ n: number; dups: number }>(
        'select count(*) as n, count(*) - count(distinct "_parent_id" || \':\' || "_position") as dups from homes__prices',
      );
      assert.equal(
        (
          await t.one<{ n: number }>(
            `select count(*) as n from homes__prices where currency = 'XXX'`,
          )
        ).n,
        0,
        'the stale child row is gone',
      );
      assert.equal(afterRun.dups, 0, 'one child row per parent and position');
      assert.ok(afterRun.n >= before.n);
      assert.equal((await t.one<{ n: number }>('select count(*) as n from homes')).n, 250);
    });

    test('autotrace run twice with overlapping results: one row per person, one link per pair', {
      skip: reason,
    }, async () => {
      const t = await target('autotrace');
      const job = (records: number) =>
        `  homes:\n    type: properties\n    query: 'province:TX'\n    records: ${records}\n    format: csv\n    auto_trace: true\n    ${POLL}\n`;
      const first = await run(t, 'autotrace', job(120));
      assert.deepEqual(first.jobs[0]?.credits, { property: 120, people: 120 });
      await run(t, 'autotrace', job(200));
      const people = await t.one<{ n: number; keys: number }>(
        'select count(*) as n, count(distinct people_key) as keys from people',
      );
      assert.ok(people.n > 0);
      assert.equal(people.n, people.keys, 'one row per person');
      const links = await t.one<{ n: number; pairs: number; homes: number }>(
        `select count(*) as n, count(distinct property_id || '/' || people_key) as pairs, count(distinct property_id) as homes from homes__owners`,
      );
      assert.equal(links.n, links.pairs, 'one link per pair');
      assert.equal(links.homes, 200, 'every traced property has its owner linked');
      const unlinked = await t.one<{ n: number }>(
        'select count(*) as n from homes__owners o where not exists (select 1 from people p where p.people_key = o.people_key)',
      );
      assert.equal(unlinked.n, 0, 'every link points at a person');
      const phones = await t.one<{ n: number; dups: number }>(
        `select count(*) as n, count(*) - count(distinct "_parent_people_key" || ':' || "_position") as dups from people__phone_numbers`,
      );
      assert.ok(phones.n > 0);
      assert.equal(phones.dups, 0, "a person's phones are not duplicated by a second run");
      // The analyst's queries of the README run as written on this destination.
      const withPhones = await t.all(`select h.address, p."firstName", p."lastName", ph.number
        from homes h
        join homes__owners o on o.property_id = h.id
        join people p on p.people_key = o.people_key
        join people__phone_numbers ph on ph._parent_people_key = p.people_key`);
      assert.ok(withPhones.length > 0);
      const perOwner = await t.all<{
        properties: number;
      }>(`select p.people_key, p."firstName", p."lastName", count(*) as properties
        from homes__owners o join people p on p.people_key = o.people_key
        group by p.people_key, p."firstName", p."lastName"
        order by properties desc limit 20`);
      assert.ok((perOwner[0]?.properties ?? 0) >= 1);
      const history = await t.all(`select h.address, pr."amountMin", pr."dateSeen"
        from homes h join homes__prices pr on pr._parent_id = h.id
        order by h.id, pr._position`);
      assert.ok(history.length > 0);
      const deep = await t.tables('homes__people__');
      assert.deepEqual(deep, ['homes__people__phone_numbers'], 'deeper arrays nest again');
    });

    test("replace swaps an autotrace job's owner links in with its table; people are kept", {
      skip: reason,
    }, async () => {
      const t = await target('replace-owners');
      const job = (city: string) =>
        `  homes:\n    type: properties\n    query: 'city:${city} AND province:TX'\n    records: 80\n    format: json\n    write: replace\n    auto_trace: true\n    ${POLL}\n`;
      await run(t, 'replace-owners', job('Austin'));
      const austinPeople = await t.one<{ n: number }>('select count(*) as n from people');
      await run(t, 'replace-owners', job('Dallas'));
      const homes = await t.all<{ city: string }>('select distinct city from homes');
      assert.deepEqual(homes, [{ city: 'Dallas' }]);
      const stale = await t.one<{ n: number }>(
        'select count(*) as n from homes__owners o where not exists (select 1 from homes h where h.id = o.property_id)',
      );
      assert.equal(stale.n, 0, 'no link to a property the new table does not hold');
      const links = await t.one<{ n: number }>('select count(*) as n from homes__owners');
      assert.equal(links.n, 80, 'one link per traced property');
      const people = await t.one<{ n: number }>('select count(*) as n from people');
      assert.ok(people.n > austinPeople.n, 'the people table, shared by runs, is merged into');
      assert.deepEqual(
        (await t.tables('')).filter((name) => name.includes('sluice_new')),
        [],
        'no staging table is left behind',
      );
    });

    test('parsing in worker threads loads the same tables as parsing in the main thread', {
      skip: reason,
    }, async () => {
      const inline = await target('parse-inline');
      const workers = await target('parse-workers');
      const job = `  homes:\n    type: properties\n    query: 'province:TX'\n    records: 600\n    format: csv\n    auto_trace: true\n    ${POLL}\n`;
      await run(inline, 'parse-inline', job, { SLUICE_PARSE_WORKERS: '0' });
      await run(workers, 'parse-workers', job, { SLUICE_PARSE_WORKERS: '2' });
      const tables = await inline.tables('');
      assert.deepEqual(await workers.tables(''), tables);
      for (const table of tables.filter((t) => !t.startsWith('_sluice_'))) {
        const a = await contents(inline, table);
        assert.ok(a.length > 0, `${table} has rows`);
        assert.deepEqual(await contents(workers, table), a, `${table} differs`);
      }
    });

    test('parse workers (COPY text for PostgreSQL) load what the main thread does: NDJSON merged, CSV appended', {
      skip: reason,
    }, async () => {
      const inline = await target('copy-inline');
      const workers = await target('copy-workers');
      const job = (name: string, format: string, write: string) =>
        `  ${name}:\n    type: properties\n    query: 'province:TX'\n    records: 450\n    format: ${format}\n    write: ${write}\n    nested: json\n    ${POLL}\n`;
      const jobs = job('merged', 'json', 'merge') + job('appended', 'csv', 'append');
      await run(inline, 'copy-inline', jobs, { SLUICE_PARSE_WORKERS: '0' });
      await run(workers, 'copy-workers', jobs, { SLUICE_PARSE_WORKERS: '2' });
      for (const table of ['merged', 'appended']) {
        const a = await contents(inline, table);
        assert.equal(a.length, 450, `${table} has every record`);
        assert.deepEqual(await contents(workers, table), a, `${table} differs`);
      }
    });

    test('an owner lookup job gives the same people and link tables as autotrace', {
      skip: reason,
    }, async () => {
      const query = 'city:Austin AND province:TX';
      const traced = await target('traced');
      const enriched = await target('enriched');
      await run(
        traced,
        'traced',
        `  homes:\n    type: properties\n    query: '${query}'\n    format: json\n    auto_trace: true\n    ${POLL}\n`,
      );
      const summary = await run(
        enriched,
        'enriched',
        `  homes:\n    type: properties\n    query: '${query}'\n    format: csv\n    ${POLL}\n  owners:\n    type: people\n    people_keys_from: homes\n    format: csv\n    ${POLL}\n`,
      );
      assert.equal(summary.jobs[1]?.status, 'loaded');
      for (const table of ['people', 'people__phone_numbers', 'homes__owners']) {
        const a = await contents(traced, table);
        assert.ok(a.length > 0, `${table} has rows`);
        assert.deepEqual(await contents(enriched, table), a, `${table} differs`);
      }
    });
  });
}

// FIELDS is imported so that a change of the catalogue's shape fails this file's typecheck.
void FIELDS;
