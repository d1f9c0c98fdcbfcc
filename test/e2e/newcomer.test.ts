import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli, SLUICE_BIN, tempDir, writePipeline } from '../helpers/pipeline.js';
import { postgresSkipReason, postgresUrl } from '../helpers/postgres.js';

/**
 * Promises a newcomer checks on the first day, each named after what was found broken.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;

describe("a newcomer's first commands", () => {
  test("--version prints sluice's version, not the host project's, and JSON with --json", () => {
    // sluice installed as a dependency of another project: run from that project's folder.
    const host = tempDir('sluice-host-');
    writeFileSync(join(host, 'package.json'), JSON.stringify({ name: 'host', version: '9.9.9' }));
    const text = spawnSync(process.execPath, [SLUICE_BIN, '--version'], {
      cwd: host,
      encoding: 'utf8',
    });
    assert.equal(text.status, 0, text.stderr);
    assert.equal(text.stdout.trim(), VERSION);
    const json = spawnSync(process.execPath, [SLUICE_BIN, '--version', '--json'], {
      cwd: host,
      encoding: 'utf8',
    });
    assert.deepEqual(JSON.parse(json.stdout), { name: 'sluice', version: VERSION });
  });

  test('`sluice run` without a file says what it needs; --dry-run points to plan', async () => {
    const bare = await runCli(['run'], { PATH: process.env.PATH });
    assert.equal(bare.code, 2);
    assert.match(
      bare.stderr,
      /sluice run needs a pipeline file: e\.g\. sluice run pipelines\/demo\.yaml/,
    );
    assert.doesNotMatch(bare.stderr, /non-option arguments/);
    const dry = await runCli(['run', 'pipelines/demo.yaml', '--dry-run'], {
      PATH: process.env.PATH,
    });
    assert.equal(dry.code, 2);
    assert.match(dry.stderr, /--dry-run.*sluice plan FILE/);
  });

  test('NO_COLOR keeps colours out of the log on a terminal', (t) => {
    // `script` gives the command a terminal (util-linux); without one nothing is coloured anyway.
    if (spawnSync('script', ['--version']).status !== 0) {
      t.skip('no script(1) here to give the command a terminal');
      return;
    }
    // Unset variables of the source are warned of: log lines, coloured on a terminal.
    const command = `${process.execPath} ${SLUICE_BIN} validate ${join(ROOT, 'pipelines/austin-homes.yaml')}`;
    const run = (env: NodeJS.ProcessEnv) =>
      spawnSync('script', ['-qec', command, '/dev/null'], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, ...env },
      }).stdout;
    assert.match(run({}), /\x1b\[33mWARN/, 'colours on a terminal');
    const plain = run({ NO_COLOR: '1' });
    assert.match(plain, /WARN: /);
    assert.doesNotMatch(plain, /\x1b\[\d+m/, 'none with NO_COLOR');
  });
});

describe('destinations as a newcomer names them', () => {
  test("status names SLUICE_DESTINATION where it looked, not the file's destination", async () => {
    const dir = tempDir('sluice-status-');
    const file = writePipeline(
      dir,
      'where',
      "version: 1\nname: where\nsource: { url: 'http://127.0.0.1:1/v4' }\ndestination: sqlite:from-the-file.sqlite\njobs:\n  homes: { type: properties, query: 'city:Austin' }\n",
    );
    const other = join(dir, 'from-the-environment.sqlite');
    const result = await runCli(['status', file], {
      PATH: process.env.PATH,
      SLUICE_DESTINATION: `sqlite:${other}`,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /no state found at sqlite:.*from-the-environment\.sqlite/);
    assert.doesNotMatch(result.stdout, /from-the-file/);
  });

  test('sslmode as libpq reads it: require against a server without TLS is one clear line; no driver warning', async (t) => {
    const skip = await postgresSkipReason();
    if (skip) {
      t.skip(skip);
      return;
    }
    const dir = tempDir('sluice-tls-');
    const file = writePipeline(
      dir,
      'tls',
      "version: 1\nname: tls\nsource: { url: 'http://127.0.0.1:1/v4' }\ndestination: sqlite:x.sqlite\njobs:\n  homes: { type: properties, query: 'city:Austin' }\n",
    );
    const url = new URL(postgresUrl());
    const status = async (mode: string) => {
      url.searchParams.set('sslmode', mode);
      return runCli(['status', file, '--log-format', 'json'], {
        PATH: process.env.PATH,
        SLUICE_DESTINATION: url.toString(),
      });
    };
    for (const mode of ['disable', 'prefer']) {
      const ok = await status(mode);
      assert.equal(ok.code, 0, `${mode}: ${ok.stderr}`);
      for (const line of ok.stderr.split('\n').filter(Boolean)) JSON.parse(line);
      assert.doesNotMatch(ok.stderr, /SECURITY WARNING/);
    }
    const server = await status('require');
    const ssl = (await import('pg')).default;
    const probe = new ssl.Client({ connectionString: postgresUrl() });
    await probe.connect();
    const on = (await probe.query('show ssl')).rows[0].ssl === 'on';
    await probe.end();
    if (on) return; // this server has TLS: require works, as it should
    assert.equal(server.code, 2, server.stderr);
    const lines = server.stderr.trim().split('\n');
    assert.equal(
      lines.length,
      1,
      `one line, no warning of unset variables status never uses: ${server.stderr}`,
    );
    const logged = JSON.parse(lines[0]!);
    assert.equal(logged.code, 'SLUICE_DESTINATION_TLS');
    assert.match(logged.msg, /does not accept TLS connections.*sslmode/);
    assert.doesNotMatch(server.stderr, /internal error|at .*\.js:\d+/);
  });
});
