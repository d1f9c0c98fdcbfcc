import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createServiceClient } from '../../src/client/index.js';
import { openTarget } from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * Views a job names without declaring them: the service's pre-made ones (`validate` knows them
 * offline, from the catalogue) and views the service holds (made in its portal, say), which
 * `plan` finds at GET /views. On SQLite: which destination loads them does not matter here.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.05, fileRecords: 100 });
  dir = tempDir();
});
after(() => harness.close());
beforeEach(() => harness.reset());

async function homes(name: string, view: string) {
  const target = await openTarget('sqlite', dir, name);
  const file = writePipeline(
    dir,
    name,
    `${pipelineHead(name, target.destinationYaml)}jobs:
  homes:
    type: properties
    query: '*'
    records: 250
    format: csv
    view: ${view}
    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
`,
  );
  return { target, file };
}

describe('views a job names without declaring them', () => {
  test('view: property_flat_prices validates offline and loads, the download asking for it', async () => {
    const { target, file } = await homes('flat-prices', 'property_flat_prices');
    // validate needs no service and no credentials.
    const valid = await runCli(['validate', file], { PATH: process.env.PATH });
    assert.equal(valid.code, 0, valid.stderr);
    assert.match(valid.stdout, /valid pipeline 'flat-prices' \(1 job, 0 views\)/);

    const run = await runCli(
      ['run', file, '--json', '--no-progress'],
      emulatorEnv(harness),
      undefined,
      harness.clock(),
    );
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout);
    assert.equal(summary.jobs[0].status, 'loaded');
    assert.equal(summary.jobs[0].loaded, 250);
    const [download] = harness.emulator.context.state.downloads;
    assert.equal(download?.view, 'property_flat_prices');
    const { n, priced } = await target.one<{ n: number; priced: number }>(
      'select count(*) as n, count(distinct "id") as priced from homes where address is not null',
    );
    assert.equal(n, 250);
    assert.equal(priced, 250);
    // The view leaves out what it does not select, and keeps the prices.
    assert.equal(
      (
        await target.one<{ n: number }>(
          'select count(*) as n from homes where "yearBuilt" is not null',
        )
      ).n,
      0,
    );
    const rows = async (table: string) =>
      (await target.one<{ n: number }>(`select count(*) as n from ${table}`)).n;
    assert.ok((await rows('homes__prices')) > 0, 'prices in their child table');
    assert.equal(await rows('homes__brokers'), 0, 'brokers are not in the view');
  });

  test('a view neither declared nor pre-made: validate refuses it; plan asks the service', async () => {
    const { file } = await homes('portal', 'portal_homes');
    const offline = await runCli(['validate', file], { PATH: process.env.PATH });
    assert.equal(offline.code, 2, offline.stdout);
    assert.match(
      offline.stderr,
      /jobs\.homes\.view: view 'portal_homes' is not declared under views: nor a pre-made view of properties/,
    );

    const missing = await runCli(['plan', file], emulatorEnv(harness));
    assert.equal(missing.code, 2, missing.stdout);
    assert.match(
      missing.stderr,
      /jobs\.homes\.view: view 'portal_homes' is not declared under views:, not a pre-made view, and not one the service lists \(it lists none\)/,
    );

    // Made on the service (as in its portal), the name is one plan and run can use.
    const { email, password } = harness.credentials;
    const client = createServiceClient({ url: harness.v4Url, email, password });
    try {
      await client.createView({ name: 'portal_homes', fields: ['id', 'address', 'city'] });
    } finally {
      await client.close();
    }
    const plan = await runCli(['plan', file, '--json'], emulatorEnv(harness));
    assert.equal(plan.code, 0, plan.stderr);
    const doc = JSON.parse(plan.stdout);
    assert.deepEqual(doc.views, { create: [], update: [], unchanged: [] });
    assert.equal(doc.jobs[0].records, 250);
  });
});
