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

/**
 * Schemas users can pin, on every destination: column hints (`columns:`), schema contracts
 * (`schema:`) and the naming convention (`naming:`).
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.2, fileRecords: 150 });
  dir = tempDir();
});
after(() => harness.close());
beforeEach(() => harness.reset());

const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';

/** How each destination names the types sluice declares (as `TestTarget.columns` reports). */
/** The types `fields PIPELINE` shows: as each destination declares them. */
const DECLARED: Record<string, { json: string; integer: string }> = {
  sqlite: { json: 'JSON', integer: 'INTEGER' },
  postgres: { json: 'jsonb', integer: 'bigint' },
  duckdb: { json: 'JSON', integer: 'BIGINT' },
};

async function run(file: string, extra: string[] = []) {
  const result = await runCli(
    ['run', file, '--json', '--no-progress', ...extra],
    emulatorEnv(harness),
    undefined,
    harness.clock(),
  );
  return { ...result, summary: result.stdout ? JSON.parse(result.stdout) : undefined };
}

function downloads() {
  return harness.emulator.context.state.downloads;
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  const pipeline = (t: TestTarget, name: string, body: string) =>
    writePipeline(dir, `${kind}-${name}`, `${pipelineHead(name, t.destinationYaml)}${body}`);

  const typeOf = async (t: TestTarget, table: string, column: string) =>
    (await t.columns(table)).find((c) => c.name === column)?.type;

  describe(`pinned schemas on ${kind}`, { skip: reason }, () => {
    for (const format of ['csv', 'json'] as const) {
      test(`columns: pins types in ${format}; a value that does not fit is a reject with its reason`, async () => {
        const t = await target(`hints-${format}`);
        const file = pipeline(
          t,
          `hints-${format}`,
          `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 300
    format: ${format}
    nested: json
    max_rejects: 300
    columns: { latitude: double, longitude: double, yearBuilt: text, numBathroom: integer }
    ${POLL}
`,
        );
        const result = await run(file);
        assert.equal(result.code, 0, result.stderr);
        const job = result.summary.jobs[0];
        assert.equal(job.loaded + job.rejected, 300);
        const types = t.declared;
        assert.equal(await typeOf(t, 'homes', 'latitude'), types.real);
        assert.equal(await typeOf(t, 'homes', 'longitude'), types.real);
        assert.equal(await typeOf(t, 'homes', 'yearBuilt'), types.text);
        assert.equal(await typeOf(t, 'homes', 'numBathroom'), t.integerType);
        // Half baths (1.5) are no integers: kept aside with the reason, the rest loaded.
        assert.ok(job.rejected > 0 && job.loaded > 0, JSON.stringify(job));
        const rejects = await t.all<{ reason: string }>('select reason from _sluice_rejects');
        assert.equal(rejects.length, job.rejected);
        for (const r of rejects) {
          assert.match(r.reason, /^numBathroom: '\d+\.5' is not an integer \(its type is pinned/);
        }
        // The service's text latitudes are numbers now: compared as numbers.
        const north = await t.one<{ n: number }>(
          'select count(*) as n from homes where latitude > 25.5',
        );
        assert.ok(Number(north.n) > 0);
      });
    }

    test('a pinned object stays one JSON column under nested: tables', async () => {
      const t = await target('hint-json');
      const file = pipeline(
        t,
        'hint-json',
        `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 100
    format: csv
    columns: { prices: json }
    ${POLL}
`,
      );
      const fields = await runCli(['fields', file, '--json'], emulatorEnv(harness));
      assert.equal(fields.code, 0, fields.stderr);
      const [main] = JSON.parse(fields.stdout).jobs[0].tables;
      assert.equal(main.name, 'homes');
      assert.deepEqual(
        main.columns.find((c: { field: string }) => c.field === 'prices'),
        {
          name: 'prices',
          field: 'prices',
          type: 'json',
          pinned: true,
          declared: DECLARED[kind]!.json,
        },
      );
      // In text, each type as the destination declares it, not SQLite's names everywhere.
      const text = await runCli(['fields', file], emulatorEnv(harness));
      assert.match(text.stdout, new RegExp(`^yearBuilt +${DECLARED[kind]!.integer}$`, 'm'));
      assert.match(text.stdout, new RegExp(`^prices +${DECLARED[kind]!.json} \\(pinned\\)$`, 'm'));
      const result = await run(file);
      assert.equal(result.code, 0, result.stderr);
      assert.ok(!result.summary.jobs[0].tables.includes('homes__prices'));
      assert.ok(result.summary.jobs[0].tables.includes('homes__features'));
      const type = await typeOf(t, 'homes', 'prices');
      assert.ok(type !== undefined && /json/.test(type), `prices is ${type}`);
    });

    test('schema: new_columns: freeze fails the job before anything is bought, naming the fields', async () => {
      const t = await target('freeze');
      const job = (fields: string, contract: string) => `views:
  v:
    fields: [${fields}]
jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 50
    view: v
    nested: json
${contract}    ${POLL}
`;
      assert.equal((await run(pipeline(t, 'freeze', job('id, address, city', '')))).code, 0);
      const bought = downloads().length;
      const frozenFile = pipeline(
        t,
        'freeze',
        job('id, address, city, yearBuilt', '    schema: { new_columns: freeze }\n'),
      );
      // plan tells first, for free.
      const plan = await runCli(['plan', frozenFile, '--json'], emulatorEnv(harness));
      assert.equal(plan.code, 2, plan.stderr);
      assert.deepEqual(JSON.parse(plan.stdout).jobs[0].schema_breaches, [
        { table: 'homes', added: ['yearBuilt'], widened: [] },
      ]);
      const frozen = await run(frozenFile);
      assert.equal(frozen.code, 2, frozen.stderr);
      const failed = frozen.summary.jobs[0];
      assert.equal(failed.error.code, 'SLUICE_SCHEMA_CONTRACT');
      assert.match(failed.error.message, /homes has no column for yearBuilt/);
      assert.equal(downloads().length, bought, 'nothing was bought');
      assert.equal(await typeOf(t, 'homes', 'yearBuilt'), undefined);

      // discard: the run loads, without the new field's values, and says so.
      const discard = await run(
        pipeline(
          t,
          'freeze',
          job('id, address, city, yearBuilt', '    schema: { new_columns: discard }\n'),
        ),
      );
      assert.equal(discard.code, 0, discard.stderr);
      assert.match(discard.stderr, /left out the values of yearBuilt/);
      assert.equal(await typeOf(t, 'homes', 'yearBuilt'), undefined);
      assert.equal(discard.summary.jobs[0].loaded, 50);
    });

    test('schema: type_changes: freeze fails a job whose data would widen a column', async () => {
      const t = await target('types');
      const job = (hint: string, contract: string) => `schema: { ${contract} }
jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 40
    nested: json
    columns: { yearBuilt: ${hint} }
    ${POLL}
`;
      assert.equal(
        (await run(pipeline(t, 'types', job('integer', 'new_columns: evolve')))).code,
        0,
      );
      const frozen = await run(pipeline(t, 'types', job('text', 'type_changes: freeze')));
      assert.equal(frozen.code, 2, frozen.stderr);
      assert.match(frozen.summary.jobs[0].error.message, /yearBuilt \(integer -> text\)/);
      assert.equal(await typeOf(t, 'homes', 'yearBuilt'), t.integerType);
    });

    test('a replace under type_changes: freeze keeps a live column wider than its data', async () => {
      const t = await target('replace-freeze');
      const job = (extra: string) => `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 40
    nested: json
    write: replace
${extra}    ${POLL}
`;
      const pinned = await run(
        pipeline(t, 'replace-freeze', job('    columns: { yearBuilt: text }\n')),
      );
      assert.equal(pinned.code, 0, pinned.stderr);
      // The data's years are integers now: the new table takes the live text column, not integer.
      const frozen = await run(
        pipeline(t, 'replace-freeze', job('    schema: { type_changes: freeze }\n')),
      );
      assert.equal(frozen.code, 0, frozen.stderr);
      assert.equal(await typeOf(t, 'homes', 'yearBuilt'), t.declared.text);
      assert.equal(frozen.summary.jobs[0].loaded, 40);
    });

    test('naming: snake_case: validate, plan and the contract name the table as it is named', async () => {
      const t = await target('snake-named');
      const job = (fields: string, contract: string) => `naming: snake_case
views:
  v:
    fields: [${fields}]
jobs:
  austinHomes:
    type: properties
    query: 'province:TX'
    records: 30
    view: v
    nested: json
${contract}    ${POLL}
`;
      const file = pipeline(t, 'snake-named', job('id, address, city', ''));
      const validate = await runCli(['validate', file], emulatorEnv(harness));
      assert.equal(validate.code, 0, validate.stderr);
      assert.match(validate.stdout, /^austinHomes\s+properties\s+30\s+json\s+austin_homes\s/m);
      assert.equal((await run(file)).code, 0);
      const frozenFile = pipeline(
        t,
        'snake-named',
        job('id, address, city, yearBuilt', '    schema: { new_columns: freeze }\n'),
      );
      const plan = await runCli(['plan', frozenFile, '--json'], emulatorEnv(harness));
      assert.deepEqual(JSON.parse(plan.stdout).jobs[0].schema_breaches, [
        { table: 'austin_homes', added: ['yearBuilt'], widened: [] },
      ]);
      const frozen = await run(frozenFile);
      assert.equal(frozen.code, 2, frozen.stderr);
      assert.match(
        frozen.summary.jobs[0].error.message,
        /austin_homes has no column for yearBuilt/,
      );
      // The job keeps its name; the table is named as it is.
      const message: string = frozen.summary.jobs[0].error.message;
      assert.ok(!message.replaceAll("job 'austinHomes'", '').includes('austinHomes'), message);
    });

    test('naming: snake_case: an owner lookup finds its properties column', async () => {
      const t = await target('snake-owners');
      const file = pipeline(
        t,
        'snake-owners',
        `naming: snake_case
jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 60
    nested: json
    ${POLL}
  owners:
    type: people
    people_keys_from: homes
    ${POLL}
`,
      );
      const result = await run(file);
      assert.equal(result.code, 0, result.stderr);
      const owners = result.summary.jobs[1];
      assert.ok(owners.loaded > 0, JSON.stringify(owners));
      const columns = (await t.columns('homes__owners')).map((c) => c.name);
      assert.deepEqual(columns.slice(0, 2), ['property_id', 'people_key']);
    });

    test('naming: snake_case names tables, child tables and columns alike every run', async () => {
      const t = await target('snake');
      const file = pipeline(
        t,
        'snake',
        `naming: snake_case
jobs:
  texasHomes:
    type: properties
    query: 'province:TX'
    records: 120
    format: csv
    auto_trace: true
    ${POLL}
`,
      );
      const first = await run(file);
      assert.equal(first.code, 0, first.stderr);
      const tables = first.summary.jobs[0].tables as string[];
      assert.ok(tables.includes('texas_homes'), tables.join());
      assert.ok(tables.includes('texas_homes__prices'), tables.join());
      assert.ok(tables.includes('texas_homes__owners'), tables.join());
      const columns = (await t.columns('texas_homes')).map((c) => c.name);
      for (const name of ['year_built', 'date_updated', 'postal_code', '_sluice_download_id']) {
        assert.ok(columns.includes(name), `${name} in ${columns.join()}`);
      }
      assert.ok(!columns.some((c) => /[A-Z]/.test(c)), columns.join());
      const prices = (await t.columns('texas_homes__prices')).map((c) => c.name);
      assert.ok(prices.includes('_parent_id') && prices.includes('amount_max'), prices.join());
      const rows = Number((await t.one<{ n: number }>('select count(*) as n from texas_homes')).n);
      // Merged again by its key, in the same columns.
      const second = await run(file);
      assert.equal(second.code, 0, second.stderr);
      assert.deepEqual(
        (await t.columns('texas_homes')).map((c) => c.name),
        columns,
      );
      assert.equal(
        Number((await t.one<{ n: number }>('select count(*) as n from texas_homes')).n),
        rows,
      );
    });
  });
}
