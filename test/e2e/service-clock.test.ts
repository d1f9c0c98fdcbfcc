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
 * v3 result files live seven days after their `date_created`, by the service's clock. sluice
 * judges that by the service's answers (its Date header, the file's date_created, the storage's
 * 403), not by this machine's clock: with a clock two days behind, a file the service expired
 * ends the run with exit 2 and the `--fresh` advice (before: "run again to fetch it anew", exit
 * 1, forever); with a clock two days ahead, a file the service still serves is fetched anew
 * (before: declared expired, and bought again with --fresh). The skew is logged once.
 */

const DAY = 86_400_000;
const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';

let harness: EmulatorHarness;
let dir: string;
/** How far the emulator's clock was moved since its reset. */
let moved = 0;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.05, fileRecords: 40 });
  dir = tempDir('sluice-service-clock-');
});
after(() => harness.close());
beforeEach(async () => {
  await harness.reset();
  moved = 0;
});

async function advance(ms: number): Promise<void> {
  moved += ms;
  await harness.advanceClock(ms);
}

/** This machine's clock for a run: the emulator's, off by `skew`; each wait moves both. */
function clock(skew: number) {
  return {
    now: () => Date.now() + moved + skew,
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      await advance(Math.ceil(ms));
    },
  };
}

const env = () => emulatorEnv(harness, { SLUICE_API_URL: harness.v3Url });

/** The v3 requests and results the emulator answered since `from`. */
async function resultReads(from: number): Promise<number> {
  return (await harness.requests()).slice(from).filter((r) => r.path.startsWith('/v3/results/'))
    .length;
}

/**
 * A first run that starts the download and is stopped right after (its id recorded): the next
 * run re-attaches to it, whatever has happened to its files meanwhile.
 */
async function startAndStop(file: string): Promise<void> {
  const stop = new AbortController();
  const running = runCli(
    ['run', file, '--json', '--no-progress'],
    { ...env(), SLUICE_CHECKPOINT: 'download-started:goods' },
    stop.signal,
    clock(0),
  );
  for (;;) {
    const log = await harness.requests();
    if (log.some((r) => r.path === '/v3/data/products' && r.sent?.download === 'true' && r.status))
      break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // Give the run the moment it takes to record the id it heard.
  await new Promise((resolve) => setTimeout(resolve, 300));
  stop.abort();
  const stopped = await running;
  assert.equal(stopped.code, 130, stopped.stdout + stopped.stderr);
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  const pipeline = (t: TestTarget, name: string) =>
    writePipeline(
      dir,
      `${kind}-${name}`,
      `${pipelineHead(name, t.destinationYaml, 'v3')}jobs:
  goods:
    type: products
    query: '*'
    records: 100
    format: csv
    ${POLL}
`,
    );

  describe(`the service's clock decides a v3 file's life, on ${kind}`, { skip: reason }, () => {
    for (const [side, skew] of [
      ['behind', -2 * DAY],
      ['ahead of', 2 * DAY],
    ] as const) {
      test(`a clock 2 days ${side} the service's: an expired file ends the run with exit 2 and --fresh, every time`, async () => {
        const t = await target(`expired-${side.replace(/ .*/, '')}`);
        const file = pipeline(t, `expired-${side.replace(/ .*/, '')}`);
        await startAndStop(file);
        await advance(8 * DAY);
        const bought = harness.emulator.context.state.downloads.length;
        for (let attempt = 1; attempt <= 2; attempt++) {
          const from = (await harness.requests()).length;
          const run = await runCli(
            ['run', file, '--json', '--no-progress'],
            env(),
            undefined,
            clock(skew),
          );
          assert.equal(run.code, 2, run.stdout + run.stderr);
          const [goods] = JSON.parse(run.stdout).jobs;
          assert.equal(goods.error.code, 'SLUICE_DOWNLOAD_EXPIRED');
          assert.match(goods.error.message, /start a new download instead \(sluice run --fresh/);
          assert.ok((await resultReads(from)) <= 4, 'read a few times, never in a loop');
          const said = run.stderr.match(
            /this machine's clock is 2 days (behind|ahead of) the service's/g,
          );
          assert.deepEqual(said, [`this machine's clock is 2 days ${side} the service's`]);
          assert.equal(harness.emulator.context.state.downloads.length, bought, 'nothing bought');
        }
      });
    }

    test("a clock 2 days ahead: a file within its seven days by the service's clock is fetched anew, not given up", async () => {
      const t = await target('alive-ahead');
      const file = pipeline(t, 'alive-ahead');
      await startAndStop(file);
      // Six days on: the file lives one more day, but its first link is refused (403).
      await advance(6 * DAY);
      await harness.faults([{ match: 'GET /files/', action: '403', times: 1 }]);
      const run = await runCli(
        ['run', file, '--json', '--no-progress'],
        env(),
        undefined,
        clock(2 * DAY),
      );
      assert.equal(run.code, 0, run.stdout + run.stderr);
      assert.equal(JSON.parse(run.stdout).jobs[0].loaded, 100);
      assert.match(run.stderr, /fresh URL for/);
      assert.equal((await t.one<{ n: number }>('select count(*) as n from goods')).n, 100);
    });
  });
}
