import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { tryLockFile } from '../../../src/load/core/lock-file.js';
import { removeDeadScratch, ScratchFolder } from '../../../src/load/duckdb/scratch.js';
import { tempDir } from '../../helpers/pipeline.js';

/** A PID no process has now: one of a process that has ended. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid!;
}

describe('DuckDB scratch folders left by killed runs', () => {
  const before = process.env.TMPDIR;
  let tmp: string;
  beforeEach(() => {
    tmp = tempDir('sluice-scratch-');
    process.env.TMPDIR = tmp;
  });
  afterEach(() => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
  });

  test("killed runs' folders stayed in $TMPDIR for good: now removed, never a live handle's", () => {
    const live = ScratchFolder.make();
    assert.match(live.path, new RegExp(`sluice-duckdb-${process.pid}-`));
    // A dead handle's folder: its lock free, whatever its PID says.
    const dead = join(tmp, `sluice-duckdb-${process.pid}-dead00`);
    mkdirSync(dead);
    tryLockFile(join(dead, 'handle.lock'))!.release();
    writeFileSync(join(dead, 'rows.txt'), 'a\tb\n');
    // No lock yet: told by its PID.
    const gone = join(tmp, `sluice-duckdb-${deadPid()}-gone00`);
    const starting = join(tmp, `sluice-duckdb-${process.pid}-new000`);
    mkdirSync(gone);
    mkdirSync(starting);
    // Not named by sluice (or by a sluice before the PID was in the name): left alone.
    const other = join(tmp, 'sluice-duckdb-abc123');
    mkdirSync(other);

    removeDeadScratch();
    assert.ok(existsSync(live.path), 'a live handle keeps its folder');
    assert.ok(!existsSync(dead), 'a dead handle loses its');
    assert.ok(!existsSync(gone), 'a folder without a lock, of a PID gone');
    assert.ok(existsSync(starting), 'a folder without a lock yet, of a live PID');
    assert.ok(existsSync(other));
    live.remove();
    assert.ok(!existsSync(live.path));
  });
});

describe('a DuckDB handle closing while another run tidies $TMPDIR', () => {
  test('its folder went away under it, or a lock file came back into it: closing never fails', () => {
    const tmp = tempDir('sluice-scratch-');
    const before = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      // Another run's tidying removed the folder first: nothing left to do, and no error.
      const taken = ScratchFolder.make();
      writeFileSync(join(taken.path, 'rows.txt'), 'a\tb\n');
      rmSync(taken.path, { recursive: true, force: true });
      assert.doesNotThrow(() => taken.remove());
      // Another run's look at the lock put a lock file back: the folder is left for the next
      // run's tidying, which takes it since no handle holds that lock.
      const left = ScratchFolder.make();
      writeFileSync(join(left.path, 'rows.txt'), 'a\tb\n');
      left.remove();
      mkdirSync(left.path, { recursive: true });
      tryLockFile(join(left.path, 'handle.lock'))!.release();
      removeDeadScratch();
      assert.ok(!existsSync(left.path));
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
  });
});

describe('a lock held while this process looks at it again', () => {
  test("another process cannot take it: this process's own look never drops it", () => {
    const dir = tempDir('sluice-lock-');
    const path = join(dir, 'handle.lock');
    const held = tryLockFile(path)!;
    try {
      // This process tidying (another DuckDB handle opening) looks at the lock it holds.
      assert.equal(tryLockFile(path), undefined);
      // Another process cannot take it (reading the lock file here dropped it, before).
      const other = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '-e',
          `import(${JSON.stringify(new URL('../../../src/load/core/lock-file.ts', import.meta.url).href)}).then(({ tryLockFile }) => { process.stdout.write(tryLockFile(${JSON.stringify(path)}) === undefined ? 'held' : 'taken'); })`,
        ],
        { encoding: 'utf8' },
      );
      assert.equal(other.stdout, 'held', other.stderr);
    } finally {
      held.release();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
