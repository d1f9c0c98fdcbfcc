import { strict as assert } from 'node:assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, runCli, SLUICE_BIN, tempDir, writePipeline } from '../helpers/pipeline.js';
import { postgresSkipReason, postgresUrl } from '../helpers/postgres.js';

/**
 * The machine contract, for every command: with `--json`, stdout holds exactly one JSON
 * document whatever happens (errors included); with `--log-format json`, stderr holds only JSON
 * lines; the exit code is the one the README's table gives for the error code.
 */

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.05, fileRecords: 200 });
  dir = tempDir();
});
after(() => harness.close());
beforeEach(() => harness.reset());

interface Expect {
  exit: number;
  /** The error document's code; undefined when the command's own document is expected. */
  code?: string;
  step?: string;
  line?: number;
}

/** Runs a command the way an orchestrator does and checks the contract; returns the document. */
async function machine(argv: string[], env: NodeJS.ProcessEnv, expect: Expect) {
  const result = await runCli([...argv, '--json', '--log-format', 'json'], env);
  const what = `sluice ${argv.join(' ')}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
  assert.equal(result.code, expect.exit, what);
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(result.stdout);
  } catch {
    assert.fail(`stdout is not exactly one JSON document: ${what}`);
  }
  const lines = result.stderr.split('\n').filter((l) => l.trim() !== '');
  for (const line of lines) {
    let parsed: { level?: unknown; msg?: unknown };
    try {
      parsed = JSON.parse(line);
    } catch {
      assert.fail(`stderr holds a line that is not JSON: ${line}\n${what}`);
    }
    assert.equal(typeof parsed.level, 'string', line);
    assert.equal(typeof parsed.msg, 'string', line);
  }
  if (expect.code !== undefined) {
    assert.equal(doc.status, 'error', what);
    const error = doc.error as Record<string, unknown>;
    assert.equal(error.code, expect.code, what);
    assert.equal(typeof error.message, 'string');
    assert.equal(typeof error.retryable, 'boolean');
    assert.equal(error.retryable, expect.exit === 1, `retryable matches the exit code: ${what}`);
    if (expect.step !== undefined) assert.equal(error.step, expect.step, what);
    if (expect.line !== undefined) assert.equal(error.line, expect.line, what);
    assert.doesNotMatch(String(error.message), /\n\s+at /, 'no stack trace');
  }
  return { doc, lines: lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

function pipelineFile(name: string, body: string): string {
  return writePipeline(dir, name, `version: 1\nname: ${name}\n${body}`);
}

const SOURCE = `source:
  api: v4
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
`;

function simple(name: string, destination: string, extra = ''): string {
  return pipelineFile(
    name,
    `${SOURCE}destination: ${destination}
${extra}jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 50
    poll: { interval: 50ms, timeout: 60s }
`,
  );
}

describe('the machine contract: service commands', () => {
  test('health, account, views, count, preview, downloads, fields: documents and errors', async () => {
    const env = emulatorEnv(harness);
    await machine(['health'], env, { exit: 0 });
    await machine(['health'], { PATH: process.env.PATH }, { exit: 2, code: 'SLUICE_USAGE' });
    await machine(['account'], env, { exit: 0 });
    await machine(
      ['account'],
      { ...env, SLUICE_PASSWORD: 'Wr0ng-pa55word' },
      { exit: 2, code: 'SLUICE_API_401' },
    );
    await machine(
      ['account'],
      // No email and no API token (which v4 also takes): nothing to log in with.
      { ...env, SLUICE_EMAIL: '', SLUICE_API_TOKEN: '' },
      { exit: 2, code: 'SLUICE_CREDENTIALS' },
    );
    await machine(['views', 'list'], env, { exit: 0 });
    await machine(['views', 'show', 'nosuch'], env, { exit: 2, code: 'SLUICE_API_404' });
    // A field sluice's catalogue lacks goes to the service, which decides (here: 400).
    await machine(['views', 'create', 'v', '--fields', 'id,colour'], env, {
      exit: 2,
      code: 'SLUICE_API_400',
    });
    const bad = await machine(
      ['views', 'create', 'v', '--fields', 'id,colour', '--strict-fields'],
      env,
      { exit: 2, code: 'SLUICE_VIEW_FIELD' },
    );
    assert.match(String((bad.doc.error as { message: string }).message), /did you mean 'colors'/);
    await machine(['count', 'properties', 'city:Austin'], env, { exit: 0 });
    await machine(['count', 'properties', 'cty:Austin'], env, { exit: 2, code: 'SLUICE_API_400' });
    await machine(['count', 'properties', 'cty:Austin', '--strict-fields'], env, {
      exit: 2,
      code: 'SLUICE_QUERY_FIELD',
    });
    await machine(['count', 'homes', 'city:Austin'], env, { exit: 2, code: 'SLUICE_USAGE' });
    await machine(['preview', 'properties', 'city:Austin', '--records', '2'], env, { exit: 0 });
    await machine(['preview', 'properties', '*', '--view', 'nosuch'], env, {
      exit: 2,
      code: 'SLUICE_API_400',
    });
    await machine(['downloads', 'list'], env, { exit: 0 });
    await machine(['downloads', 'show', 'nosuch'], env, { exit: 2, code: 'SLUICE_API_404' });
    await machine(['downloads', 'fetch', 'nosuch'], env, { exit: 2, code: 'SLUICE_USAGE' });
    await machine(['targeted-updates', 'list'], env, { exit: 0 });
    await machine(['fields', 'properties'], {}, { exit: 0 });
    await machine(['fields', 'nosuch'], {}, { exit: 2, code: 'SLUICE_USAGE' });
    await machine(['schema'], {}, { exit: 0 });
    await machine(['nosuch'], {}, { exit: 2, code: 'SLUICE_USAGE_ARGUMENTS', step: 'arguments' });
  });

  test('the service failing is worth a retry: exit 1, retryable', async () => {
    await harness.faults([{ match: 'GET /v4/account', action: '503', times: 50, retry_after: 0 }]);
    const { lines } = await machine(['account'], emulatorEnv(harness), {
      exit: 1,
      code: 'SLUICE_API_503',
    });
    assert.ok(
      lines.some((l) => l.client === 'retry' && l.level === 'info'),
      'retries are logged at info',
    );
  });
});

describe('the machine contract: pipeline commands', () => {
  test('pipeline file mistakes: exit 2 with the file and line, before anything else', async () => {
    const env = emulatorEnv(harness);
    const typo = pipelineFile(
      'typo',
      `${SOURCE}destination: sqlite:typo.sqlite\njobs:\n  homes:\n    type: properties\n    query: '*'\n    recods: 5\n`,
    );
    for (const command of ['validate', 'plan', 'run', 'status']) {
      const { doc } = await machine([command, typo], env, {
        exit: 2,
        code: 'SLUICE_SPEC',
        step: 'pipeline-file',
        line: 13,
      });
      assert.equal((doc.error as { file: string }).file, typo);
    }
    await machine(['run', join(dir, 'missing.yaml')], env, { exit: 2, code: 'SLUICE_SPEC' });
    const unset = simple('unset', '${NO_SUCH_DESTINATION}');
    for (const command of ['validate', 'plan', 'run', 'status']) {
      await machine([command, unset], env, { exit: 2, code: 'SLUICE_SPEC' });
    }
  });

  test('a table name the destination reserves (sqlite_master): exit 2 at validate, plan and run, nothing bought', async () => {
    const env = emulatorEnv(harness);
    const reserved = pipelineFile(
      'reserved',
      `${SOURCE}destination: sqlite:reserved.sqlite\njobs:\n  sqlite_master:\n    type: properties\n    query: 'province:TX'\n    records: 50\n  homes:\n    type: properties\n    query: 'province:TX'\n    table: SQLITE_STAT1\n`,
    );
    for (const command of ['validate', 'plan', 'run']) {
      const { doc } = await machine([command, reserved], env, {
        exit: 2,
        code: 'SLUICE_SPEC',
        step: 'pipeline-file',
        line: 10,
      });
      assert.match(
        String((doc.error as { message: string }).message),
        /jobs\.sqlite_master\.table: the job's name 'sqlite_master', its table's name by default, is reserved: SQLite/,
      );
    }
    const service = (await harness.requests()).filter((r) => r.path.startsWith('/v4'));
    assert.deepEqual(service, [], 'not one request: nothing counted, nothing bought');
    assert.equal(harness.emulator.context.state.downloads.length, 0);
    assert.equal(existsSync(join(dir, 'reserved.sqlite')), false, 'no database made');
  });

  test('validate and status need no service credentials; an unset one is a warning', async () => {
    const file = simple('nocreds', 'sqlite:nocreds.sqlite');
    const { doc, lines } = await machine(
      ['validate', file],
      { PATH: process.env.PATH },
      { exit: 0 },
    );
    assert.equal(doc.valid, true);
    assert.ok((doc.warnings as string[]).some((w) => w.includes('SLUICE_API_URL')));
    assert.ok(lines.some((l) => l.level === 'warn' && String(l.msg).includes('SLUICE_PASSWORD')));
    const status = await machine(['status', file], { PATH: process.env.PATH }, { exit: 0 });
    assert.equal(status.doc.state, 'none');
    assert.equal(existsSync(join(dir, 'nocreds.sqlite')), false, 'status creates nothing');
    await machine(['plan', file], { PATH: process.env.PATH }, { exit: 2, code: 'SLUICE_SPEC' });
  });

  test('run: unknown job, held lock, wrong password, guard, success with run_id in every line', async () => {
    const env = emulatorEnv(harness);
    const file = simple('runs', 'sqlite:runs.sqlite');
    await machine(['run', file, '--job', 'nosuch'], env, { exit: 2, code: 'SLUICE_UNKNOWN_JOB' });
    const { openDestination } = await import('../../src/load/index.js');
    const holder = await openDestination(`sqlite:${join(dir, 'runs.sqlite')}`);
    const lock = await holder.lock('pipeline:runs', { wait: false });
    try {
      const { lines } = await machine(['run', file], env, {
        exit: 1,
        code: 'SLUICE_LOCKED',
        step: 'lock',
      });
      assert.ok(
        lines.some((l) => l.level === 'error' && l.pipeline === 'runs'),
        'says which pipeline',
      );
    } finally {
      await lock.release();
      await holder.close();
    }
    // A wrong password is found before anything is written: no database, no failed run.
    const fresh = simple('badlogin', 'sqlite:badlogin.sqlite');
    const refused = await machine(
      ['run', fresh],
      { ...env, SLUICE_PASSWORD: 'Wr0ng-pa55word' },
      { exit: 2, code: 'SLUICE_API_401', step: 'login' },
    );
    assert.ok(
      !JSON.stringify(refused.doc).includes('Wr0ng-pa55word'),
      'the password is never shown',
    );
    assert.equal(existsSync(join(dir, 'badlogin.sqlite')), false, 'no database made');
    await harness.setCredits({ property_credits_allotted: 10, property_credits_used: 0 });
    const guarded = await machine(['run', file], env, { exit: 3 });
    assert.equal(guarded.doc.status, 'refused');
    await harness.reset();
    const done = await machine(['run', file, '--no-progress'], env, { exit: 0 });
    assert.equal(done.doc.status, 'succeeded');
    const runLines = done.lines.filter((l) => l.job !== undefined);
    assert.ok(runLines.length > 0);
    for (const line of runLines) {
      assert.equal(line.pipeline, 'runs');
      assert.equal(line.run_id, done.doc.run_id);
    }
  });

  test('a numeric flag out of range (--parallel abc, 1.5, 0, -3, 100): exit 2, nothing written', async () => {
    const env = emulatorEnv(harness);
    const file = simple('parallel', 'sqlite:parallel.sqlite');
    for (const value of ['abc', '1.5', '0', '-3', '100']) {
      const { doc } = await machine(['run', file, '--parallel', value], env, {
        exit: 2,
        code: 'SLUICE_USAGE_ARGUMENTS',
        step: 'arguments',
      });
      assert.equal(
        (doc.error as { message: string }).message,
        `--parallel must be a whole number from 1 to 64, not ${value}`,
      );
    }
    await machine(['status', file, '--limit', '0'], env, {
      exit: 2,
      code: 'SLUICE_USAGE_ARGUMENTS',
    });
    await machine(['preview', 'properties', '*', '--records', '11'], env, {
      exit: 2,
      code: 'SLUICE_USAGE_ARGUMENTS',
    });
    await machine(['emulator', '--port', '70000'], env, {
      exit: 2,
      code: 'SLUICE_USAGE_ARGUMENTS',
    });
    assert.equal(existsSync(join(dir, 'parallel.sqlite')), false, 'no database, no run in it');
    assert.deepEqual(
      (await harness.requests()).filter((r) => r.path.startsWith('/v4')),
      [],
      'not one request',
    );
    const done = await machine(['run', file, '--parallel', '64', '--no-progress'], env, {
      exit: 0,
    });
    assert.equal(done.doc.status, 'succeeded');
  });

  test('plan works before any run: views the service lacks are named, counts are free', async () => {
    const file = pipelineFile(
      'planned',
      `${SOURCE}destination: sqlite:planned.sqlite
views:
  fresh_view:
    fields: [id, address, city]
jobs:
  homes:
    type: properties
    query: 'province:TX'
    view: fresh_view
    records: 50
  owners:
    type: people
    people_keys_from: homes
`,
    );
    const before = harness.emulator.context.state.account.used.property;
    const { doc } = await machine(['plan', file], emulatorEnv(harness), { exit: 0 });
    assert.deepEqual((doc.views as { create: string[] }).create, ['fresh_view']);
    const jobs = doc.jobs as { job: string; records: number; needed: Record<string, number> }[];
    assert.equal(jobs[0]!.records, 50);
    assert.deepEqual(jobs[1]!.needed, { people: 50 }, 'owner lookups are counted too');
    assert.equal(harness.emulator.context.state.account.used.property, before);
    assert.equal(harness.emulator.context.state.views.size, 0, 'plan creates no view');
  });
});

describe('the machine contract: destinations', async () => {
  const pgSkip = await postgresSkipReason();

  test('PostgreSQL unreachable, a missing database, a missing role', { skip: pgSkip }, async () => {
    const env = emulatorEnv(harness);
    const at = (url: string) => simple(`pg-${Math.random().toString(36).slice(2, 8)}`, `'${url}'`);
    await machine(['run', at('postgresql://postgres@127.0.0.1:1/test')], env, {
      exit: 1,
      code: 'SLUICE_DESTINATION_UNREACHABLE',
      step: 'destination',
    });
    const base = new URL(postgresUrl());
    const noDb = new URL(base);
    noDb.pathname = '/sluice_no_such_database';
    await machine(['run', at(noDb.toString())], env, {
      exit: 2,
      code: 'SLUICE_DESTINATION_MISSING',
    });
    const noRole = new URL(base);
    noRole.username = 'sluice_no_such_role';
    await machine(['run', at(noRole.toString())], env, {
      exit: 2,
      code: 'SLUICE_DESTINATION_AUTH',
    });
  });

  test('SQLite problems: one clear line each, the documented exit code', async () => {
    const env = { ...emulatorEnv(harness), SLUICE_SQLITE_BUSY_TIMEOUT_MS: '200' };
    const problems = join(dir, 'problems');
    mkdirSync(join(problems, 'a-directory.sqlite'), { recursive: true });
    writeFileSync(join(problems, 'not-a-database.sqlite'), 'this is not a database, just text\n');
    const locked = join(problems, 'locked.sqlite');
    const other = new Database(locked);
    other.exec('create table t (a); begin exclusive');
    const readOnly = join(problems, 'read-only.sqlite');
    new Database(readOnly).exec('create table t (a)');
    const readOnlyReady = makeReadOnly(readOnly);
    const cases: [string, number, RegExp][] = [
      [join(problems, 'a-directory.sqlite'), 2, /it is a directory/],
      [join(problems, 'not-a-database.sqlite'), 2, /is not an SQLite database/],
      [join(problems, 'not-a-database.sqlite', 'below.sqlite'), 2, /a file is in its way/],
      [unwritableFolder(problems), 2, /cannot open the SQLite database .*permissions/],
      [locked, 1, /locked by another program/],
    ];
    if (readOnlyReady) cases.push([readOnly, 2, /is read-only/]);
    try {
      for (const [path, exit, message] of cases) {
        const file = simple(`sqlite-${cases.findIndex((c) => c[0] === path)}`, `sqlite:${path}`);
        const text = await runCli(['run', file, '--no-progress'], env);
        assert.equal(text.code, exit, `${path}: ${text.stderr}`);
        const lines = text.stderr.trim().split('\n');
        assert.equal(lines.length, 1, `one line for ${path}: ${text.stderr}`);
        assert.match(lines[0]!, message);
        assert.doesNotMatch(text.stderr, /internal error|\n\s+at /);
        await machine(['run', file], env, { exit, step: 'destination' });
      }
    } finally {
      other.close();
      if (readOnlyReady) spawnSync('chattr', ['-i', readOnly]);
    }
  });

  test('a relative sqlite: path is taken from the pipeline file, not the working directory', async () => {
    const home = join(dir, 'project');
    mkdirSync(join(home, 'pipelines'), { recursive: true });
    const moved = join(home, 'pipelines', 'relative.yaml');
    writeFileSync(
      moved,
      readFileSync(simple('relative', 'sqlite:../data/relative.sqlite'), 'utf8'),
    );
    const elsewhere = tempDir('sluice-cwd-');
    // A separate process, as cron would start it, from another folder.
    const child = spawn(process.execPath, [SLUICE_BIN, 'run', moved, '--no-progress'], {
      cwd: elsewhere,
      env: emulatorEnv(harness),
      stdio: 'ignore',
    });
    const code = await new Promise((resolve) => child.on('exit', resolve));
    assert.equal(code, 0);
    assert.equal(existsSync(join(home, 'data', 'relative.sqlite')), true);
    assert.equal(existsSync(join(elsewhere, '..', 'data', 'relative.sqlite')), false);
  });
});

/** A folder this process cannot create files in: a mode-0500 folder, or /sys for root. */
function unwritableFolder(under: string): string {
  if (process.getuid?.() === 0) return '/sys/sluice-test.sqlite';
  const folder = join(under, 'no-write');
  mkdirSync(folder, { recursive: true, mode: 0o500 });
  return join(folder, 'x.sqlite');
}

/** Makes a file read-only even for root where the file system allows; false when it cannot. */
function makeReadOnly(path: string): boolean {
  if (process.getuid?.() !== 0) {
    execFileSync('chmod', ['0444', path]);
    return true;
  }
  return spawnSync('chattr', ['+i', path]).status === 0;
}
