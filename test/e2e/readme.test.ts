import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES } from '../../src/error-codes.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { tempDir, writePipeline } from '../helpers/pipeline.js';
import {
  docPages,
  normalise,
  pageName,
  runDocExamples,
  shownCodeTables,
  withCodeTables,
} from '../helpers/readme.js';

/** Names of environment variables, which look like codes. */
const ENVIRONMENT = new Set(
  [
    'API_URL',
    'API_TOKEN',
    'EMAIL',
    'PASSWORD',
    'TOKEN',
    'DESTINATION',
    'LOG_FORMAT',
    'LOG_LEVEL',
    'PARSE_WORKERS',
    'FILES_AT_ONCE',
    'SQLITE_BUSY_TIMEOUT_MS',
    'TEST_POSTGRES_URL',
    'TEST_DESTINATIONS',
    'NOTIFY_SMTP',
  ].map((n) => `SLUICE_${n}`),
);

/**
 * The README and docs/ keep their word: their example outputs, exit codes, cron line, systemd
 * units and Python example.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = docPages().map((page) => ({
  name: pageName(page),
  text: readFileSync(page, 'utf8'),
}));

/** The code block after `<!-- marker -->`: wherever it is shown, the same block. */
function block(marker: string): string {
  const shown = PAGES.flatMap(({ name, text }) =>
    [...text.matchAll(new RegExp(`<!-- ${marker} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``, 'g'))].map(
      (m) => ({ name, body: m[1]! }),
    ),
  );
  assert.ok(shown.length > 0, `a page of the docs has a ${marker} block`);
  for (const { name, body } of shown) {
    assert.equal(
      body,
      shown[0]!.body,
      `${name}'s ${marker} block is the one ${shown[0]!.name} shows`,
    );
  }
  return shown[0]!.body;
}

function run(command: string, args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The processes whose parent is `pid` (Linux: /proc/PID/stat names the parent). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid) found.push(Number(entry));
    } catch {
      // The process ended while the folder was read.
    }
  }
  return found;
}

