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
 * "Only records with people data" goes on the wire as `only_traceable`, the name the service's
 * autotrace guide gives it, and no other name: the emulator answers as the service does and
 * ignores `require_people_data`, the name sluice sent before, which would have bought records
 * without people data. The old pipeline key and CLI flag still work, with a warning.
 */

const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.05, fileRecords: 200 });
  dir = tempDir('sluice-traceable-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

async function count(...flags: string[]): Promise<number> {
  const r = await runCli(['count', 'properties', 'province:TX', ...flags], emulatorEnv(harness));
  assert.equal(r.code, 0, r.stderr);
  return Number(r.stdout.trim());
}

/** The bodies of the property searches the emulator received since `from`. */
async function searches(from = 0): Promise<Record<string, unknown>[]> {
  return (await harness.requests())
    .slice(from)
    .filter((r) => r.path === '/v4/properties/search')
    .map((r) => r.sent!);
}

describe('only_traceable on the command line', () => {
  test('--only-traceable sends only_traceable: true; --require-people-data still works, with a warning', async () => {
    const all = await count();
    const traceable = await count('--only-traceable');
    assert.ok(traceable > 0 && traceable < all, `${traceable} of ${all}`);
    const from = (await harness.requests()).length;
    const old = await runCli(
      ['count', 'properties', 'province:TX', '--require-people-data'],
      emulatorEnv(harness),
    );
    assert.equal(old.code, 0, old.stderr);
    assert.equal(Number(old.stdout.trim()), traceable);
    assert.match(old.stderr, /--require-people-data is deprecated.*use --only-traceable/);
    const [body] = await searches(from);
    assert.equal(body!.only_traceable, true);
    assert.equal('require_people_data' in body!, false);
  });
});

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  const pipeline = (t: TestTarget, name: string, flag: string) =>
    writePipeline(
      dir,
      `${kind}-${name}`,
      `${pipelineHead(name, t.destinationYaml)}jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: all
    format: json
    ${flag}
    ${POLL}
`,
    );

  describe(`only_traceable in a pipeline, on ${kind}`, { skip: reason }, () => {
    for (const key of ['only_traceable', 'require_people_data']) {
      test(`${key}: true buys only records with people data, sent as only_traceable`, async () => {
        const t = await target(`traceable-${key}`);
        const traceable = await count('--only-traceable');
        const file = pipeline(t, `traceable-${key}`, `${key}: true`);
        const from = (await harness.requests()).length;
        const run = await runCli(
          ['run', file, '--json', '--no-progress'],
          emulatorEnv(harness),
          undefined,
          harness.clock(),
        );
        assert.equal(run.code, 0, run.stdout + run.stderr);
        const summary = JSON.parse(run.stdout);
        assert.equal(summary.jobs[0].loaded, traceable);
        assert.deepEqual(summary.credits, { property: traceable });
        const sent = await searches(from);
        assert.ok(sent.length >= 2, 'the count and the start');
        for (const body of sent) {
          assert.equal(body.only_traceable, true, JSON.stringify(body));
          assert.equal('require_people_data' in body, false, JSON.stringify(body));
        }
        const people = await t.one<{ n: number }>(
          'select count(distinct "_parent_id") as n from homes__people',
        );
        assert.equal(Number(people.n), traceable, 'every record has people data');
        const warning = new RegExp(
          `${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:15: jobs\\.homes\\.require_people_data: require_people_data is deprecated`,
        );
        if (key === 'require_people_data') assert.match(run.stderr, warning);
        else assert.doesNotMatch(run.stderr, /deprecated/);
      });
    }
  });
}
