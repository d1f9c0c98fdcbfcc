import { strict as assert } from 'node:assert';
import { existsSync } from 'node:fs';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';
import { creditsUsed, downloadsByType } from '../helpers/runs.js';

/**
 * Tables one destination holds for several jobs, files and pipelines. Each case is named after
 * what broke: a job's table landing on the shared people table, or inside another job's child
 * tables, validated, run and exiting 0 while paid rows were swapped away and owner links pointed
 * at nobody; or failing after buying with a raw SQL error, every rerun the same.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.2, fileRecords: 100, churn: 0, queueMs: 100 });
  dir = tempDir('sluice-shared-tables-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

const POLL = 'poll: { interval: 50ms, max_interval: 100ms, timeout: 30s }';

/** A properties job whose owners autotrace puts in the shared people table. */
const homes = (records = 100) =>
  `  homes:\n    type: properties\n    query: 'province:TX'\n    records: ${records}\n    format: csv\n    auto_trace: true\n    ${POLL}\n`;

/** A people job; its table is its name unless `table` says otherwise. */
const peopleJob = (name: string, write: string, table?: string) =>
  `  ${name}:\n    type: people\n    query: 'province:TX'\n    records: 50\n    write: ${write}\n${table ? `    table: ${table}\n` : ''}    ${POLL}\n`;

async function run(files: string[], args: string[] = []) {
  const result = await runCli(
    ['run', ...files, '--json', '--no-progress', ...args],
    emulatorEnv(harness),
  );
  return { ...result, json: result.stdout ? JSON.parse(result.stdout) : undefined };
}

/** The tables there are, none where the database file was never made. */
async function tablesOf(t: TestTarget): Promise<string[]> {
  return t.file !== undefined && !existsSync(t.file) ? [] : t.tables('');
}

async function count(t: TestTarget, sql: string): Promise<number> {
  return Number((await t.one<{ n: number }>(sql)).n);
}

