import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tryLockFile } from '../core/lock-file.js';

/**
 * The folder in $TMPDIR where a DuckDB handle puts the files DuckDB's reader takes rows from,
 * `sluice-duckdb-<pid>-XXXXXX`. A handle removes its own when it closes; a run killed, or whose
 * machine stopped, cannot, so each run that opens a DuckDB file for writing removes the folders
 * of handles that are gone. A folder holds a lock (lock-file.ts, the operating system's lock
 * on a file) for the life of its handle: a folder whose lock can be taken is a dead handle's,
 * whatever its PID means in this process's PID namespace, and one whose lock is held is never
 * touched.
 */
export class ScratchFolder {
  private constructor(
    readonly path: string,
    readonly lock: { release(): void },
  ) {}

  static make(): ScratchFolder {
    const path = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`));
    // Made just now, by this process: no other holds the lock.
    const lock = tryLockFile(join(path, LOCK))!;
    return new ScratchFolder(path, lock);
  }

  /**
   * Empties the folder while its lock is held, so that another run tidying $TMPDIR leaves it
   * alone meanwhile, then removes it. A tidying run that looks at the lock in the moment between
   * (opening a lock file makes one) can leave the folder behind; the next run's tidying takes
   * it. Removing is tidying: it never fails the run that made the folder.
   */
  remove(): void {
    try {
      for (const name of readdirSync(this.path)) {
        if (!name.startsWith(LOCK)) rmSync(join(this.path, name), { recursive: true, force: true });
      }
    } catch {
      // Left for the next run's tidying.
    } finally {
      this.lock.release();
    }
    try {
      rmSync(this.path, { recursive: true, force: true });
    } catch {
      // Another run tidying it at the same moment: it is going either way.
    }
  }
}

const PREFIX = 'sluice-duckdb-';
const LOCK = 'handle.lock';
const NAME = /^sluice-duckdb-(\d+)-/;

/**
 * Removes the scratch folders in $TMPDIR of DuckDB handles that are gone. A folder without its
 * lock yet (made a moment ago, its lock not taken yet) is told by its PID. Folders it cannot
 * read or remove are left, as is anything not named as sluice names them: this is tidying, and
 * never fails the run.
 */
export function removeDeadScratch(): void {
  const tmp = tmpdir();
  let names: string[];
  try {
    names = readdirSync(tmp);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = NAME.exec(name)?.[1];
    if (pid === undefined) continue;
    const path = join(tmp, name);
    try {
      if (existsSync(join(path, LOCK))) {
        const lock = tryLockFile(join(path, LOCK));
        if (lock === undefined) continue;
        lock.release();
      } else if (alive(Number(pid))) continue;
      rmSync(path, { recursive: true, force: true });
    } catch {
      // Another user's folder, or one going away meanwhile: not this run's to tidy.
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}
