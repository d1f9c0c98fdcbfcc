import { createWriteStream } from 'node:fs';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { basename, extname, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Argv } from 'yargs';
import type { DownloadInfo, ResultFileRef, ServiceClient } from '../../client/types.js';
import { SluiceError, UsageError } from '../../errors.js';
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
  /** `index` is the file's position in the download: `name` may not be the service's name. */
  files: { index: number; name: string; path: string; bytes: number }[];
  bytes: number;
}

/**
 * `sluice downloads fetch`: saves every result file into a directory under its own name (see
 * `localNames` for files whose names meet). Each file is streamed to `<name>.part` and renamed
 * when complete, so a file with the final name is always whole; existing files are left alone
 * unless --force.
 */
export async function downloadsFetchCommand(
  client: ServiceClient,
  args: DownloadsFetchArgs,
  io: Io,
  signal?: AbortSignal,
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
  await mkdir(dir, { recursive: true });

  const saved: FetchDocument['files'] = [];
  for (const [n, { file, path }] of targets.entries()) {
    const label = `[${n + 1}/${targets.length}] ${basename(path)}`;
    const bytes = await saveFile(client, info.id, file, path, { signal, progress, label });
    saved.push({ index: file.index, name: basename(path), path, bytes });
  }
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

async function saveFile(
  client: ServiceClient,
  downloadId: string,
  file: ResultFileRef,
  path: string,
  options: { signal?: AbortSignal; progress?: NodeJS.WritableStream; label: string },
): Promise<number> {
  const { progress, label } = options;
  const live = progress !== undefined && (progress as { isTTY?: boolean }).isTTY === true;
  const part = `${path}.part`;
  let bytes = 0;
  let lastShown = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      const now = Date.now();
      if (live && now - lastShown > 200) {
        lastShown = now;
        progress.write(`\r${label}  ${num(bytes)} bytes`);
      }
      done(null, chunk);
    },
  });
  try {
    const source = await client.openResultFile(downloadId, file, { signal: options.signal });
    await pipeline(source, counter, createWriteStream(part), { signal: options.signal });
    await rename(part, path);
  } catch (error) {
    await rm(part, { force: true });
    if (live) progress.write('\n');
    throw error;
  }
  if (progress) progress.write(`${live ? '\r' : ''}${label}  ${num(bytes)} bytes, done\n`);
  return bytes;
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
            ),
          );
        },
      )
      .demandCommand(1, 'Name a downloads command: list, show, cancel or fetch'),
  );
}
