import { strict as assert } from 'node:assert';
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import {
  emulatorEnv,
  pipelineHead,
  runCli,
  SLUICE_BIN,
  tempDir,
  writePipeline,
} from '../helpers/pipeline.js';
import { rowLines } from '../helpers/runs.js';

/**
 * The dashboard (`sluice ui`, `sluice report`) in a real browser: Debian's chromium driven by
 * playwright-core. Pipelines load through the emulator into each destination (one run refused
 * by max_rejects, one that loads the rest); the pages must show what `status --json` says, the
 * chart's points, a reject's reason, no secret in any page or response, and write nothing.
 */

const CHROMIUM = '/usr/bin/chromium';
const browserMissing =
  !existsSync(CHROMIUM) && process.env.CI !== 'true'
    ? `${CHROMIUM} is missing (apt-get install chromium): the browser suite is skipped`
    : undefined;
if (browserMissing) console.log(`# ${browserMissing}`);

let harness: EmulatorHarness;
let dir: string;
let browser: BrowserContext;

before(async () => {
  if (browserMissing) return;
  harness = await EmulatorHarness.start({ scale: 0.2, fileRecords: 200 });
  dir = tempDir();
  // A fresh profile each time; times shown in a zone that is not UTC.
  browser = await chromium.launchPersistentContext(
    mkdtempSync(join(tmpdir(), 'sluice-chromium-')),
    {
      executablePath: CHROMIUM,
      timezoneId: 'America/Chicago',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  );
});
after(async () => {
  await browser?.close();
  await harness?.close();
});

/** `sluice ui` as a user starts it; resolves with its address once it listens. */
function startUi(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [SLUICE_BIN, 'ui', ...args, '--port', '0'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (b: Buffer) => {
      err += b;
    });
    child.stdout!.on('data', (b: Buffer) => {
      out += b;
      const m = /sluice ui: (\S+)/.exec(out);
      if (m) resolve({ url: m[1]!, child });
    });
    child.once('exit', (code) => reject(new Error(`sluice ui exited ${code}: ${out}${err}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** Everything in the destination, state tables included, as one hash (and the file's bytes). */
async function fingerprint(t: TestTarget): Promise<string> {
  const hash = createHash('sha256');
  if (t.file) hash.update(readFileSync(t.file));
  for (const table of (await t.tables('')).sort()) {
    hash.update(table);
    hash.update(rowLines(await t.all(`select * from "${table}"`)).join('\n'));
  }
  return hash.digest('hex');
}

const cells = (page: Page, selector: string) =>
  page.$$eval(selector, (els) => els.map((e) => (e.textContent ?? '').trim()));

for (const kind of destinationKinds()) {
  const reason = browserMissing ?? (await skipReason(kind));
  const target = targetFactory(kind, () => dir);
  describe(`dashboard on ${kind}`, { skip: reason }, () => {
    test('each page shows what status says, the chart, a reject; no secret; nothing written', async () => {
      const t = await target('ui');
      // A password in the PostgreSQL URL (the server trusts the test's connections anyway).
      const secretUrl = t.destinationYaml.replace(
        'postgresql://postgres@',
        'postgresql://postgres:pg-Secret-42@',
      );
      const job = (maxRejects: number) => `jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 600
    format: csv
    write: append
    max_rejects: ${maxRejects}
    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
`;
      const head = `${pipelineHead('dash', secretUrl)}budget: { property: 5000/month }\n`;
      const env = emulatorEnv(harness);
      await harness.faults([], 'corrupt=0.05');
      const refused = await runCli(
        ['run', writePipeline(dir, `${kind}-dash`, head + job(3)), '--json', '--no-progress'],
        env,
        undefined,
        harness.clock(),
      );
      assert.equal(refused.code, 2, refused.stderr);
      const file = writePipeline(dir, `${kind}-dash`, head + job(100));
      const done = await runCli(
        ['run', file, '--json', '--no-progress'],
        env,
        undefined,
        harness.clock(),
      );
      assert.equal(done.code, 0, done.stderr);
      const status = JSON.parse((await runCli(['status', file, '--json'], env)).stdout) as {
        runs: { run_id: string; status: string; credits_paid: Record<string, number> }[];
        budgets: { type: string; spent: number; limit: number }[];
      };
      assert.equal(status.runs.length, 2);
      const [last, first] = status.runs as [(typeof status.runs)[0], (typeof status.runs)[0]];
      const aReject = await t.one<{ reason: string; line: number }>(
        'select reason, line from _sluice_rejects order by line limit 1',
      );
      const secrets = [env.SLUICE_PASSWORD!, 'pg-Secret-42'];
      const before = await fingerprint(t);

      const { url, child } = await startUi([file], env);
      const page = await browser.newPage();
      page.setDefaultTimeout(90_000);
      /** Follows a link to its page. */
      const follow = async (selector: string) => {
        const href = await page.locator(selector).first().getAttribute('href');
        await page.goto(new URL(href!, page.url()).href);
      };
      /** Submits a form as its button would. */
      const submit = async (button: string) => {
        await Promise.all([page.waitForURL(/\?/), page.click(button)]);
        await page.waitForLoadState('load');
      };
      const bodies: string[] = [];
      page.on('response', (r) => {
        bodies.push(r.url());
        r.text().then(
          (text) => bodies.push(text),
          () => {},
        );
      });
      try {
        // Overview: the last run and its status, the budget as status reports it.
        await page.goto(url);
        const lastRuns = await cells(page, '#last-runs tbody td');
        assert.ok(lastRuns.includes(last.run_id), lastRuns.join(' | '));
        assert.ok(lastRuns.includes('succeeded'));
        const budget = await cells(page, '#budgets tbody td');
        assert.equal(budget[4], status.budgets[0]!.spent.toLocaleString('en-US'));
        assert.deepEqual(
          status.budgets.map((b) => b.type),
          ['property'],
        );
        // Times in the viewer's zone, UTC on hover.
        const when = await page.$eval('#last-runs time', (e) => [
          e.textContent,
          e.getAttribute('title'),
        ]);
        assert.match(when[1]!, /UTC$/);
        assert.doesNotMatch(when[0]!, /UTC/);
        // The keyboard: the first Tab reaches the skip link.
        await page.keyboard.press('Tab');
        assert.equal(
          await page.evaluate('document.activeElement && document.activeElement.textContent'),
          'Skip to the page',
        );

        // Runs: both, with their statuses and the credits status says each paid.
        await follow('nav.pages >> text=Runs');
        const rows = await page.$$eval('#runs tbody tr', (trs) =>
          trs.map((tr) =>
            [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim()),
          ),
        );
        assert.deepEqual(
          rows.map((r) => [r[0], r[2], r[6]]),
          status.runs.map((r) => [
            r.run_id,
            r.status,
            Object.entries(r.credits_paid)
              .map(([k, n]) => `${n.toLocaleString('en-US')} ${k}`)
              .join(', ') || '-',
          ]),
        );
        await page.selectOption('select[name=status]', 'failed');
        await submit('button:has-text("Show")');
        assert.deepEqual(await cells(page, '#runs tbody td:first-child'), [first.run_id]);

        // The refused run: its error, what to do, its jobs' phases and its rejects.
        await follow(`a:has-text("${first.run_id}")`);
        assert.match((await page.textContent('#advice')) ?? '', /SLUICE_TOO_MANY_REJECTS/);
        assert.ok((await cells(page, '#phases tbody tr')).length > 0, 'phases recorded');
        assert.ok((await cells(page, '#rejects tbody tr')).length > 0);

        // Credits: the chart's last point is what this month's budget has spent.
        await follow('nav.pages >> text=Credits');
        const points = await page.$$eval('figure[data-type=property] circle.point', (cs) =>
          cs.map((c) => Number(c.getAttribute('data-value'))),
        );
        assert.ok(points.length > 1);
        assert.equal(points.at(-1), status.budgets[0]!.spent);
        assert.equal(await page.locator('figure[data-type=property] line.budget').count(), 1);

        // Tables: the job's table with its rows.
        await follow('nav.pages >> text=Tables');
        const homes = await t.one<{ n: number }>('select count(*) as n from homes');
        assert.match(
          (await page.textContent('.table-info')) ?? '',
          new RegExp(`${Number(homes.n).toLocaleString('en-US')} rows`),
        );

        // Rejects: found by a word of its reason, with its line.
        await follow('nav.pages >> text=Rejects');
        await page.fill('input[name=q]', aReject.reason.slice(0, 20));
        await submit('button:has-text("Search")');
        const found = await page.$$eval('#rejects tbody tr', (trs) =>
          trs.map((tr) =>
            [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim()),
          ),
        );
        assert.ok(
          found.some((r) => r[3] === aReject.reason),
          JSON.stringify(found.slice(0, 2)),
        );
        await page.screenshot({ path: join(dir, `${kind}-rejects.png`) });

        // The live endpoint answers while the page is open.
        const live = await page.evaluate(async () => (await fetch('/api/live')).json());
        assert.equal(typeof (live as { version: unknown }).version, 'string');
        // No write of any kind is answered.
        const post = await page.evaluate(async () => (await fetch('/', { method: 'POST' })).status);
        assert.equal(post, 405);
      } finally {
        await page.close();
        await stop(child);
      }
      for (const text of bodies) {
        for (const secret of secrets)
          assert.ok(!text.includes(secret), `a secret in ${text.slice(0, 80)}`);
      }
      assert.equal(await fingerprint(t), before, 'the dashboard wrote nothing');

      // Live: the open overview shows a run that ends while it is open, without a reload.
      const again = await startUi([file], env);
      const live = await browser.newPage();
      try {
        await live.goto(again.url);
        const run = await runCli(
          ['run', file, '--json', '--no-progress', '--wait'],
          env,
          undefined,
          harness.clock(),
        );
        assert.equal(run.code, 0, run.stderr);
        const newest = (JSON.parse(run.stdout) as { run_id: string }).run_id;
        await live.locator('#last-runs', { hasText: newest }).waitFor({ timeout: 90_000 });
      } finally {
        await live.close();
        await stop(again.child);
      }
      const loaded = await fingerprint(t);

      // The static report: the same overview, one file that needs nothing else.
      const out = join(dir, `${kind}-report.html`);
      const report = await runCli(['report', file, '--out', out], env);
      assert.equal(report.code, 0, report.stderr);
      const html = readFileSync(out, 'utf8');
      assert.match(html, /id="last-runs"/);
      assert.doesNotMatch(html, /<link |src="http|href="http/);
      for (const secret of secrets) assert.ok(!html.includes(secret));
      assert.equal(await fingerprint(t), loaded, 'the report wrote nothing');
    });
  });
}

describe('dashboard off the loopback', { skip: browserMissing }, () => {
  test('every request needs the token it printed', async () => {
    const { url, child } = await startUi(
      ['sqlite:' + join(dir, 'none.sqlite'), '--host', '127.0.0.2'],
      {
        PATH: process.env.PATH,
      },
    ).catch((error: unknown) => {
      throw error;
    });
    try {
      const m = /^(http:\/\/[^/]+\/)\?token=(\S+)$/.exec(url);
      assert.ok(m, url);
      assert.equal((await fetch(m[1]!)).status, 401);
      assert.equal((await fetch(`${m[1]}runs?token=wrong-token-wrong-token`)).status, 401);
      const page = await browser.newPage();
      try {
        const answer = await page.goto(url);
        assert.equal(answer?.status(), 200);
        assert.equal(page.url(), m[1]);
        assert.equal((await page.goto(`${m[1]}runs`))?.status(), 200, 'the cookie carries it');
      } finally {
        await page.close();
      }
    } finally {
      await stop(child);
    }
  });
});
