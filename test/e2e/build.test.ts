import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/pipeline.js';

/**
 * scripts/build.mjs (npm's prepare) rebuilds in place: the first `npx sluice` in a folder runs
 * it while a run of the same install may be importing modules, so it must never remove a file
 * that is still wanted, nor leave one half written.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function build(out: string): void {
  const result = spawnSync(process.execPath, ['scripts/build.mjs', '--out', out], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  assert.equal(result.status, 0, result.stderr);
}

/** Every file under `root`, by its path in it: its inode and its text. */
function files(root: string, dir = root, found = new Map<string, { ino: number; text: string }>()) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path);
    if (stat.isDirectory()) files(root, path, found);
    else found.set(relative(root, path), { ino: stat.ino, text: readFileSync(path, 'utf8') });
  }
  return found;
}

describe('the build', () => {
  test('rebuilds in place: unchanged files stay as they are, a changed one is replaced whole, what no source gives goes', () => {
    const out = join(tempDir('sluice-build-'), 'dist');
    build(out);
    const first = files(out);
    assert.ok(first.has('cli/main.js') && first.has('cli/main.js.map'));

    writeFileSync(join(out, 'errors.js'), 'stale');
    writeFileSync(join(out, 'gone.js'), 'from a source since deleted');
    mkdirSync(join(out, 'old/deeper'), { recursive: true });
    writeFileSync(join(out, 'old/deeper/module.js.map'), '{}');
    writeFileSync(join(out, 'cli/main.js.4242.tmp'), 'another build writing');
    build(out);

    const second = files(out);
    for (const [path, file] of first) {
      const now = second.get(path);
      assert.ok(now, `${path} is still there`);
      assert.equal(now.text, file.text, path);
      // The same file, not a copy: nothing was removed and written again.
      if (path !== 'errors.js') assert.equal(now.ino, file.ino, path);
    }
    assert.notEqual(second.get('errors.js')!.ino, first.get('errors.js')!.ino);
    assert.equal(existsSync(join(out, 'gone.js')), false);
    assert.equal(existsSync(join(out, 'old')), false);
    assert.equal(existsSync(join(out, 'cli/main.js.4242.tmp')), true);
  });
});
