import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  destinationKinds,
  skipReason,
  type TestTarget,
  targetFactory,
} from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { pipelineHead, runCli, SLUICE_BIN, tempDir, writePipeline } from '../helpers/pipeline.js';

/**
 * Secrets and settings as people who run sluice on a schedule keep them: a `.env` beside the
 * pipeline file, `--env-file`, Docker's and Kubernetes' mounted secrets (`*_FILE`,
 * `${file:PATH}`). `validate` and `status` say where each credential came from; no secret is
 * ever printed or stored.
 */

// Values that cannot turn up in an output by chance.
const PASSWORD = 'pw-Zq81-mounted';
const TOKEN = 'tok-Hx52-portal';

let harness: EmulatorHarness;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({
    scale: 0.05,
    fileRecords: 100,
    password: PASSWORD,
    token: TOKEN,
  });
  dir = tempDir('sluice-secrets-');
});
after(() => harness.close());
beforeEach(() => harness.reset());

/** Only what cron gives a command: no credentials in the environment. */
const BARE = { PATH: process.env.PATH };
const POLL = 'poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }';

/** A folder of its own: `pipes/p.yaml`, its `.env`, and the secret mounted elsewhere. */
function project(name: string, destinationYaml: string, dotEnv: string): string {
  const root = join(dir, name);
  mkdirSync(join(root, 'pipes'), { recursive: true });
  mkdirSync(join(root, 'run', 'secrets'), { recursive: true });
  writeFileSync(join(root, 'run', 'secrets', 'sluice-password'), `${PASSWORD}\n`);
  writeFileSync(join(root, 'pipes', '.env'), dotEnv);
  return writePipeline(
    join(root, 'pipes'),
    'p',
    `${pipelineHead(name, destinationYaml)}jobs:\n  homes: { type: properties, query: 'city:Austin', records: 40, ${POLL} }\n`,
  );
}

function assertNoSecret(text: string, where: string): void {
  assert.ok(!text.includes(PASSWORD), `the password is not in ${where}`);
  assert.ok(!text.includes(TOKEN), `the token is not in ${where}`);
}

/** Every row of every state table, as text. */
async function stateTables(t: TestTarget): Promise<string> {
  const rows = [];
  for (const table of await t.tables('_sluice')) rows.push(await t.all(`select * from ${table}`));
  return JSON.stringify(rows, (_, v) => (typeof v === 'bigint' ? String(v) : v));
}

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);

  describe(`secrets from files on ${kind}`, { skip: reason }, () => {
    test('a .env beside the pipeline file and a mounted secret: the run loads from a bare environment, validate and status say where each credential came from, and no secret is printed or stored', async () => {
      const t = await target('dotenv');
      const file = project(
        `dotenv-${kind}`,
        t.destinationYaml,
        `SLUICE_API_URL=${harness.v4Url}\nSLUICE_EMAIL=${harness.credentials.email}\nSLUICE_PASSWORD_FILE=../run/secrets/sluice-password\n`,
      );
      const pipes = join(file, '..');
      const secret = join(pipes, '..', 'run', 'secrets', 'sluice-password');
      const outputs: string[] = [];
      const cli = async (args: string[]) => {
        const result = await runCli(args, BARE);
        outputs.push(result.stdout, result.stderr);
        return result;
      };
      // -vv: the log at its most talkative (logins, requests) holds no secret either.
      const run = await cli(['run', file, '--json', '--no-progress', '-vv']);
      assert.equal(run.code, 0, run.stderr);
      const summary = JSON.parse(run.stdout);
      assert.equal(summary.status, 'succeeded');
      assert.equal(summary.jobs[0].loaded, 40);

      const validate = await cli(['validate', file, '--json']);
      assert.equal(validate.code, 0, validate.stderr);
      assert.deepEqual(JSON.parse(validate.stdout).credentials, [
        {
          credential: 'source.url',
          from: 'env_file',
          variable: 'SLUICE_API_URL',
          file: join(pipes, '.env'),
        },
        {
          credential: 'source.email',
          from: 'env_file',
          variable: 'SLUICE_EMAIL',
          file: join(pipes, '.env'),
        },
        {
          credential: 'source.password',
          from: 'secret_file',
          file: secret,
          variable: 'SLUICE_PASSWORD_FILE',
        },
      ]);
      const status = await cli(['status', file]);
      assert.equal(status.code, 0, status.stderr);
      const said = status.stdout.slice(status.stdout.indexOf('credential '));
      assert.match(said, new RegExp(`source\\.url +SLUICE_API_URL in ${join(pipes, '.env')}\\n`));
      assert.match(
        said,
        new RegExp(`source\\.password +secret file ${secret} \\(SLUICE_PASSWORD_FILE\\)`),
      );
      const statusJson = await cli(['status', file, '--json']);
      assert.equal(JSON.parse(statusJson.stdout).credentials.length, 3);
      for (const text of outputs) assertNoSecret(text, 'an output');
      assertNoSecret(await stateTables(t), 'the state tables');
    });
  });
}

