import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import { STATE_VERSION } from '../../src/load/state-tables.js';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';
import { downloadsByType } from '../helpers/runs.js';

/**
 * Who owns each table (`_sluice_tables`): what keeps working as it did. Tables of a database made
 * before owners were recorded, a job renamed, files run together into databases of their own.
 * (What is refused is in test/reliability/shared-tables.test.ts.)
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.2, fileRecords: 100, churn: 0 });
  dir = tempDir('sluice-owners-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

const POLL = 'poll: { interval: 50ms, max_interval: 100ms, timeout: 30s }';

const homes = (name = 'homes', extra = '') =>
  `  ${name}:\n    type: properties\n    query: 'province:TX'\n    records: 60\n    auto_trace: true\n${extra}    ${POLL}\n`;
const people = `  people:\n    type: people\n    query: 'province:TX'\n    records: 20\n    write: replace\n    ${POLL}\n`;

async function run(files: string[]) {
  const result = await runCli(['run', ...files, '--json', '--no-progress'], emulatorEnv(harness));
  return { ...result, json: result.stdout ? JSON.parse(result.stdout) : undefined };
}

async function owners(t: TestTarget): Promise<string[]> {
  const rows = await t.all<{ table_name: string; role: string; pipeline: string; job: string }>(
    'select table_name, role, pipeline, job from _sluice_tables order by table_name, pipeline, job',
  );
  return rows.map((r) => `${r.table_name} ${r.role} ${r.pipeline}.${r.job}`);
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  const file = (t: TestTarget, name: string, jobs: string) =>
    writePipeline(dir, `${kind}-${name}`, `${pipelineHead(name, t.destinationYaml)}jobs:\n${jobs}`);

  describe(`owners of tables on ${kind}`, { skip: reason }, () => {
    test('tables of a database made before owners were recorded are claimed by the next run that writes them, quietly', async () => {
      const t = await target('adopted');
      const a = file(t, 'adopted', homes());
      assert.equal((await run([a])).code, 0);
      // As a sluice before state version 4 left it: the tables, and no owners.
      await t.exec('drop table _sluice_tables', "update _sluice_meta set value = '3'");
      const persons = await t.one<{ n: number }>('select count(*) as n from people');
      const again = await run([a]);
      assert.equal(again.code, 0, again.stdout);
      assert.equal(again.json.status, 'succeeded');
      assert.deepEqual(await owners(t), [
        'homes table adopted.homes',
        'people people adopted.homes',
      ]);
      const state = await t.one<{ value: string }>(
        "select value from _sluice_meta where key = 'state_version'",
      );
      assert.equal(state.value, String(STATE_VERSION));
      assert.ok(
        Number((await t.one<{ n: number }>('select count(*) as n from people')).n) >=
          Number(persons.n),
      );
      // From now on another pipeline is refused the people table.
      const b = file(t, 'adopted-b', people);
      const refused = await run([b]);
      assert.equal(refused.code, 2);
      assert.equal(refused.json.error.code, 'SLUICE_TABLE_OWNED');
    });

    test('a job renamed in its pipeline keeps its table, and the people table its owners', async () => {
      const t = await target('renamed');
      assert.equal((await run([file(t, 'renamed', homes())])).code, 0);
      const renamed = await run([file(t, 'renamed', homes('houses', '    table: homes\n'))]);
      assert.equal(renamed.code, 0, renamed.stdout);
      assert.deepEqual(await owners(t), [
        'homes table renamed.houses',
        'people people renamed.homes',
        'people people renamed.houses',
      ]);
      assert.deepEqual(downloadsByType(harness), { properties: 2 });
    });

    test('files run together into databases of their own take the same table names', async () => {
      const one = await target('apart-1');
      const two = await target('apart-2');
      const a = file(one, 'apart-a', homes());
      const b = file(two, 'apart-b', `${homes()}${people.replace('people:', 'persons:')}`);
      const ran = await run([a, b]);
      assert.equal(ran.code, 0, ran.stdout);
      assert.deepEqual(
        ran.json.runs.map((r: { status: string }) => r.status),
        ['succeeded', 'succeeded'],
      );
      assert.deepEqual(await owners(one), [
        'homes table apart-a.homes',
        'people people apart-a.homes',
      ]);
      assert.deepEqual(await owners(two), [
        'homes table apart-b.homes',
        'people people apart-b.homes',
        'persons table apart-b.persons',
      ]);
    });
  });
}
