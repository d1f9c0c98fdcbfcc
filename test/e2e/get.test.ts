import { strict as assert } from 'node:assert';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, runCli, tempDir } from '../helpers/pipeline.js';
import { creditsUsed } from '../helpers/runs.js';

/**
 * `sluice get`: one job from flags, run as a pipeline file's job is, on each destination. An
 * analyst's up-arrow must not spend: the same command after a success buys nothing and says
 * when it was loaded, `--fresh` buys again, a failed one is resumed, a different query into the
 * same table is a purchase of its own; `--save` writes the file it ran.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ fileRecords: 200 });
  dir = tempDir('sluice-get-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

const AUSTIN = ['get', 'properties', 'city:Austin', '--records', '500'];

/** `--into` (and its settings: `--schema`) naming the target. */
function into(t: TestTarget): string[] {
  return ['--into', t.url, ...Object.entries(t.settings).flatMap(([k, v]) => [`--${k}`, v])];
}

function get(args: string[], clock = harness.clock()) {
  return runCli([...args, '--no-progress'], emulatorEnv(harness), undefined, clock);
}

function downloads(): number {
  return harness.emulator.context.state.downloads.length;
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`sluice get on ${kind}`, { skip: reason }, () => {
    test('loads 500 rows; the same command again buys nothing and says so; --fresh buys again', async () => {
      const t = await target('get-again');
      const first = await get([...AUSTIN, ...into(t), '--json']);
      assert.equal(first.code, 0, first.stdout + first.stderr);
      const summary = JSON.parse(first.stdout);
      assert.equal(summary.pipeline, 'get.properties');
      assert.equal(summary.status, 'succeeded');
      assert.equal(summary.jobs[0].loaded, 500);
      assert.deepEqual(summary.credits, { property: 500 });
      const { rows } = await t.one<{ rows: number }>('select count(*) as rows from properties');
      assert.equal(Number(rows), 500);
      assert.equal(creditsUsed(harness).property, 500);
      assert.equal(downloads(), 1);
      const runs = await t.all<{ run_key: string; status: string }>(
        'select run_key, status from _sluice_runs',
      );
      assert.equal(runs.length, 1);
      assert.match(runs[0]!.run_key, /^get:[0-9a-f]{16}$/);
      assert.equal(runs[0]!.status, 'succeeded');

      // The up-arrow: nothing bought, and it says when the records were loaded, by which run.
      const again = await get([...AUSTIN, ...into(t)]);
      assert.equal(again.code, 0, again.stdout + again.stderr);
      assert.match(
        again.stdout,
        new RegExp(
          `^500 records of properties matching city:Austin: loaded into properties by run ${summary.run_id} \\(succeeded at \\S+Z\\); nothing bought now\\. The same command buys nothing again; --fresh buys it again\\.$`,
          'm',
        ),
      );
      const json = await get([...AUSTIN, ...into(t), '--json']);
      assert.equal(json.code, 0);
      const replay = JSON.parse(json.stdout);
      assert.equal(replay.replayed, true);
      assert.deepEqual(replay.credits, {}, 'this command spent nothing');
      assert.deepEqual(replay.original.credits, { property: 500 });
      assert.equal(replay.original.run_id, summary.run_id);
      assert.equal(creditsUsed(harness).property, 500, 'no credit spent by the repeats');
      assert.equal(downloads(), 1);
      assert.equal((await t.all('select run_id from _sluice_runs')).length, 1);

      const fresh = await get([...AUSTIN, ...into(t), '--fresh', '--json']);
      assert.equal(fresh.code, 0, fresh.stdout + fresh.stderr);
      assert.deepEqual(JSON.parse(fresh.stdout).credits, { property: 500 });
      assert.equal(creditsUsed(harness).property, 1000, '--fresh buys again');
      assert.equal(downloads(), 2);
      const after = await t.one<{ rows: number }>('select count(*) as rows from properties');
      assert.equal(Number(after.rows), 500, 'merged on id');
    });

    test('another query into the same table is a purchase of its own, not a repeat', async () => {
      const t = await target('get-other');
      assert.equal((await get([...AUSTIN, ...into(t)])).code, 0);
      const dallas = await get([
        'get',
        'properties',
        'city:Dallas',
        '--records',
        '40',
        ...into(t),
        '--json',
      ]);
      assert.equal(dallas.code, 0, dallas.stdout + dallas.stderr);
      assert.equal(JSON.parse(dallas.stdout).jobs[0].loaded, 40);
      assert.equal(creditsUsed(harness).property, 540);
      const { rows } = await t.one<{ rows: number }>('select count(*) as rows from properties');
      assert.equal(Number(rows), 540);
      const keys = await t.all<{ run_key: string }>('select distinct run_key from _sluice_runs');
      assert.equal(keys.length, 2, 'two commands, two keys');
    });

    test('a get that failed is resumed by the same command, without buying again', async () => {
      const t = await target('get-resume');
      // The download is bought, then its files cannot be fetched: the run fails.
      await harness.faults([{ match: 'GET /files/', action: '500', times: 1000 }]);
      const failed = await get([...AUSTIN, ...into(t), '--json']);
      assert.equal(failed.code, 1, failed.stdout + failed.stderr);
      const first = JSON.parse(failed.stdout);
      assert.equal(first.status, 'failed');
      assert.equal(downloads(), 1);
      await harness.clearFaults();
      const resumed = await get([...AUSTIN, ...into(t), '--json']);
      assert.equal(resumed.code, 0, resumed.stdout + resumed.stderr);
      const summary = JSON.parse(resumed.stdout);
      assert.equal(summary.resumed_from, first.run_id);
      assert.equal(summary.jobs[0].reattached, true);
      assert.deepEqual(summary.credits, {}, 'the failed run paid; this one re-attached');
      assert.equal(downloads(), 1, 'bought once');
      assert.equal(creditsUsed(harness).property, 500);
      const { rows } = await t.one<{ rows: number }>('select count(*) as rows from properties');
      assert.equal(Number(rows), 500);
    });

    test('--save writes the file it ran: validate accepts it, run runs the same job, status reads it', async () => {
      const t = await target('get-save');
      const file = join(dir, `${kind}-saved`, 'austin.yaml');
      const got = await get([...AUSTIN, ...into(t), '--table', 'homes', '--save', file, '--json']);
      assert.equal(got.code, 0, got.stdout + got.stderr);
      assert.ok(existsSync(file));
      const env = emulatorEnv(harness);
      const valid = await runCli(['validate', file], env);
      assert.equal(valid.code, 0, valid.stdout + valid.stderr);
      assert.match(valid.stdout, /valid pipeline 'get\.homes' \(1 job, 0 views\)/);
      const status = await runCli(['status', file], env);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, new RegExp(JSON.parse(got.stdout).run_id));
      const run = await runCli(
        ['run', file, '--json', '--no-progress'],
        env,
        undefined,
        harness.clock(),
      );
      assert.equal(run.code, 0, run.stdout + run.stderr);
      const [ran, saved] = [JSON.parse(run.stdout), JSON.parse(got.stdout)];
      const shape = (s: {
        pipeline: string;
        destination: string;
        jobs: Record<string, unknown>[];
      }) => ({
        pipeline: s.pipeline,
        destination: s.destination,
        jobs: s.jobs.map((j) => [j.job, j.status, j.found, j.loaded, j.tables]),
      });
      assert.deepEqual(shape(ran), shape(saved), 'the same job into the same table');
      const { rows } = await t.one<{ rows: number }>('select count(*) as rows from homes');
      assert.equal(Number(rows), 500);
    });
  });
}

describe('sluice get: mistakes cost nothing', () => {
  test('no --records, no --into, a mistyped field (--strict-fields) or a table name sluice cannot make: exit 2, nothing bought', async () => {
    const target = join(dir, 'never.sqlite');
    const cases: [string[], RegExp][] = [
      [['get', 'properties', 'city:Austin', '--into', target], /give --records N/],
      [['get', 'properties', 'city:Austin', '--records', '5'], /give --into DEST/],
      [
        ['get', 'properties', 'cty:Austin', '--records', '5', '--into', target, '--strict-fields'],
        /field 'cty' does not exist in the property schema; did you mean 'city'\?/,
      ],
      [
        ['get', 'properties', 'city:Austin', '--records', '5', '--into', target, '--table', '1x'],
        /--table 1x: a table is named with letters/,
      ],
      [
        ['get', 'propertys', 'city:Austin', '--records', '5', '--into', target],
        /did you mean properties/,
      ],
    ];
    for (const [args, message] of cases) {
      const out = await get(args);
      assert.equal(out.code, 2, args.join(' '));
      assert.match(out.stderr, message);
    }
    assert.equal(downloads(), 0);
    assert.equal(existsSync(target), false, 'no database made');
  });
});
