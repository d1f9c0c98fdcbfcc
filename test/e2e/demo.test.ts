import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SLUICE_BIN, tempDir } from '../helpers/pipeline.js';

/**
 * `sluice demo` run from a folder of the user's own, as it is when sluice is installed as a
 * package: no pipelines/ there. Its last hint, the `status` command, must run as printed.
 */

function run(command: string, args: string[], cwd: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME };
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('sluice demo', () => {
  test('from another folder: into its data/demo.sqlite, and the status hint runs as printed', async () => {
    const folder = tempDir('sluice-demo-');
    const demo = await run(process.execPath, [SLUICE_BIN, 'demo'], folder);
    assert.equal(demo.code, 0, demo.stderr);
    const db = join(folder, 'data', 'demo.sqlite');
    assert.ok(existsSync(db), 'the database is in the folder it was run from');
    assert.ok(!existsSync(join(folder, 'pipelines')));
    const hint = demo.stdout.trim().split('\n').at(-1)!.trim();
    assert.match(hint, /^SLUICE_DESTINATION=\S+ npx sluice status \S+demo\.yaml$/, hint);
    assert.ok(!hint.endsWith(' pipelines/demo.yaml'), 'no file of that name is in this folder');
    // As a user runs it, with this checkout's sluice standing for the installed one.
    const status = await run(
      '/bin/sh',
      ['-c', hint.replace('npx sluice', `${process.execPath} ${SLUICE_BIN}`)],
      folder,
    );
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^Pipeline 'demo' in sqlite:${db}$`, 'm'));
    assert.match(status.stdout, /succeeded/);
  });
});
