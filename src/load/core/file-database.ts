import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';

/** What the databases in one file share: their URLs, why a file won't open. */

/**
 * The absolute path a file database's URL names (`<scheme>:PATH`, `<scheme>://PATH`, or a bare
 * path ending in one of `extension`), relative paths taken from `baseDir`; undefined for any
 * other URL. A bare path is never a URL of another scheme (`fake:x.db`); a Windows drive letter
 * is no scheme.
 */
export function fileDatabasePath(
  url: string,
  scheme: string,
  extension: RegExp,
  baseDir = process.cwd(),
): string | undefined {
  let path: string | undefined;
  if (url.startsWith(`${scheme}://`)) path = url.slice(scheme.length + 3);
  else if (url.startsWith(`${scheme}:`)) path = url.slice(scheme.length + 1);
  else if (extension.test(url) && !/^[a-z][a-z0-9+.-]+:/i.test(url)) path = url;
  if (!path) return undefined;
  if (path === ':memory:' || isAbsolute(path)) return path;
  return resolve(baseDir, path);
}

/** Why a database file cannot be opened, as far as the file system tells. */
export function cantOpenReason(path: string): string {
  try {
    if (statSync(path).isDirectory()) return 'it is a directory';
  } catch {
    // not there
  }
  if (!existsSync(dirname(path))) return `its folder ${dirname(path)} does not exist`;
  return 'check the permissions of the file and of its folder';
}