/** Owner links whose person is not in the people table: paid people credits gone. */
const DANGLING =
  'select count(*) as n from homes__owners l where not exists (select 1 from people p where p.people_key = l.people_key)';

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  const file = (t: TestTarget, name: string, jobs: string) =>
    writePipeline(dir, `${kind}-${name}`, `${pipelineHead(name, t.destinationYaml)}jobs:\n${jobs}`);

  describe(`tables shared in one destination, on ${kind}`, { skip: reason }, () => {
    for (const write of ['replace', 'merge']) {
      test(`a people job named people beside an autotrace job (${write}): refused by validate and run before anything is bought; it ${write === 'replace' ? 'swapped the paid people away, exit 0' : 'failed after buying with a raw ON CONFLICT error'}`, async () => {
        const t = await target(`people-${write}`);
        const p = file(t, `people-${write}`, `${homes()}${peopleJob('people', write)}`);
        const validate = await runCli(['validate', p, '--json'], emulatorEnv(harness));
        assert.equal(validate.code, 2, validate.stdout);
        const error = JSON.parse(validate.stdout).error;
        assert.equal(error.code, 'SLUICE_SPEC');
        assert.equal(error.line, 17, 'the line of job people');
        assert.match(error.message, /jobs\.people\.table: .*'people'.*people table.*job 'homes'/);
        const refused = await run([p]);
        assert.equal(refused.code, 2, refused.stderr);
        assert.deepEqual(downloadsByType(harness), {}, 'nothing bought');
        assert.deepEqual(await tablesOf(t), [], 'nothing made');
        // Given a table of its own, both load: the people table keeps its people and every link
        // its person.
        const fixed = file(
          t,
          `people-${write}`,
          `${homes()}${peopleJob('people', write, 'people_records')}`,
        );
        const ran = await run([fixed]);
        assert.equal(ran.code, 0, ran.stderr);
        assert.ok((await count(t, 'select count(*) as n from people')) > 0);
        assert.ok((await count(t, 'select count(*) as n from homes__owners')) > 0);
        assert.equal(await count(t, DANGLING), 0);
        assert.equal(await count(t, 'select count(*) as n from people_records'), 50);
        assert.deepEqual(downloadsByType(harness), { properties: 1, people: 1 });
      });
    }

    test('the two jobs in two files run together: refused before either file buys anything', async () => {
      const t = await target('two-files');
      const a = file(t, 'two-files-a', homes());
      const b = file(t, 'two-files-b', peopleJob('people', 'replace'));
      const refused = await run([a, b]);
      assert.equal(refused.code, 2, refused.stdout);
      assert.match(
        refused.stderr,
        /two-files-b\.yaml:\d+: jobs\.people\.table: .*two-files-a\.yaml:\d+/,
      );
      assert.deepEqual(downloadsByType(harness), {}, 'nothing bought');
      assert.deepEqual(await tablesOf(t), [], 'nothing made');
    });

    test('a job homes__prices beside a job homes: refused, its table would be one of homes child tables', async () => {
      const t = await target('child');
      const p = file(
        t,
        'child',
        `  homes:\n    type: properties\n    query: 'province:TX'\n    records: 50\n    ${POLL}\n  homes__prices:\n    type: properties\n    query: 'province:CA'\n    records: 50\n    write: replace\n    ${POLL}\n`,
      );
      const refused = await run([p]);
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /jobs\.homes__prices\.table: .*inside.*job 'homes'/);
      assert.deepEqual(downloadsByType(harness), {});
    });

    test('pipelines sharing the database on different days: another pipeline cannot take the people table, a child table or a job table (exit 2 before buying); the people stay', async () => {
      const t = await target('days');
      const a = file(t, 'days-a', homes());
      assert.equal((await run([a])).code, 0);
      const people = await count(t, 'select count(*) as n from people');
      const links = await count(t, 'select count(*) as n from homes__owners');
      const credits = creditsUsed(harness);
      for (const [name, jobs, owner] of [
        [
          'days-people',
          peopleJob('people', 'replace'),
          /the people table .*job 'homes' of pipeline 'days-a'/,
        ],
        [
          'days-child',
          peopleJob('shops', 'replace', 'homes__owners'),
          /inside the tables of job 'homes' of pipeline 'days-a'/,
        ],
        [
          'days-homes',
          `  homes:\n    type: properties\n    query: 'province:CA'\n    records: 50\n    write: replace\n    ${POLL}\n`,
          /the table of job 'homes' of pipeline 'days-a'/,
        ],
      ] as const) {
        const b = file(t, name, jobs);
        const refused = await run([b]);
        assert.equal(refused.code, 2, `${name}: ${refused.stdout}`);
        assert.equal(refused.json.error.code, 'SLUICE_TABLE_OWNED', name);
        assert.equal(refused.json.error.stage, 'tables');
        assert.match(refused.json.error.message, owner);
        assert.match(refused.json.error.message, /another table|DELETE FROM _sluice_tables/);
        assert.deepEqual(creditsUsed(harness), credits, `${name}: nothing bought`);
      }
      assert.equal(await count(t, 'select count(*) as n from people'), people);
      assert.equal(await count(t, 'select count(*) as n from homes__owners'), links);
      assert.equal(await count(t, DANGLING), 0);
      assert.ok((await t.columns('people')).some((c) => c.name === 'people_key'));
    });

    test('sharing that is meant keeps working: autotrace and owner lookups of two pipelines share one people table, reruns and replaces go on', async () => {
      const t = await target('meant');
      const a = file(
        t,
        'meant-a',
        `${homes()}  owners:\n    type: people\n    people_keys_from: homes\n    ${POLL}\n`,
      );
      const b = file(
        t,
        'meant-b',
        `  houses:\n    type: properties\n    query: 'province:CA'\n    records: 80\n    write: replace\n    auto_trace: true\n    ${POLL}\n`,
      );
      for (const round of [1, 2]) {
        const ran = await run([a, b]);
        assert.equal(ran.code, 0, `round ${round}: ${ran.stdout}`);
      }
      assert.equal(await count(t, DANGLING), 0);
      assert.equal(
        await count(
          t,
          'select count(*) as n from houses__owners l where not exists (select 1 from people p where p.people_key = l.people_key)',
        ),
        0,
      );
      assert.equal(await count(t, 'select count(*) as n from houses'), 80);
      const owners = await t.all<{ table_name: string; pipeline: string; job: string }>(
        'select table_name, pipeline, job from _sluice_tables order by table_name, pipeline, job',
      );
      assert.deepEqual(
        owners.map((o) => `${o.table_name} ${o.pipeline} ${o.job}`),
        [
          'homes meant-a homes',
          'houses meant-b houses',
          'people meant-a homes',
          'people meant-a owners',
          'people meant-b houses',
        ],
      );
    });
  });
}
