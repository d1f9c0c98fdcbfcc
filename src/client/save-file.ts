import { createWriteStream } from 'node:fs';
import { access, rename, rm } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SluiceError } from '../errors.js';
import { num, plural } from '../util/words.js';
import { FILE_TRIES, isTransferFault } from './files.js';
import { type CountedFormat, RecordCounter } from './record-count.js';
import type { ResultFileRef, ServiceClient } from './types.js';

/**
 * One result file saved to a local path: streamed to `<path>.part`, counted as it comes, and
 * renamed when whole; fetched again when it came damaged or empty.
 */

export interface SaveOptions {
  signal?: AbortSignal | undefined;
  progress?: NodeJS.WritableStream | undefined;
  label: string;
  /** How to count the file's records; undefined when its format is not known. */
  format: CountedFormat | undefined;
  /** The download's records (`numRecords`): a file of a download that has some is not empty. */
  expected: number;
}

/** Saves a file, again after it came damaged or empty, FILE_TRIES times in all. */
export async function fetchFile(
  client: ServiceClient,
  downloadId: string,
  file: ResultFileRef,
  path: string,
  options: SaveOptions,
): Promise<{ bytes: number; records: number | null }> {
  for (let tries = 1; ; tries++) {
    try {
      return await saveFile(client, downloadId, file, path, options);
    } catch (error) {
      if (!(error instanceof SluiceError) || !isTransferFault(error)) throw error;
      if (tries >= FILE_TRIES) {
        throw new SluiceError(
          `${error.message}; fetched ${tries} times, it never came whole, and nothing was saved as ${path}: fetch it again later`,
          { code: error.code, cause: error },
        );
      }
      options.progress?.write(`${options.label}  ${error.message}; fetching it again\n`);
    }
  }
}

async function saveFile(
  client: ServiceClient,
  downloadId: string,
  file: ResultFileRef,
  path: string,
  options: SaveOptions,
): Promise<{ bytes: number; records: number | null }> {
  const { progress, label } = options;
  const live = progress !== undefined && (progress as { isTTY?: boolean }).isTTY === true;
  const part = `${path}.part`;
  let bytes = 0;
  let lastShown = 0;
  const records = options.format === undefined ? undefined : new RecordCounter(options.format);
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      records?.add(chunk);
      const now = Date.now();
      if (live && now - lastShown > 200) {
        lastShown = now;
        progress.write(`\r${label}  ${num(bytes)} bytes`);
      }
      done(null, chunk);
    },
  });
  let counted: number | null = null;
  try {
    const source = await client.openResultFile(downloadId, file, { signal: options.signal });
    const out = createWriteStream(part);
    // The file's own failures (a full disk) are this machine's, never the connection's. The
    // stream also errs with what broke the pipeline elsewhere: that is the client's SluiceError.
    let writeFailure: { error: unknown } | undefined;
    out.once('error', (error) => {
      writeFailure = { error };
    });
    try {
      await pipeline(source, counter, out, { signal: options.signal });
    } catch (error) {
      throw writeFailure ? localFileError(writeFailure.error, part) : error;
    }
    counted = records?.end() ?? null;
    if (options.expected > 0 && (bytes === 0 || counted === 0)) {
      throw new SluiceError(
        `result file ${file.name} came with no records (${plural(bytes, 'byte')}), where download ${downloadId} holds ${num(options.expected)}`,
        { code: 'SLUICE_FILE_INCOMPLETE' },
      );
    }
    try {
      await rename(part, path);
    } catch (error) {
      throw localFileError(error, path);
    }
  } catch (error) {
    await rm(part, { force: true });
    if (live) progress.write('\n');
    throw error;
  }
  if (progress) progress.write(`${live ? '\r' : ''}${label}  ${num(bytes)} bytes, done\n`);
  return { bytes, records: counted };
}

/**
 * A local file error as sluice says it: a full disk or quota is SLUICE_DISK_FULL (worth a retry
 * once there is room), any other (a folder not writable, read-only, not a folder) a mistake to
 * fix, naming the path. Errors that are not the file system's pass through.
 */
export function localFileError(error: unknown, path: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof SluiceError || typeof code !== 'string' || !/^E[A-Z0-9]+$/.test(code)) {
    return error;
  }
  // Node's "ENOSPC: no space left on device, write": the system's words, without the call.
  const message = error instanceof Error ? error.message : String(error);
  const said = new RegExp(`^${code}: ([^,]+)`).exec(message)?.[1] ?? message;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new SluiceError(
      `no room to save ${path}: ${said} (${code}); free some space, or save elsewhere with --out, and fetch again`,
      { code: 'SLUICE_DISK_FULL', cause: error },
    );
  }
  return new SluiceError(
    `cannot save ${path}: ${said} (${code}); give --out a folder you can write to`,
    { code: 'SLUICE_USAGE', cause: error },
  );
}

/** The file's own name, without any directory part a URL could smuggle in. */
export function safeName(file: ResultFileRef): string {
  const name = basename(file.name || `file_${file.index}`);
  return name === '' || name === '.' || name === '..' ? `file_${file.index}` : name;
}

/**
 * A name for each result file, unique within the download. Two URLs can end in the same name
 * (other folders, other query strings), and saving both under it would keep only the last. Each
 * file keeps its own name when no earlier file has it; the others get `-1`, `-2`, ... before the
 * extension, in file order, so the same download is saved under the same names every time.
 * Names are compared regardless of case, as macOS and Windows file systems compare them, and no
 * name is another's `.part` file, which would be written over while that one downloads.
 */
export function localNames(files: readonly ResultFileRef[]): string[] {
  const taken = new Set<string>();
  const key = (name: string) => name.normalize('NFC').toLowerCase();
  const free = (name: string) => !taken.has(key(name)) && !taken.has(key(`${name}.part`));
  const take = (name: string) => {
    taken.add(key(name));
    taken.add(key(`${name}.part`));
    return name;
  };
  // Own names first, so a later file's own name is not given to an earlier duplicate.
  const own = files.map((file) => {
    const name = safeName(file);
    return free(name) ? take(name) : undefined;
  });
  return own.map((name, n) => {
    if (name !== undefined) return name;
    const [stem, extension] = splitExtension(safeName(files[n]!));
    for (let k = 1; ; k++) {
      const candidate = `${stem}-${k}${extension}`;
      if (free(candidate)) return take(candidate);
    }
  });
}

/** `x.csv.gz` as `x` and `.csv.gz`: a renamed copy is `x-1.csv.gz`, not `x.csv-1.gz`. */
function splitExtension(name: string): [string, string] {
  const extension = /(?:\.[^.]+)?\.(?:gz|bz2|xz|zst)$/i.exec(name)?.[0] ?? extname(name);
  return extension.length > 0 && extension.length < name.length
    ? [name.slice(0, -extension.length), extension]
    : [name, ''];
}

export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
