import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * SQLite's stand-in for PostgreSQL's advisory lock: a lock file beside the database, created
 * exclusively and holding the owner's pid. A file left by a process that died is taken over.
 */
export async function lockFile(
  path: string,
  wait: boolean,
): Promise<{ release(): Promise<void> } | undefined> {
  for (;;) {
    if (tryCreate(path)) {
      let released = false;
      return {
        async release() {
          if (released) return;
          released = true;
          rmSync(path, { force: true });
        },
      };
    }
    if (isStale(path)) {
      rmSync(path, { force: true });
      continue;
    }
    if (!wait) return undefined;
    await sleep(200);
  }
}

function tryCreate(path: string): boolean {
  try {
    const fd = openSync(path, 'wx');
    writeSync(fd, `${process.pid}\n`);
    closeSync(fd);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

function isStale(path: string): boolean {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
  } catch {
    return false; // being written or just removed: look again
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
