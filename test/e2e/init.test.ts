import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { EmulatorHarness } from '../helpers/emulator.js';
import { runCli, SLUICE_BIN, tempDir } from '../helpers/pipeline.js';

/**
 * `sluice init`: a first pipeline in one command, as a newcomer and a script run it. What it
 * writes passes `validate`, and its cron line runs under cron's bare environment against the
 * emulator, with the credentials in the `.env` made from its `.env.example`.
 */

const PASSWORD = 'pw-Init-4417';

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.2, fileRecords: 100, password: PASSWORD });
  dir = tempDir('sluice-init-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

const BARE = { PATH: process.env.PATH };

function credentials(): NodeJS.ProcessEnv {
  return {
    ...BARE,
    SLUICE_API_URL: harness.v4Url,
    SLUICE_EMAIL: harness.credentials.email,
    SLUICE_PASSWORD: PASSWORD,
  };
}

/** The installed command with answers piped in, as a script or a user without a terminal. */
function piped(args: string[], answers: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, ...args], {
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(answers);
  });
}

function run(command: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

/** Each file of a folder, as text. */
function contents(folder: string): string {
  return readdirSync(folder)
    .filter((f) => !f.endsWith('.sqlite') && f !== 'data')
    .map((f) => readFileSync(join(folder, f), 'utf8'))
    .join('\n');
}

describe('sluice init --yes', () => {
  test('writes a pipeline that validate accepts and whose cron line loads from a .env, counting the query for free', async () => {
    const folder = join(dir, 'austin');
    const query = 'city:Austin AND province:TX';
    const init = await runCli(
      ['init', '--yes', '--query', query, '--records', '120', '--dir', folder],
      credentials(),
    );
    assert.equal(init.code, 0, init.stderr);
    const count = await runCli(['count', 'properties', query], credentials());
    const found = Number(count.stdout);
    assert.ok(found > 120);
    assert.equal(
      init.stdout.split('\n')[0],
      `${found.toLocaleString('en-US')} properties match ${query} (counted for free)`,
    );
    assert.deepEqual(readdirSync(folder).sort(), [
      '.env.example',
      'austin.cron',
      'austin.yaml',
      'sluice-austin.service',
      'sluice-austin.timer',
    ]);
    const file = join(folder, 'austin.yaml');
    const text = readFileSync(file, 'utf8');
    assert.match(text, /^name: austin$/m);
    assert.match(text, /^ {4}query: 'city:Austin AND province:TX' {3}# [\d,]+ matched/m);
    assert.match(text, /^ {4}records: 120 /m);
    assert.match(text, /^destination: sqlite:data\/austin\.sqlite /m);
    const validate = await runCli(['validate', file], BARE);
    assert.equal(validate.code, 0, validate.stderr);
    assert.match(validate.stdout, /valid pipeline 'austin' \(1 job, 0 views\)/);

    // The user's step: .env from .env.example, filled in. The URL is there already.
    const example = readFileSync(join(folder, '.env.example'), 'utf8');
    assert.match(example, new RegExp(`^SLUICE_API_URL=${harness.v4Url}$`, 'm'));
    writeFileSync(
      join(folder, '.env'),
      example
        .replace(/^SLUICE_EMAIL=$/m, `SLUICE_EMAIL=${harness.credentials.email}`)
        .replace(/^SLUICE_PASSWORD=$/m, `SLUICE_PASSWORD=${PASSWORD}`),
    );
    // The cron line as written, under cron's environment: a bare PATH, another folder.
    const line = readFileSync(join(folder, 'austin.cron'), 'utf8')
      .split('\n')
      .find((l) => l !== '' && !l.startsWith('#'))!;
    const cron = await run(line.split(/\s+/).slice(5).join(' '), {
      PATH: '/usr/bin:/bin',
      HOME: process.env.HOME,
    });
    assert.equal(cron.code, 0, cron.stderr);
    const summary = JSON.parse(readFileSync(join(folder, 'austin.last-run.json'), 'utf8'));
    assert.equal(summary.status, 'succeeded');
    assert.equal(summary.jobs[0].loaded, 120);
    assert.ok(existsSync(join(folder, 'data', 'austin.sqlite')));
    for (const entry of readFileSync(join(folder, 'austin.log'), 'utf8').trim().split('\n')) {
      assert.equal(typeof JSON.parse(entry).msg, 'string', entry);
    }
    // No secret in what init wrote or said (the .env is the user's own).
    const written = contents(folder).replace(readFileSync(join(folder, '.env'), 'utf8'), '');
    assert.ok(!written.includes(PASSWORD), 'the password is in no file init wrote');
    assert.ok(!(init.stdout + init.stderr).includes(PASSWORD));
  });

  test('its systemd units keep the rules docs/scheduling.md tests: start limits in [Unit], no restart for 2, 3 or 4', () => {
    const folder = join(dir, 'units');
    const result = spawnSync(
      process.execPath,
      [SLUICE_BIN, 'init', '--yes', '--query', 'city:Austin', '--dir', folder],
      { env: BARE, encoding: 'utf8' },
    );
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /^not counted: no service URL/);
    const service = readFileSync(join(folder, 'sluice-units.service'), 'utf8');
    const sections = new Map<string, string[]>();
    let at = '';
    for (const line of service.split('\n')) {
      const head = /^\[(\w+)\]$/.exec(line);
      if (head) at = head[1]!;
      else if (/^\w+=/.test(line))
        sections.set(at, [...(sections.get(at) ?? []), line.split('=')[0]!]);
    }
    assert.deepEqual(
      sections.get('Unit')?.filter((k) => k.startsWith('StartLimit')),
      ['StartLimitIntervalSec', 'StartLimitBurst'],
    );
    assert.ok(!sections.get('Service')?.some((k) => k.startsWith('StartLimit')));
    assert.match(service, /^RestartPreventExitStatus=2 3 4$/m);
    assert.match(service, new RegExp(`^WorkingDirectory=${folder}$`, 'm'));
    assert.match(
      service,
      new RegExp(
        `^ExecStart=${process.execPath} .*bin/sluice\\.js run ${folder}/units\\.yaml --json`,
        'm',
      ),
    );
    if (spawnSync('systemd-analyze', ['--version']).status !== 0) return;
    const verify = spawnSync(
      'systemd-analyze',
      ['verify', join(folder, 'sluice-units.timer'), join(folder, 'sluice-units.service')],
      { encoding: 'utf8' },
    );
    assert.equal(verify.status, 0, verify.stderr);
    assert.doesNotMatch(verify.stderr, /Unknown key|ignoring|not executable/);
  });

  test('refuses files that exist unless --force; the same answers again change nothing', async () => {
    const folder = join(dir, 'again');
    const args = ['init', '--yes', '--query', 'city:Austin', '--dir', folder];
    assert.equal((await runCli(args, BARE)).code, 0);
    const same = await runCli(args, BARE);
    assert.equal(same.code, 0, same.stderr);
    assert.match(same.stdout, /left unchanged again\.yaml, \.env\.example, again\.cron/);
    const other = await runCli([...args, '--records', '7'], BARE);
    assert.equal(other.code, 2);
    assert.equal(
      other.stderr,
      `sluice: ${join(folder, 'again.yaml')} exists: nothing was written (--force replaces it, or give another --name or --dir)\n`,
    );
    assert.match(readFileSync(join(folder, 'again.yaml'), 'utf8'), /^ {4}records: 100 /m);
    const forced = await runCli([...args, '--records', '7', '--force'], BARE);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(readFileSync(join(folder, 'again.yaml'), 'utf8'), /^ {4}records: 7 /m);
  });

  test('counts with the credentials of the .env in the folder it writes into', async () => {
    const folder = join(dir, 'counted');
    mkdirSync(folder);
    writeFileSync(
      join(folder, '.env'),
      `SLUICE_API_URL=${harness.v4Url}\nSLUICE_EMAIL=${harness.credentials.email}\nSLUICE_PASSWORD=${PASSWORD}\n`,
    );
    const init = await runCli(['init', '--yes', '--query', 'city:Austin', '--dir', folder], BARE);
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.stdout, /^[\d,]+ properties match city:Austin \(counted for free\)\n/);
    assert.match(
      readFileSync(join(folder, 'counted.yaml'), 'utf8'),
      /^ {2}email: \$\{SLUICE_EMAIL\}$/m,
    );
    assert.ok(!(init.stdout + init.stderr).includes(PASSWORD));
    // The .env is the user's: init writes its .env.example beside it and leaves it as it was.
    assert.match(readFileSync(join(folder, '.env'), 'utf8'), new RegExp(PASSWORD));
  });

  test('asks nothing: a missing --query or a wrong flag is exit 2, and nothing is written', async () => {
    const folder = join(dir, 'flags');
    const none = await runCli(['init', '--yes', '--dir', folder], BARE);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /sluice init --yes asks nothing: give --query/);
    const syntax = await runCli(
      ['init', '--yes', '--query', 'city:(Austin', '--dir', folder],
      BARE,
    );
    assert.equal(syntax.code, 2);
    assert.match(syntax.stderr, /\^/);
    const records = await runCli(
      ['init', '--yes', '--query', 'city:Austin', '--records', 'lots', '--dir', folder],
      BARE,
    );
    assert.equal(records.code, 2);
    assert.match(records.stderr, /records must be a whole number at least 1, not lots/);
    const destination = await runCli(
      ['init', '--yes', '--query', 'city:Austin', '--destination', 'mysql://x', '--dir', folder],
      BARE,
    );
    assert.equal(destination.code, 2);
    assert.match(destination.stderr, /destination 'mysql:\/\/x' is not understood/);
    assert.ok(!existsSync(folder));
  });
});

