import type { Argv } from 'yargs';
import { type FetchDocument, fetchDownload } from '../../client/fetch-download.js';
import type { DownloadInfo, ServiceClient } from '../../client/types.js';
import { UsageError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { num } from '../../util/words.js';
import { connectionOptions, type JsonArgs, withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import { plural } from '../format.js';
import { dateText, formatTable, type Io, writeJson, writeLine } from '../output.js';

/**
 * A download as the CLI reports it. File URLs are left out: they are pre-signed, change on every
 * call and expire, so they belong to `fetch`, not to a document someone might keep.
 */
export interface DownloadDocument {
  id: string;
  state: DownloadInfo['state'];
  num_records: number;
  num_found: number | null;
  created_at: string | null;
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
    num_records: d.numRecords,
    num_found: d.numFound ?? null,
    created_at: d.createdAt ?? null,
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
  const downloads = newestFirst((await client.listDownloads({ signal })).map(downloadDocument));
  const doc = { downloads };
  if (args.json) writeJson(io.stdout, doc);
  else if (downloads.length === 0) writeLine(io.stdout, 'No downloads yet.');
  else {
    // Columns the service fills only in some API versions (v3 says found, type and query).
    const columns: [string, (d: DownloadDocument) => unknown][] = [
      ['id', (d) => d.id],
      ['state', (d) => d.state],
      ['records', (d) => d.num_records],
      ['found', (d) => d.num_found],
      ['files', (d) => d.files.length],
      ['created', (d) => (d.created_at === null ? null : dateText(d.created_at))],
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

/**
 * Newest first, as people look for the download they just made: by creation time, those the
 * service gives none for last; the service's own order (oldest first) reversed among equals.
 */
function newestFirst(downloads: DownloadDocument[]): DownloadDocument[] {
  const time = (d: DownloadDocument) => {
    const ms = d.created_at === null ? Number.NaN : Date.parse(d.created_at);
    return Number.isNaN(ms) ? Number.NEGATIVE_INFINITY : ms;
  };
  return [...downloads].reverse().sort((a, b) => time(b) - time(a));
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
      doc.num_found === null
        ? num(doc.num_records)
        : `${num(doc.num_records)} of ${num(doc.num_found)} found`,
    ],
  ];
  if (doc.created_at) rows.push(['created', dateText(doc.created_at)]);
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
      doc.num_records === 0
        ? `Cancelled download ${doc.id} before any record was delivered.`
        : `Cancelled download ${doc.id}: the ${plural(doc.num_records, 'record')} delivered before the cancellation stay retrievable and are charged.`,
    );
  }
  return doc;
}

export interface DownloadsFetchArgs extends JsonArgs {
  id: string;
  /** The directory, after the id or as `--out` (one is required; checked by the command). */
  dir?: string;
  out?: string;
  force?: boolean;
  /** Wait for a queued or running download to finish instead of refusing. */
  wait?: boolean;
  /** Between polls while waiting. */
  pollMs?: number;
  /** No progress lines on stderr. */
  quiet?: boolean;
}

/**
 * `sluice downloads fetch`: saves every result file into a directory under its own name (see
 * client/fetch-download.ts); existing files are left alone unless --force.
 */
export async function downloadsFetchCommand(
  client: ServiceClient,
  args: DownloadsFetchArgs,
  io: Io,
  signal?: AbortSignal,
  logger?: Logger,
): Promise<FetchDocument> {
  if (args.dir !== undefined && args.out !== undefined && args.dir !== args.out) {
    throw new UsageError(
      `give the directory once: ${args.dir} (after the id) or --out ${args.out}, not both`,
    );
  }
  const out = args.dir ?? args.out;
  if (!out) {
    throw new UsageError(
      `give the directory to save the files in: sluice downloads fetch ${args.id} DIR (or --out DIR)`,
    );
  }
  const progress = args.json || args.quiet ? undefined : io.stderr;
  const { doc, renamed } = await fetchDownload(client, args.id, {
    out,
    force: args.force,
    wait: args.wait,
    pollMs: args.pollMs,
    signal,
    progress,
    logger,
  });
  const { id, state, num_records: numRecords, dir, files: saved } = doc;
  if (args.json) writeJson(io.stdout, doc);
  else if (saved.length === 0)
    writeLine(io.stdout, `Download ${id} (${state}) has no result files.`);
  else {
    writeLine(
      io.stdout,
      `Saved ${plural(saved.length, 'file')} (${num(doc.bytes)} bytes, ${plural(numRecords, 'record')}) of download ${id} to ${dir}`,
    );
    if (renamed.length > 0) {
      writeLine(
        io.stdout,
        `${plural(renamed.length, 'file')} named like another saved under a new name: ${renamed.map((r) => `${r.own} (file ${r.index + 1}) as ${r.as}`).join(', ')}`,
      );
    }
  }
  return doc;
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
        'fetch <id> [dir]',
        'Save the result files of a download into a directory',
        (c) =>
          idArg(c)
            .positional('dir', {
              type: 'string',
              describe: 'Directory to save the files in (made if missing; or --out DIR)',
            })
            .option('out', {
              type: 'string',
              describe: 'Directory to save the files in, as DIR after the id does',
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
            })
            .example('$0 downloads fetch ID files/', 'save its result files into files/')
            .example('$0 downloads fetch ID files/ --wait', 'wait for a running download first'),
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
