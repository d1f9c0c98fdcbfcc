import { mkdir, rename } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SluiceError, UsageError } from '../errors.js';
import type { Logger } from '../log.js';
import { num, plural } from '../util/words.js';
import { formatOfFile } from './record-count.js';
import { exists, fetchFile, localFileError, localNames, safeName } from './save-file.js';
import type { DownloadInfo, ServiceClient } from './types.js';

export interface FetchDocument {
  id: string;
  state: DownloadInfo['state'];
  num_records: number;
  dir: string;
  /**
   * `index` is the file's position in the download: `name` may not be the service's name.
   * `records`: those counted in it, null when its format is not known.
   */
  files: { index: number; name: string; path: string; bytes: number; records: number | null }[];
  bytes: number;
}

export interface FetchOptions {
  /** The directory to save the files in. */
  out: string;
  /** Overwrite files that exist. */
  force?: boolean | undefined;
  /** Wait for a queued or running download to finish instead of refusing. */
  wait?: boolean | undefined;
  /** Between polls while waiting. */
  pollMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Where progress lines go; none when undefined. */
  progress?: NodeJS.WritableStream | undefined;
  logger?: Logger | undefined;
}

/** What a fetch saved, and the files saved under another name than their own (see `localNames`). */
export interface FetchedDownload {
  doc: FetchDocument;
  renamed: { own: string; index: number; as: string }[];
}

/**
 * Saves every result file of download `id` into a directory under its own name (see
 * `localNames` for files whose names meet). Each file is streamed to `<name>.part` and renamed
 * when complete, so a file with the final name is always whole; existing files are left alone
 * unless `force`. Complete means what the service said: the bytes its server announced, some
 * records in each file, and, where they can be counted, the download's records across its
 * files; files that hold fewer are renamed `<name>.incomplete`. A file that came damaged or
 * empty is fetched again (FILE_TRIES in all).
 */
export async function fetchDownload(
  client: ServiceClient,
  id: string,
  options: FetchOptions,
): Promise<FetchedDownload> {
  const { signal, progress, logger } = options;
  let info = await client.getDownload(id, { signal });
  while ((info.state === 'queued' || info.state === 'running') && options.wait) {
    progress?.write(
      `download ${info.id} is ${info.state}: ${num(info.numRecords)} records so far\n`,
    );
    await sleep(options.pollMs ?? 2000, undefined, { signal });
    info = await client.getDownload(id, { signal });
  }
  if (info.state === 'queued' || info.state === 'running') {
    throw new SluiceError(
      `download ${info.id} is ${info.state} (${num(info.numRecords)} records so far): fetch it when it is completed, or add --wait`,
      { code: 'SLUICE_DOWNLOAD_NOT_READY' },
    );
  }
  if (info.state === 'failed') {
    throw new SluiceError(`download ${info.id} failed${info.error ? `: ${info.error}` : ''}`, {
      code: 'SLUICE_DOWNLOAD_FAILED',
    });
  }

  const dir = resolve(options.out);
  const names = localNames(info.files);
  const targets = info.files.map((file, n) => ({ file, path: join(dir, names[n]!) }));
  if (!options.force) {
    const existing = [];
    for (const t of targets) if (await exists(t.path)) existing.push(t.path);
    if (existing.length > 0) {
      throw new UsageError(
        `${plural(existing.length, 'file')} already exist${existing.length === 1 ? 's' : ''}: ${existing.join(', ')}; add --force to overwrite`,
      );
    }
  }
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    throw localFileError(error, dir);
  }

  const saved: FetchDocument['files'] = [];
  for (const [n, { file, path }] of targets.entries()) {
    const label = `[${n + 1}/${targets.length}] ${basename(path)}`;
    const format = formatOfFile(file.name, info.format);
    const options = { signal, progress, label, format, expected: info.numRecords };
    const { bytes, records } = await fetchFile(client, info.id, file, path, options);
    saved.push({ index: file.index, name: basename(path), path, bytes, records });
  }
  await checkRecords(info, saved, logger);
  const doc: FetchDocument = {
    id: info.id,
    state: info.state,
    num_records: info.numRecords,
    dir,
    files: saved,
    bytes: saved.reduce((sum, f) => sum + f.bytes, 0),
  };
  const renamed = targets
    .filter(({ file, path }) => basename(path) !== safeName(file))
    .map(({ file, path }) => ({ own: safeName(file), index: file.index, as: basename(path) }));
  return { doc, renamed };
}

/**
 * The download's records against those its files hold, where every file could be counted:
 * fewer, and the files are renamed `<name>.incomplete`, so that none is taken for a whole
 * download's, and the fetch fails; more is only worth a warning.
 */
async function checkRecords(
  info: DownloadInfo,
  saved: FetchDocument['files'],
  logger: Logger | undefined,
): Promise<void> {
  if (saved.some((f) => f.records === null)) return;
  const held = saved.reduce((sum, f) => sum + (f.records ?? 0), 0);
  if (held > info.numRecords) {
    logger?.warn(
      `download ${info.id}: its files hold ${num(held)} records, more than the ${num(info.numRecords)} the service counts`,
    );
  }
  if (held >= info.numRecords) return;
  for (const f of saved) {
    try {
      await rename(f.path, `${f.path}.incomplete`);
    } catch (error) {
      throw localFileError(error, f.path);
    }
  }
  const perFile = saved.map((f) => `${f.name} ${num(f.records ?? 0)}`).join(', ');
  throw new SluiceError(
    `download ${info.id} holds ${num(info.numRecords)} records by the service's count, its files ${num(held)} (${perFile}); they are kept as <name>.incomplete, not under their own names: fetch the download again later; if its files stay short, the service delivered fewer records than it counts: ask the service`,
    { code: 'SLUICE_FILE_INCOMPLETE' },
  );
}