describe('sluice init, asking', () => {
  test('answers piped in: a wrong answer is said and asked again; the count comes before the records', async () => {
    const folder = join(dir, 'asked');
    const answers = [
      'peple', // not a data type: asked again
      'people',
      'city:Austin AND', // does not parse: asked again
      'city:Austin',
      'all',
      '', // the default destination
    ].join('\n');
    const result = await piped(['init', '--dir', folder], `${answers}\n`, credentials());
    assert.equal(result.code, 0, result.stderr);
    const asked = result.stderr.split('\n');
    assert.equal(asked[0], 'Data type (properties, businesses, products, people) [properties]: ');
    assert.match(result.stderr, /unknown data type 'peple'.*\(did you mean people\?\)/);
    assert.match(
      result.stderr,
      /unexpected 'AND' at end of query\n {4}city:Austin AND\n {16}\^\^\^/,
    );
    const count = await runCli(['count', 'people', 'city:Austin'], credentials());
    const found = Number(count.stdout).toLocaleString('en-US');
    assert.match(
      result.stderr,
      new RegExp(`  ${found} people match \\(a free count\\)\\nRecords to buy each run`),
    );
    const text = readFileSync(join(folder, 'asked.yaml'), 'utf8');
    assert.match(text, /^ {2}people:\n {4}type: people\n {4}query: 'city:Austin'/m);
    assert.match(text, /^ {4}records: all /m);
    assert.match(text, /^destination: sqlite:data\/asked\.sqlite /m);
    const validate = await runCli(['validate', join(folder, 'asked.yaml')], BARE);
    assert.equal(validate.code, 0, validate.stderr);
    assert.ok(!(result.stdout + result.stderr).includes(PASSWORD));
  });

  test('the input ends before the last answer: exit 2, saying so, and nothing is written', async () => {
    const folder = join(dir, 'ended');
    const result = await piped(['init', '--dir', folder], 'properties\n', BARE);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /sluice: no answer to "Query \(e\.g\. city:Austin AND province:TX\)" \(the input ended\): nothing was written; in a script, give sluice init --yes and the flags\n$/,
    );
    assert.ok(!existsSync(folder));
  });
});
