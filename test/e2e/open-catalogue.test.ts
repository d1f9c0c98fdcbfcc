import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import { destinationKinds, skipReason, targetFactory } from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * An open catalogue, through the built CLI against an emulator that serves the fields: the
 * vendor's documented fields sluice once refused (its autotrace query, a view of ten of them)
 * validate, count, preview and run with no word; fields no catalogue lists (the service adds
 * fields) are warnings that name the nearest known field, go to the service as written, and
 * load typed as their data is; `--strict-fields` and `strict_fields: true` refuse them (exit 2).
 */

const AUTOTRACE =
  'transactions.buyerFirstName:* AND transactions.buyerLastName:* AND transactions.ownerType:individual';

/** Ten fields the property schema page documents, which sluice refused before any request. */
const DOCUMENTED = [
  'buildingName',
  'taxID',
  'mlsNumber',
  'absenteeOwner',
  'architecturalStyles',
  'brandTenant',
  'deposits',
  'availableDates',
  'brokers.licenseType',
  'transactions.ownerType',
];

/** Fields the catalogue does not list: a service that added them serves them. */
const NEW = ['solarPanels', 'roofArea'];

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({
    scale: 0.05,
    fileRecords: 100,
    extraFields: [
      'properties.buildingName',
      'properties.taxID',
      'properties.mlsNumber',
      'properties.absenteeOwner.absent',
      'properties.architecturalStyles',
      'properties.brandTenant',
      'properties.deposits.amount',
      'properties.availableDates.startDate',
      'properties.brokers.licenseType',
      'properties.transactions.ownerType=individual|company',
      'properties.solarPanels:boolean',
      'properties.roofArea:number',
    ],
  });
  dir = tempDir();
});
after(() => harness.close());
beforeEach(() => harness.reset());

const cli = (...argv: string[]) => runCli(argv, emulatorEnv(harness));
const WARNING = /WARN/;

