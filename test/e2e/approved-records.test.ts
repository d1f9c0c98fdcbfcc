import { strict as assert } from 'node:assert';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness, type LoggedRequest } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * A download asks for what the credit guard approved, never more: records that appear between
 * the guard's count and the start (here, while the start's safeguard listing is answered slowly)
 * cannot take a job past its `max_credits`, its budget or the account's credits. Where nothing
 * caps a job, no number is sent (v3: every match); never a sentinel such as 2147483647. Read
 * from the request bodies the emulator received.
 */

const DAY = 86_400_000;
const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';
const QUERY = 'province:TX';
const APPEARING = 300;

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.05, fileRecords: 200, churn: 0.02 });
  dir = tempDir('sluice-approved-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

type Api = 'v4' | 'v3';

function env(api: Api) {
  return emulatorEnv(harness, api === 'v3' ? { SLUICE_API_URL: harness.v3Url } : {});
}

async function count(api: Api, query: string): Promise<number> {
  const r = await runCli(['count', 'properties', query], env(api));
  assert.equal(r.code, 0, r.stderr);
  return Number(r.stdout.trim());
}

/** The download starts the emulator received (what each one sent). */
async function starts(api: Api): Promise<Record<string, unknown>[]> {
  const isStart = (r: LoggedRequest) =>
    api === 'v4'
      ? r.method === 'POST' && r.path === '/v4/properties/search' && r.sent?.download === true
      : r.method === 'GET' && r.path === '/v3/data/properties' && r.sent?.download === 'true';
  return (await harness.requests()).filter(isStart).map((r) => r.sent!);
}

/**
 * Runs `file` while `APPEARING` new records match the query: they are added while the listing
 * the start makes first (its safeguard) is answered slowly, after the guard counted.
 */
async function runWhileRecordsAppear(api: Api, file: string, fields: Record<string, string>) {
  const listing = api === 'v4' ? '/v4/downloads' : '/v3/requests';
  // v3 lists requests to log in, too: both listings are slow, the records come during the second.
  const times = api === 'v4' ? 1 : 2;
  await harness.faults([{ match: `GET ${listing}`, action: 'slow', delay_ms: 1500, times }]);
  const from = (await harness.requests()).length;
  const running = runCli(
    ['run', file, '--json', '--no-progress'],
    env(api),
    undefined,
    harness.clock(),
  );
  const isCount = (r: LoggedRequest) =>
    r.path === `/${api}/${api === 'v4' ? 'properties/search' : 'data/properties'}` &&
    String(r.sent?.download ?? false) === 'false';
  for (;;) {
    const log = (await harness.requests()).slice(from);
    const counted = log.findIndex(isCount);
    const pending = log.findIndex(
      (r, i) => i > counted && r.method === 'GET' && r.path === listing && r.status === 0,
    );
    if (counted >= 0 && pending > counted) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await harness.control('POST', 'records/add', { type: 'properties', count: APPEARING, fields });
  const result = await running;
  return { ...result, summary: result.stdout ? JSON.parse(result.stdout) : undefined };
}

function propertyCreditsUsed(): number {
  return harness.emulator.context.state.account.used.property;
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  const pipeline = (t: TestTarget, name: string, body: string, api: Api = 'v4') =>
    writePipeline(dir, `${kind}-${name}`, `${pipelineHead(name, t.destinationYaml, api)}${body}`);

  const job = (extra = '') => `jobs:
  homes:
    type: properties
    query: '${QUERY}'
    records: all
    format: json
${extra}    ${POLL}
`;

  describe(`the start asks for what the guard approved, on ${kind}`, { skip: reason }, () => {
    for (const [cap, yaml] of [
      ['budget', (n: number) => `budget: { property: ${n}/month }\n${job()}`],
      ['max_credits', (n: number) => job(`    max_credits: ${n}\n`)],
    ] as const) {
      test(`records appearing after the count do not take a records: all job past its ${cap}`, async () => {
        const t = await target(`approved-${cap}`);
        const counted = await count('v4', QUERY);
        const file = pipeline(t, `approved-${cap}`, yaml(counted));
        const result = await runWhileRecordsAppear('v4', file, { province: 'TX' });
        assert.equal(result.code, 0, result.stdout + result.stderr);
        assert.equal(await count('v4', QUERY), counted + APPEARING, 'the records appeared');
        const [homes] = result.summary.jobs;
        assert.equal(homes.status, 'loaded');
        assert.equal(homes.loaded, counted);
        assert.deepEqual(result.summary.credits, { property: counted }, 'within the cap');
        assert.equal(propertyCreditsUsed(), counted, "the service's own counter");
        assert.deepEqual(
          (await starts('v4')).map((s) => s.num_records),
          [counted],
          'the start asked for the approved number',
        );
        assert.match(
          result.stderr,
          new RegExp(
            `matched ${counted + APPEARING} records when download \\S+ started, ${APPEARING} more than the credit guard counted`,
          ),
        );
        assert.equal((await t.one<{ n: number }>('select count(*) as n from homes')).n, counted);
      });
    }

    test('v3: no records parameter where nothing caps the job, the approved number where max_credits does', async () => {
      const t = await target('v3-forms');
      const counted = await count('v3', QUERY);
      const open = await runWhileRecordsAppear('v3', pipeline(t, 'v3-open', job(), 'v3'), {
        province: 'TX',
      });
      assert.equal(open.code, 0, open.stdout + open.stderr);
      const [uncapped] = await starts('v3');
      assert.ok(uncapped, 'a start');
      assert.equal('records' in uncapped, false, 'every match: no records parameter');
      assert.equal(open.summary.jobs[0].loaded, counted + APPEARING, 'every match, as it was');

      // No reset between the two: v3 request ids start again at 1 after one.
      const capped = await count('v3', QUERY);
      const bounded = await runWhileRecordsAppear(
        'v3',
        pipeline(t, 'v3-capped', job(`    max_credits: ${capped}\n    table: capped\n`), 'v3'),
        { province: 'TX' },
      );
      assert.equal(bounded.code, 0, bounded.stdout + bounded.stderr);
      assert.deepEqual(
        (await starts('v3')).map((s) => s.records),
        [undefined, String(capped)],
      );
      assert.equal(bounded.summary.jobs[0].loaded, capped, bounded.stdout + bounded.stderr);
      assert.deepEqual(bounded.summary.credits, { property: capped });
    });

    test('incremental: a record that changes between the count and the start is not bought, and not passed by the cursor', async () => {
      const t = await target('approved-incremental');
      const file = pipeline(
        t,
        'approved-incremental',
        job('    write: merge\n    incremental: { cursor: dateUpdated }\n'),
      );
      const first = await runCli(
        ['run', file, '--json', '--no-progress'],
        env('v4'),
        undefined,
        harness.clock(),
      );
      assert.equal(first.code, 0, first.stderr);
      await harness.advanceClock(DAY);

      const second = await runWhileRecordsAppear('v4', file, { province: 'TX' });
      assert.equal(second.code, 0, second.stdout + second.stderr);
      const [homes] = second.summary.jobs;
      const range = homes.incremental;
      assert.ok(range.to, 'the range has an upper bound');
      const [start] = (await starts('v4')).slice(-1);
      assert.match(
        String(start!.query),
        new RegExp(
          `^\\(${QUERY}\\) AND dateUpdated:\\[\\S+ TO ${range.to.replace(/[.]/g, '\\.')}\\]$`,
        ),
      );
      assert.equal(start!.num_records, homes.found, 'the approved number, as counted');
      assert.equal(homes.loaded, homes.found, 'the range held what the guard counted');
      assert.ok(Date.parse(range.next) <= Date.parse(range.to), 'the cursor stays within it');

      // The records that appeared meanwhile are the next run's, and nothing is missing.
      const third = await runCli(
        ['run', file, '--json', '--no-progress'],
        env('v4'),
        undefined,
        harness.clock(),
      );
      assert.equal(third.code, 0, third.stderr);
      assert.ok(JSON.parse(third.stdout).jobs[0].loaded >= APPEARING);
      assert.equal(
        (await t.one<{ n: number }>('select count(*) as n from homes')).n,
        await count('v4', QUERY),
        'every record that matches the query, none skipped',
      );
    });
  });
}
