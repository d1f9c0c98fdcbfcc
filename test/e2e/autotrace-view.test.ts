import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * Autotrace's view rule (the interface: "with auto_trace true, leave blank or include
 * people.people_keys:* in the view") is checked before anything is asked of the service: by
 * `validate` for declared and pre-made views, by `plan` also for a view the service lists.
 * Before, `validate` said valid and `run` failed on the service's 400.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.05 });
  dir = tempDir('sluice-autotrace-view-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

/** An autotrace job with `view`, and the views the file declares. */
function file(name: string, view: string, views = ''): string {
  return writePipeline(
    dir,
    name,
    `${pipelineHead(name, `sqlite:${name}.sqlite`)}${views}jobs:
  owners:
    type: properties
    query: 'province:TX'
    records: 20
    auto_trace: true
    view: ${view}
`,
  );
}

const line = (text: string) => new RegExp(`${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`);

describe('autotrace and its view', () => {
  test('validate and plan refuse a declared view without the people keys, naming file and line', async () => {
    const path = file('declared', 'slim', 'views:\n  slim:\n    fields: [id, address, people]\n');
    const bare = file('bare', 'slim', 'views:\n  slim:\n    fields: [id, address]\n');
    assert.equal((await runCli(['validate', path], emulatorEnv(harness))).code, 0, 'people: ok');
    for (const command of ['validate', 'plan']) {
      const r = await runCli([command, bare], emulatorEnv(harness));
      assert.equal(r.code, 2, `${command}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, line(`${bare}:18`));
      assert.match(r.stderr, /jobs\.owners\.view/);
      assert.match(r.stderr, /view 'slim' has no people keys \(people\.people_keys:\*\)/);
      assert.match(r.stderr, /add people\.people_keys:\* to view 'slim', or leave view: out/);
    }
    const keys = file(
      'keys',
      'slim',
      'views:\n  slim:\n    fields: [id, "people.people_keys:*"]\n',
    );
    assert.equal((await runCli(['validate', keys], emulatorEnv(harness))).code, 0);
    const plan = await runCli(['plan', keys], emulatorEnv(harness));
    assert.equal(plan.code, 0, plan.stderr);
    const run = await runCli(
      ['run', keys, '--no-progress'],
      emulatorEnv(harness),
      undefined,
      harness.clock(),
    );
    assert.equal(run.code, 0, run.stderr);
  });

  test('a pre-made view has no people keys: refused offline, with what to do', async () => {
    const path = file('premade', 'property_preview');
    for (const command of ['validate', 'plan']) {
      const r = await runCli([command, path], emulatorEnv(harness));
      assert.equal(r.code, 2, `${command}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, line(`${path}:15`));
      assert.match(r.stderr, /view 'property_preview' has no people keys/);
      assert.match(r.stderr, /declare one under views:/);
    }
  });

  test('plan checks a view the service lists, too', async () => {
    const made = await runCli(
      ['views', 'create', 'portal_view', '--fields', 'id,address'],
      emulatorEnv(harness),
    );
    assert.equal(made.code, 0, made.stderr);
    const path = file('portal', 'portal_view');
    assert.equal(
      (await runCli(['validate', path], emulatorEnv(harness))).code,
      2,
      'not known offline',
    );
    const plan = await runCli(['plan', path], emulatorEnv(harness));
    assert.equal(plan.code, 2, plan.stdout + plan.stderr);
    assert.match(plan.stderr, /view 'portal_view' has no people keys/);
    assert.match(plan.stderr, /jobs\.owners\.view/);
  });
});