describe('an open catalogue: count, preview and views', () => {
  test("the vendor's autotrace query counts and previews, with no warning", async () => {
    const count = await cli('count', 'properties', AUTOTRACE);
    assert.equal(count.code, 0, count.stderr);
    assert.ok(Number(count.stdout) > 0, count.stdout);
    assert.doesNotMatch(count.stderr, WARNING);
    const preview = await cli(
      'preview',
      'properties',
      AUTOTRACE,
      '--records',
      '2',
      '--columns',
      'id,buildingName,transactions.ownerType',
      '--strict-fields',
    );
    assert.equal(preview.code, 0, preview.stderr);
    assert.match(preview.stdout, /buildingName \d+/);
    assert.match(preview.stdout, /individual/);
  });

  test('a field the catalogue lacks is a warning with the nearest name; --strict-fields refuses it', async () => {
    const count = await cli('count', 'properties', 'solarPanels:true', '--json');
    assert.equal(count.code, 0, count.stderr);
    // stdout holds the document alone; the warning is on stderr.
    const doc = JSON.parse(count.stdout);
    assert.ok(doc.num_found > 0);
    assert.match(count.stderr, /WARN.*field 'solarPanels' is not in sluice's catalogue/);

    const typo = await cli('count', 'properties', 'cty:Austin');
    assert.match(
      typo.stderr,
      /field 'cty' is not in sluice's catalogue of properties \(did you mean 'city'\?\)/,
    );
    // Sent as written: the service, which has no such field, refuses it.
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /400.*field 'cty' does not exist in the property schema/);

    const before = (await harness.requests()).length;
    const strict = await cli(
      'count',
      'properties',
      'solarPanels:true',
      '--strict-fields',
      '--json',
    );
    assert.equal(strict.code, 2);
    assert.equal(JSON.parse(strict.stdout).error.code, 'SLUICE_QUERY_FIELD');
    assert.equal((await harness.requests()).length, before, 'refused before any request');

    const preview = await cli(
      'preview',
      'properties',
      'solarPanels:true',
      '--records',
      '1',
      '--columns',
      'id,solarPanels,roofArea',
    );
    assert.equal(preview.code, 0, preview.stderr);
    assert.match(preview.stdout, /\btrue\b/);
    assert.match(preview.stderr, /--columns: fields 'solarPanels', 'roofArea'/);
  });

  test('views create and update: warnings on stderr, the document on stdout; strict refuses', async () => {
    const fields = ['id', ...DOCUMENTED, ...NEW].join(',');
    const made = await cli('views', 'create', 'open', '--fields', fields, '--json');
    assert.equal(made.code, 0, made.stderr);
    assert.deepEqual(JSON.parse(made.stdout).fields, ['id', ...DOCUMENTED, ...NEW]);
    assert.match(made.stderr, /fields 'solarPanels', 'roofArea' are not in sluice's catalogue/);
    assert.doesNotMatch(made.stderr, /buildingName|ownerType/);

    const updated = await cli('views', 'update', 'open', '--fields', 'id,solarPanels', '--json');
    assert.equal(updated.code, 0, updated.stderr);
    assert.match(updated.stderr, /field 'solarPanels'/);

    const strict = await cli(
      'views',
      'create',
      'strict',
      '--fields',
      'id,solarPanels',
      '--strict-fields',
    );
    assert.equal(strict.code, 2);
    assert.match(strict.stderr, /unknown field in view: solarPanels/);
  });
});

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`an open catalogue: validate, plan and run on ${kind}`, { skip: reason }, () => {
    test('documented and new fields are queried, viewed and loaded end to end', async () => {
      const t = await target('open');
      const file = writePipeline(
        dir,
        `${kind}-open`,
        `${pipelineHead('open', t.destinationYaml)}views:
  documented:
    fields: [id, ${[...DOCUMENTED, ...NEW].join(', ')}]
jobs:
  traced:
    type: properties
    query: '${AUTOTRACE} AND solarPanels:true'
    records: 40
    view: documented
    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
`,
      );
      const validate = await runCli(['validate', file], { PATH: process.env.PATH });
      assert.equal(validate.code, 0, validate.stderr);
      assert.match(
        validate.stderr,
        /views\.documented\.fields: fields 'solarPanels', 'roofArea' are not in sluice's catalogue of properties/,
      );
      assert.match(validate.stderr, /jobs\.traced\.query: field 'solarPanels'/);
      assert.doesNotMatch(validate.stderr, /buildingName|ownerType|taxID/);

      const strict = await runCli(['validate', file, '--strict-fields'], {
        PATH: process.env.PATH,
      });
      assert.equal(strict.code, 2);
      assert.match(strict.stderr, /field 'solarPanels' of view 'documented' is not a field/);

      const plan = await runCli(['plan', file, '--json'], emulatorEnv(harness));
      assert.equal(plan.code, 0, plan.stderr);
      assert.equal(JSON.parse(plan.stdout).jobs[0].verdict, 'pass');

      const strictRun = await runCli(
        ['run', file, '--strict-fields', '--no-progress'],
        emulatorEnv(harness),
      );
      assert.equal(strictRun.code, 2);
      assert.equal(harness.emulator.context.state.downloads.length, 0, 'nothing bought');

      const run = await runCli(
        ['run', file, '--json', '--no-progress'],
        emulatorEnv(harness),
        undefined,
        harness.clock(),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /WARN.*jobs\.traced\.query: field 'solarPanels'/);
      const job = JSON.parse(run.stdout).jobs[0];
      assert.equal(job.status, 'loaded');
      assert.equal(job.loaded, 40);

      // The query and the view went to the service as written.
      const [download] = harness.emulator.context.state.downloads;
      assert.equal(download?.query, `${AUTOTRACE} AND solarPanels:true`);
      assert.deepEqual(download?.viewFields, ['id', ...DOCUMENTED, ...NEW]);

      const columns = new Map((await t.columns('traced')).map((c) => [c.name, c.type]));
      for (const field of ['buildingName', 'taxID', 'mlsNumber', 'brandTenant']) {
        assert.ok(columns.has(field), field);
      }
      assert.equal(columns.get('buildingName'), columns.get('id'), 'text, as the catalogue says');
      // Typed as the data is: true/false and numbers.
      const all = await t.one<{ n: number; sunny: number; roofed: number }>(
        `select count(*) as n,
           sum(case when "solarPanels" then 1 else 0 end) as sunny,
           sum(case when "roofArea" >= 0 then 1 else 0 end) as roofed
         from traced`,
      );
      assert.deepEqual(all, { n: 40, sunny: 40, roofed: 40 });
      const deposits = await t.one<{ n: number }>(
        'select count(*) as n from traced__deposits where amount >= 0',
      );
      assert.equal(deposits.n, 40);
      const owners = await t.one<{ n: number }>(
        `select count(distinct "_parent_id") as n from traced__transactions where "ownerType" = 'individual'`,
      );
      assert.equal(owners.n, 40, 'every record matched the query on the served ownerType');
      const licensed = await t.one<{ n: number }>(
        `select count(*) as n from traced__brokers where "licenseType" is not null`,
      );
      assert.ok(licensed.n > 0);
    });
  });
}
