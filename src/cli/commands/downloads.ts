import { createWriteStream } from 'node:fs';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Argv } from 'yargs';
import { FILE_TRIES, isTransferFault } from '../../client/index.js';
import { type CountedFormat, formatOfFile, RecordCounter } from '../../client/record-count.js';
import type { DownloadInfo, ResultFileRef, ServiceClient } from '../../client/types.js';
import { SluiceError, UsageError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { connectionOptions, type JsonArgs, withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import { plural } from '../format.js';
import { formatTable, type Io, writeJson, writeLine } from '../output.js';

/**
 * A download as the CLI reports it. File URLs are left out: they are pre-signed, change on every
 * call and expire, so they belong to `fetch`, not to a document someone might keep.
 */
export interface DownloadDocument {
  id: string;
  state: DownloadInfo['state'];
  numRecords: number;
  numFound: number | null;
  createdAt: string | null;
  type: string | null;
  query: string | null;
  format: string | null;
  error: string | null;
  files: { index: number; name: string }[];
}

export function downloadDocument(d: DownloadInfo): DownloadDocument {
  return {
    id: d.id,
    state: d.state,
    numRecords: d.numRecords,
    numFound: d.numFound ?? null,
    createdAt: d.createdAt ?? null,
    type: d.type ?? null,
    query: d.query ?? null,
    format: d.format ?? null,
    error: d.error ?? null,
    files: d.files.map((f) => ({ index: f.index, name: f.name })),
  };
}

export async function downloadsListCommand(
  client: ServiceClient,
  args: JsonArgs,
  io: Io,
  signal?: AbortSignal,
): Promise<{ downloads: DownloadDocument[] }> {
  const downloads = (await client.listDownloads({ signal })).map(downloadDocument);
  const doc = { downloads };
  if (args.json) writeJson(io.stdout, doc);
  else if (downloads.length === 0) writeLine(io.stdout, 'No downloads yet.');
  else {
    // Columns the service fills only in some API versions (v3 says found, type and query).
    const columns: [string, (d: DownloadDocument) => unknown][] = [
      ['id', (d) => d.id],
      ['state', (d) => d.state],
      ['records', (d) => d.numRecords],
      ['found', (d) => d.numFound],
      ['files', (d) => d.files.length],
      ['created', (d) => d.createdAt],
      ['type', (d) => d.type],
      ['query', (d) => d.query],
    ];
    const shown = columns.filter(([, get]) => downloads.some((d) => get(d) !== null));
    writeLine(
      io.stdout,
      formatTable(
        shown.map(([name]) => name),
        downloads.map((d) => shown.map(([, get]) => get(d) ?? '')),
      ),
    );
  }
  return doc;
}

export async function downloadsShowCommand(
  client: ServiceClient,
  args: JsonArgs & { id: string },
  io: Io,
  signal?: AbortSignal,
): Promise<DownloadDocument> {
  const doc = downloadDocument(await client.getDownload(args.id, { signal }));
  if (args.json) {
    writeJson(io.stdout, doc);
    return doc;
  }
  const rows: [string, string][] = [
    ['state', doc.state],
    [
      'records',
      doc.numFound === null
        ? num(doc.numRecords)
        : `${num(doc.numRecords)} of ${num(doc.numFound)} found`,
    ],
  ];
  if (doc.createdAt) rows.push(['created', doc.createdAt]);
  if (doc.type) rows.push(['type', doc.type]);
  if (doc.query) rows.push(['query', doc.query]);
  if (doc.format) rows.push(['format', doc.format]);
  if (doc.error) rows.push(['error', doc.error]);
  rows.push([
    'files',
    doc.files.length === 0 ? 'none yet' : doc.files.map((f) => f.name).join(', '),
  ]);
  writeLine(io.stdout, `Download ${doc.id}`);
  for (const [key, value] of rows) writeLine(io.stdout, `  ${key.padEnd(8)} ${value}`);
  return doc;
}

export async function downloadsCancelCommand(
  client: ServiceClient,
  args: JsonArgs & { id: string },
  io: Io,
  signal?: AbortSignal,
): Promise<DownloadDocument> {
  await client.cancelDownload(args.id, { signal });
  // Records delivered before the cancellation stay retrievable, and are paid for: say how many.
  const doc = downloadDocument(await client.getDownload(args.id, { signal }));
  if (args.json) writeJson(io.stdout, doc);
  else {
    writeLine(
      io.stdout,
      doc.numRecords === 0
        ? `Cancelled download ${doc.id} before any record was delivered.`
        : `Cancelled download ${doc.id}: the ${plural(doc.numRecords, 'record')} delivered before the cancellation stay retrievable and are charged.`,
    );
  }
  return doc;
}

export interface DownloadsFetchArgs extends JsonArgs {
  id: string;
  /** Required; checked by the command so the message can say what to give. */
  out?: string;
  force?: boolean;
  /** Wait for a queued or running download to finish instead of refusing. */
  wait?: boolean;
  /** Between polls while waiting. */
  pollMs?: number;
  /** No progress lines on stderr. */
  quiet?: boolean;
}

export interface FetchDocument {
  id: string;
  state: DownloadInfo['state'];
  numRecords: number;
  dir: string;
  /**
   * `index` is the file's position in the download: `name` may not be the service's name.
   * `records`: those counted in it, null when its format is not known.
   */
  files: { index: number; name: string; path: string; bytes: number; records: number | null }[];
  bytes: number;
}

/**
 * `sluice downloads fetch`: saves every result file into a directory under its own name (see
 * `localNames` for files whose names meet). Each file is streamed to `<name>.part` and renamed
 * when complete, so a file with the final name is always whole; existing files are left alone
 * unless --force. Complete means what the service said: the bytes its server announced, some
 * records in each file, and, where they can be counted, the download's records across its
 * files; files that hold fewer are renamed `<name>.incomplete`. A file that came damaged or
 * empty is fetched again (FILE_TRIES in all).
 */
export async function downloadsFetchCommand(
  client: ServiceClient,
  args: DownloadsFetchArgs,
  io: Io,
  signal?: AbortSignal,
  logger?: Logger,
): Promise<FetchDocument> {
  if (!args.out) throw new UsageError('give the directory to save the files in: --out DIR');
  const progress = args.json || args.quiet ? undefined : io.stderr;
  let info = await client.getDownload(args.id, { signal });
  while ((info.state === 'queued' || info.state === 'running') && args.wait) {
    if (progress)
      writeLine(
        progress,
        `download ${info.id} is ${info.state}: ${num(info.numRecords)} records so far`,
      );
    await sleep(args.pollMs ?? 2000, undefined, { signal });
    info = await client.getDownload(args.id, { signal });
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

  const dir = resolve(args.out);
  const names = localNames(info.files);
  const targets = info.files.map((file, n) => ({ file, path: join(dir, names[n]!) }));
  if (!args.force) {
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
    numRecords: info.numRecords,
    dir,
    files: saved,
    bytes: saved.reduce((sum, f) => sum + f.bytes, 0),
  };
  if (args.json) writeJson(io.stdout, doc);
  else if (saved.length === 0)
    writeLine(io.stdout, `Download ${info.id} (${info.state}) has no result files.`);
  else {
    writeLine(
      io.stdout,
      `Saved ${plural(saved.length, 'file')} (${num(doc.bytes)} bytes, ${plural(info.numRecords, 'record')}) of download ${info.id} to ${dir}`,
    );
    const renamed = targets.filter(({ file, path }) => basename(path) !== safeName(file));
    if (renamed.length > 0) {
      writeLine(
        io.stdout,
        `${plural(renamed.length, 'file')} named like another saved under a new name: ${renamed.map(({ file, path }) => `${safeName(file)} (file ${file.index + 1}) as ${basename(path)}`).join(', ')}`,
      );
    }
  }
  return doc;
}

interface SaveOptions {
  signal?: AbortSignal | undefined;
  progress?: NodeJS.WritableStream | undefined;
  label: string;
  /** How to count the file's records; undefined when its format is not known. */
  format: CountedFormat | undefined;
  /** The download's records (`numRecords`): a file of a download that has some is not empty. */
  expected: number;
}

/** Saves a file, again after it came damaged or empty, FILE_TRIES times in all. */
async function fetchFile(
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

/**
 * A local file error as sluice says it: a full disk or quota is SLUICE_DISK_FULL (worth a retry
 * once there is room), any other (a folder not writable, read-only, not a folder) a mistake to
 * fix, naming the path. Errors that are not the file system's pass through.
 */
function localFileError(error: unknown, path: string): unknown {
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
function safeName(file: ResultFileRef): string {
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
function localNames(files: readonly ResultFileRef[]): string[] {
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

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

function num(n: number): string {
  return n.toLocaleString('en-US');
}

const idArg = <T>(y: Argv<T>) =>
  y.positional('id', { type: 'string', demandOption: true, describe: 'Download id' }) as Argv<
    T & { id: string }
  >;

export function registerDownloads(y: Argv, ctx: CliContext): Argv {
  return y.command('downloads', 'List, inspect, cancel and fetch downloads', (downloads) =>
    connectionOptions(downloads)
      .command(
        'list',
        'List every download, including cancelled and completed ones',
        (c) => c,
        async (args) => {
          await withClient(args, ctx, (client) =>
            downloadsListCommand(client, args, ctx.io, ctx.signal),
          );
        },
      )
      .command(
        'show <id>',
        'Show a download: state, records, files',
        (c) => idArg(c),
        async (args) => {
          await withClient(args, ctx, (client) =>
            downloadsShowCommand(client, args, ctx.io, ctx.signal),
          );
        },
      )
      .command(
        'cancel <id>',
        'Cancel a running download (records so far are kept and charged)',
        (c) => idArg(c),
        async (args) => {
          await withClient(args, ctx, (client) =>
            downloadsCancelCommand(client, args, ctx.io, ctx.signal),
          );
        },
      )
      .command(
        'fetch <id>',
        'Save the result files of a download into a directory',
        (c) =>
          idArg(c)
            .option('out', {
              type: 'string',
              describe: 'Directory to save the files in (required)',
            })
            .option('force', {
              type: 'boolean',
              default: false,
              describe: 'Overwrite files that already exist',
            })
            .option('wait', {
              type: 'boolean',
              default: false,
              describe: 'Wait for a running download to complete',
            }),
        async (args) => {
          await withClient(args, ctx, (client) =>
            // Progress lines are text: with JSON logs, stderr takes JSON lines only.
            downloadsFetchCommand(
              client,
              ctx.logFormat === 'json' ? { ...args, quiet: true } : args,
              ctx.io,
              ctx.signal,
              ctx.logger,
            ),
          );
        },
      )
      .demandCommand(1, 'Name a downloads command: list, show, cancel or fetch'),
  );
}