describe('README', () => {
  test('every example session prints what its page shows (npm run readme writes them)', async () => {
    const results = await runDocExamples();
    assert.ok(
      results.some((r) => r.page === 'README.md'),
      'the README has example sessions',
    );
    assert.deepEqual(
      results.flatMap(({ page, stale }) =>
        stale.map(
          (s) => `${page}: ${s.command}\n--- ${page}\n${s.expected}\n--- sluice now\n${s.actual}`,
        ),
      ),
      [],
      'examples are out of date: run npm run readme',
    );
  });

  test('the exit code tables are the ones src/error-codes.ts writes (npm run readme)', () => {
    for (const { name, text } of PAGES) {
      assert.deepEqual(shownCodeTables(text), shownCodeTables(withCodeTables(text)), name);
    }
    const readme = PAGES.find((p) => p.name === 'README.md')!;
    assert.ok(
      shownCodeTables(readme.text).some((t) => t.marker === 'exit-codes'),
      'the README has its exit-code table between <!-- exit-codes --> markers',
    );
    assert.ok(
      PAGES.some(({ text }) => shownCodeTables(text).some((t) => t.marker === 'error-codes')),
      'a page has the table of error codes between <!-- error-codes --> markers',
    );
  });

  test('every error code the source raises is in the table', () => {
    const listed = new Set(ERROR_CODES);
    const files = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' });
    for (const file of files.filter((f) => f.endsWith('.ts') && !f.startsWith('emulator'))) {
      const source = readFileSync(join(ROOT, 'src', file), 'utf8');
      for (const [code] of source.matchAll(/'SLUICE_[A-Z0-9_]+'/g)) {
        const name = code.slice(1, -1);
        if (/^SLUICE_API_\d{3}$/.test(name) || ENVIRONMENT.has(name)) continue;
        assert.ok(listed.has(name), `${name} (${file}) is in the table of error codes`);
      }
    }
  });

  describe('schedules and orchestrators, as written', () => {
    let harness: EmulatorHarness;
    let dir: string;
    let envFile: string;
    before(async () => {
      harness = await EmulatorHarness.start({ scale: 0.2, queueMs: 0, rate: 100_000_000 });
      dir = tempDir('sluice-schedule-');
      envFile = join(dir, 'sluice.env');
      const { email, password } = harness.credentials;
      // What an operator's environment file holds: KEY=value lines, not exported.
      writeFileSync(
        envFile,
        `SLUICE_API_URL=${harness.v4Url}\nSLUICE_EMAIL=${email}\nSLUICE_PASSWORD=${password}\nSLUICE_DESTINATION=sqlite:${dir}/austin.sqlite\n`,
      );
    });
    after(() => harness.close());

    test("the cron line runs under cron's bare environment", async () => {
      const line = block('cron').trim();
      const command = line
        .split(/\s+/)
        .slice(5)
        .join(' ')
        .replaceAll('--env-file sluice.env', `--env-file ${envFile}`)
        .replaceAll('/srv/sluice', ROOT)
        .replaceAll('/var/log/sluice', join(dir, 'log'));
      mkdirSync(join(dir, 'log'));
      const result = await run('/bin/sh', ['-c', command], {
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: process.env.HOME },
      });
      assert.equal(result.code, 0, result.stderr);
      const summary = JSON.parse(readFileSync(join(dir, 'log', 'last-run.json'), 'utf8'));
      assert.equal(summary.status, 'succeeded');
      assert.ok(summary.jobs[0].loaded > 0);
      const log = readFileSync(join(dir, 'log', 'sluice.log'), 'utf8')
        .trim()
        .split('\n');
      for (const entry of log) assert.equal(typeof JSON.parse(entry).msg, 'string', entry);
    });

    test('the systemd units are read as written: every key in its section, retries bounded', async () => {
      const service = block('systemd-service');
      const timer = block('systemd-timer');
      const sections = (text: string) => {
        const found = new Map<string, string[]>();
        let at = '';
        for (const line of text.split('\n')) {
          const head = /^\[(\w+)\]$/.exec(line.trim());
          if (head) at = head[1]!;
          else if (/^\w+=/.test(line))
            found.set(at, [...(found.get(at) ?? []), line.split('=')[0]!]);
        }
        return found;
      };
      // systemd reads the start limits in [Unit] only; in [Service] they are ignored, and a
      // failing run would be restarted for ever.
      const keys = sections(service);
      assert.ok(keys.get('Unit')?.includes('StartLimitIntervalSec'));
      assert.ok(keys.get('Unit')?.includes('StartLimitBurst'));
      assert.ok(!keys.get('Service')?.some((k) => k.startsWith('StartLimit')));
      assert.match(service, /^RestartPreventExitStatus=2 3 4$/m, 'no restart for 2, 3 or 4');
      if (spawnSync('systemd-analyze', ['--version']).status !== 0) return;
      // systemd's own check, with the paths made to exist.
      const unitDir = join(dir, 'units');
      mkdirSync(join(unitDir, 'node_modules', '.bin'), { recursive: true });
      const bin = join(unitDir, 'node_modules', '.bin', 'sluice');
      writeFileSync(bin, '#!/bin/sh\n', { mode: 0o755 });
      writeFileSync(join(unitDir, 'sluice.env'), '');
      writeFileSync(
        join(unitDir, 'sluice-austin.service'),
        service.replaceAll('/srv/sluice', unitDir),
      );
      writeFileSync(join(unitDir, 'sluice-austin.timer'), timer);
      const verify = spawnSync(
        'systemd-analyze',
        ['verify', join(unitDir, 'sluice-austin.timer'), join(unitDir, 'sluice-austin.service')],
        { encoding: 'utf8' },
      );
      assert.equal(verify.status, 0, verify.stderr);
      assert.doesNotMatch(verify.stderr, /Unknown key|ignoring|not executable/);
    });

    test('the Python example branches on the exit code', async (t) => {
      if (spawnSync('python3', ['--version']).status !== 0) {
        t.skip('python3 is not installed here');
        return;
      }
      const script = `${block('orchestrator')}
import sys
print(run_sluice(sys.argv[2], "2026-11-26", cwd=sys.argv[1])["status"])
try:
    run_sluice("test/fixtures/typo.yaml", "2026-11-26", cwd=sys.argv[1])
except RuntimeError as error:
    print("mistake" if "a mistake to fix (exit 2)" in str(error) else "other")
`;
      const file = join(dir, 'orchestrate.py');
      writeFileSync(file, script);
      const env = Object.fromEntries(
        readFileSync(envFile, 'utf8')
          .trim()
          .split('\n')
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      // A small pipeline of the same source: the example's branching is what is tested here.
      const pipeline = writePipeline(
        dir,
        'small',
        `version: 1
name: small
source:
  api: v4
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
destination: sqlite:small.sqlite
jobs:
  homes: { type: properties, query: "province:TX", records: 50, poll: { interval: 20ms } }
`,
      );
      const result = await run('python3', [file, ROOT, pipeline], {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      });
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(result.stdout.trim().split('\n'), ['succeeded', 'mistake']);
    });

    test('the Python example retries an interrupted run (exit 130)', async (t) => {
      if (spawnSync('python3', ['--version']).status !== 0) {
        t.skip('python3 is not installed here');
        return;
      }
      // 1 record a second: the download is still running when the orchestrator is stopped.
      const slow = await EmulatorHarness.start({ scale: 0.2, queueMs: 0, rate: 1 });
      try {
        const script = `${block('orchestrator')}
import sys
try:
    run_sluice(sys.argv[2], "2026-11-27", cwd=sys.argv[1])
    print("returned")
except RetryableError as error:
    print("retry", error)
except RuntimeError as error:
    print("mistake", error)
`;
        const file = join(dir, 'orchestrate-130.py');
        writeFileSync(file, script);
        const pipeline = writePipeline(
          dir,
          'interrupted',
          `version: 1
name: interrupted
source:
  api: v4
  url: ${slow.v4Url}
  email: ${slow.credentials.email}
  password: ${slow.credentials.password}
destination: sqlite:interrupted.sqlite
jobs:
  homes: { type: properties, query: "province:TX", records: 50, poll: { interval: 20ms } }
`,
        );
        const python = spawn('python3', [file, ROOT, pipeline], {
          env: { PATH: process.env.PATH, HOME: process.env.HOME },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        python.stdout.on('data', (d) => (stdout += d));
        python.stderr.on('data', (d) => (stderr += d));
        const exited = new Promise<number | null>((resolve) => python.on('exit', resolve));
        // Once its download is bought, sluice is stopped as a scheduler stops a task: SIGTERM.
        while (slow.emulator.context.state.downloads.length === 0) await sleep(50);
        const sluice = childrenOf(python.pid!);
        assert.equal(sluice.length, 1, 'python runs sluice as its one child');
        process.kill(sluice[0]!, 'SIGTERM');
        assert.equal(await exited, 0, stderr);
        assert.match(stdout, /^retry sluice exit 130 \(interrupted\)/, stdout);
      } finally {
        await slow.close();
      }
    });
  });

  test('the placeholders of example outputs', () => {
    assert.equal(
      normalise('run 0f8fad5b-d9cb-469f-a165-70867728950e at 2026-11-23T20:00:00.123Z in 1.5s'),
      'run <uuid> at <time> in <s>s',
    );
  });
});
