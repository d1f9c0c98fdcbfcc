import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli, SLUICE_BIN, tempDir } from '../helpers/pipeline.js';

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
