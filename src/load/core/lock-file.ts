import { readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { SluiceError } from '../../errors.js';
import { sleep } from '../../util/sleep.js';
import type { Lock, LockOptions } from '../destination.js';
import { DestinationError } from '../errors.js';

/**
 * A file destination's stand-in for a database server's advisory lock: a small embedded
 * database beside the data (through the embedded database driver sluice ships, whatever the
 * destination's kind), held in an exclusive transaction for the life of the run. Its locks are
 * the operating system's file locks, so the lock goes with the process: a run killed with
 * SIGKILL, in a container where every run is PID 1, leaves nothing to take over by hand.
 */
export async function lockFile(path: string, options: LockOptions): Promise<Lock> {
  let announced = false;
  for (;;) {
    const handle = tryLock(path);
    if (handle) {
      let released = false;
      return {
        where: path,
        async release() {
          if (released) return;
          released = true;
          try {
            handle.exec('ROLLBACK');
          } finally {
            handle.close();
          }
        },
      };
    }
    if (!options.wait) {
      throw new SluiceError(`the lock ${path} is held by another run`, {
        code: 'SLUICE_LOCKED',
      });
    }
    if (!announced) {
      announced = true;
      options.onWait?.(path);
    }
    await sleep(options.pollMs ?? 1000, options.signal);
  }
}

/**
 * The lock `path` (see `lockFile`) taken at once, or undefined when another process, or another
 * handle of this one, holds it; its release is synchronous.
 */
export function tryLockFile(path: string): { release(): void } | undefined {
  const handle = tryLock(path);
  if (handle === undefined) return undefined;
  return {
    release() {
      try {
        handle.exec('ROLLBACK');
      } finally {
        handle.close();
      }
    },
  };
}

/** The open handle holding the lock, or undefined when another process holds it. */
function tryLock(path: string): Database.Database | undefined {
  replaceOldLockFile(path);
  let handle: Database.Database;
  try {
    handle = new Database(path, { timeout: 0 });
  } catch (error) {
    throw new DestinationError(
      `cannot make the lock file ${path} (${(error as Error).message}): sluice keeps a pipeline's lock beside its database file, so its folder must be writable`,
      'SLUICE_DESTINATION_UNUSABLE',
      error,
    );
  }
  try {
    handle.exec('BEGIN EXCLUSIVE');
    return handle;
  } catch (error) {
    handle.close();
    const code = (error as { code?: string }).code ?? '';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return undefined;
    throw error;
  }
}

/**
 * sluice 0.1 wrote its pid into a text file of the same name; that file is not a lock now. A
 * lock file of today is empty (a lock held on a new database writes nothing) or a database of
 * 512 bytes or more, and is never opened here: closing any descriptor of a file drops every
 * lock this process holds on it (POSIX), so reading a lock another handle of this process
 * holds would let another process take it.
 */
function replaceOldLockFile(path: string): void {
  try {
    const size = statSync(path).size;
    if (size === 0 || size > 64) return;
    if (/^\d+\n?$/.test(readFileSync(path, 'utf8'))) rmSync(path, { force: true });
  } catch {
    // no file yet
  }
}

/**
 * The lock `name` of a file database, in a lock file beside the database file found by its real
 * path: two paths to one database (a symbolic link, a linked folder) take the same lock.
 */
export function lockBesideFile(path: string, name: string, options: LockOptions): Promise<Lock> {
  if (path === ':memory:') return Promise.resolve({ where: ':memory:', release: async () => {} });
  return lockFile(lockFileOf(path, name), options);
}

/** The lock file of the lock `name` of the database file at `path` (which must exist). */
export function lockFileOf(path: string, name: string): string {
  return `${realpathSync(path)}.${name.replace(/[^A-Za-z0-9_.-]+/g, '_')}.lock`;
}