describe('which value wins', () => {
  test('the environment over --env-file, --env-file over the .env beside the pipeline file', async () => {
    const file = project(
      'precedence',
      `sqlite:${join(dir, 'precedence.sqlite')}`,
      `SLUICE_API_URL=${harness.v4Url}\nSLUICE_EMAIL=${harness.credentials.email}\nSLUICE_PASSWORD=wrong-in-dotenv\n`,
    );
    const ops = join(dir, 'precedence', 'ops.env');
    writeFileSync(ops, `SLUICE_PASSWORD=${PASSWORD}\n`);
    // plan logs in and counts (free): it fails on a wrong password.
    const dotEnvOnly = await runCli(['plan', file], BARE);
    assert.equal(dotEnvOnly.code, 2);
    assert.match(dotEnvOnly.stderr, /401/);
    const withEnvFile = await runCli(['plan', file, '--env-file', ops], BARE);
    assert.equal(withEnvFile.code, 0, withEnvFile.stderr);
    const validate = await runCli(['validate', file, '--env-file', ops, '--json'], BARE);
    assert.deepEqual(JSON.parse(validate.stdout).credentials[2], {
      credential: 'source.password',
      from: 'env_file',
      variable: 'SLUICE_PASSWORD',
      file: ops,
    });
    const environment = await runCli(['plan', file, '--env-file', ops], {
      ...BARE,
      SLUICE_PASSWORD: 'wrong-in-environment',
    });
    assert.equal(environment.code, 2, 'the environment won, and its password is wrong');
    for (const r of [dotEnvOnly, withEnvFile, environment]) {
      assertNoSecret(r.stdout + r.stderr, 'an output');
      assert.ok(!(r.stdout + r.stderr).includes('wrong-in-'), 'no wrong password either');
    }
  });
});

describe('secret files that cannot be read', () => {
  test('a missing or unreadable secret file: exit 2, naming the file, with no stack trace and no secret', async () => {
    const file = project(
      'unreadable',
      `sqlite:${join(dir, 'unreadable.sqlite')}`,
      `SLUICE_API_URL=${harness.v4Url}\nSLUICE_EMAIL=${harness.credentials.email}\n`,
    );
    const missing = join(dir, 'unreadable', 'no-such-secret');
    const gone = await runCli(['run', file, '--no-progress'], {
      ...BARE,
      SLUICE_PASSWORD_FILE: missing,
    });
    assert.equal(gone.code, 2);
    assert.equal(
      gone.stderr,
      `sluice: SLUICE_PASSWORD_FILE: secret file ${missing} cannot be read: no such file\n`,
    );
    const folder = await runCli(['run', file, '--json'], {
      ...BARE,
      SLUICE_PASSWORD_FILE: join(dir, 'unreadable'),
    });
    assert.equal(folder.code, 2);
    const doc = JSON.parse(folder.stdout);
    assert.equal(doc.error.code, 'SLUICE_SECRET_FILE');
    assert.equal(
      doc.error.message,
      `SLUICE_PASSWORD_FILE: secret file ${join(dir, 'unreadable')} is a folder, not a file`,
    );
    // In the pipeline file: the file, the line and the field too.
    const inFile = writePipeline(
      join(dir, 'unreadable'),
      'in-file',
      `version: 1\nname: in-file\nsource:\n  url: ${harness.v4Url}\n  email: a@b.c\n  password: \${file:secrets/pw}\njobs:\n  homes: { type: properties, query: 'city:Austin' }\n`,
    );
    const line = await runCli(['plan', inFile], BARE);
    assert.equal(line.code, 2);
    assert.equal(
      line.stderr,
      `sluice: ${inFile}:6: source.password: secret file ${join(dir, 'unreadable', 'secrets', 'pw')} cannot be read: no such file\n`,
    );
    // validate needs no credentials: it warns, and says where the password would come from.
    const validate = await runCli(['validate', inFile], BARE);
    assert.equal(validate.code, 0, validate.stderr);
    assert.match(
      validate.stderr,
      /WARN: .*in-file\.yaml:6: source\.password: secret file .* cannot be read: no such file \(run needs it; this command does not\)/,
    );
    assert.match(validate.stdout, /source\.password +secret file .*secrets\/pw: cannot be read/);
    for (const r of [gone, folder, line, validate]) {
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
      assertNoSecret(r.stdout + r.stderr, 'an output');
    }
  });
});

describe('commands without a pipeline file', () => {
  /** The installed command in a folder of the user's, as they type it there. */
  function sluice(args: string[], cwd: string) {
    return new Promise<{ code: number | null; stdout: string; stderr: string }>(
      (resolve, reject) => {
        const child = spawn(process.execPath, [SLUICE_BIN, ...args], {
          cwd,
          env: BARE,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      },
    );
  }

  test('read the .env of the current folder, or --env-file', async () => {
    const here = join(dir, 'here');
    mkdirSync(here);
    writeFileSync(
      join(here, '.env'),
      `SLUICE_API_URL=${harness.v4Url}\nSLUICE_API_TOKEN=${TOKEN}\n`,
    );
    const count = await sluice(['count', 'properties', 'city:Austin'], here);
    assert.equal(count.code, 0, count.stderr);
    assert.match(count.stdout, /^\d+\n$/);
    const elsewhere = await sluice(['account', '--env-file', join(here, '.env')], dir);
    assert.equal(elsewhere.code, 0, elsewhere.stderr);
    const none = await sluice(['account'], dir);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no service URL: set SLUICE_API_URL/);
    for (const r of [count, elsewhere, none]) assertNoSecret(r.stdout + r.stderr, 'an output');
  });
});
