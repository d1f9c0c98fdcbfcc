import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { Argv } from 'yargs';
import { UsageError } from '../../errors.js';
import { destinationEntryOf } from '../../load/index.js';
import type { PipelineSpec } from '../../pipeline/index.js';
import { overviewReport } from '../../ui/report.js';
import { startUi } from '../../ui/server.js';
import { sourcesOf } from '../../ui/sources.js';
import type { CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { writeLine } from '../output.js';
import { withPipeline } from './pipeline-args.js';

/**
 * `sluice ui`: a local, read-only dashboard of the state tables of the destinations that
 * pipeline files name (or named as URLs). `sluice report`: its overview as one HTML file.
 */

interface UiArgs {
  targets: string[];
  port: number;
  host: string;
  token?: string;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

async function specsOf(files: readonly string[], ctx: CliContext): Promise<PipelineSpec[]> {
  const specs: PipelineSpec[] = [];
  for (const file of files) {
    specs.push(
      await withPipeline({ file }, ctx, { source: 'optional', usesSource: false }, async (s) => s),
    );
  }
  return specs;
}

export async function uiCommand(args: UiArgs, ctx: CliContext): Promise<number> {
  const urls = args.targets.filter((t) => destinationEntryOf(t) !== undefined);
  const files = args.targets.filter((t) => destinationEntryOf(t) === undefined);
  const specs = await specsOf(files, ctx);
  const sources = sourcesOf(specs, urls, ctx.env);
  if (sources.length === 0) {
    throw new UsageError(
      'sluice ui needs a pipeline file or a destination: e.g. sluice ui pipelines/demo.yaml',
    );
  }
  if (args.token !== undefined && args.token.length < 16) {
    throw new UsageError('--token must be at least 16 characters');
  }
  const open = LOOPBACK.has(args.host);
  const token = args.token ?? (open ? undefined : randomBytes(18).toString('base64url'));
  const { url, server } = await startUi({
    sources,
    host: args.host,
    port: args.port,
    token,
    ...(ctx.clock ? { now: () => ctx.clock!.now() } : {}),
  }).catch((error: unknown) => {
    const code = (error as { code?: unknown }).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new UsageError(
        `cannot listen on ${args.host}:${args.port} (${String(code)}): choose another --port or --host`,
      );
    }
    throw error;
  });
  writeLine(
    ctx.io.stdout,
    `sluice ui: ${token ? `${url}?token=${token}` : url} (read-only; stop with Ctrl-C)`,
  );
  for (const s of sources) writeLine(ctx.io.stdout, `  ${s.label}`);
  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) resolve();
    ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return EXIT.ok;
}

export async function reportCommand(
  args: { file: string; out?: string },
  ctx: CliContext,
): Promise<number> {
  const [spec] = await specsOf([args.file], ctx);
  const [source] = sourcesOf([spec!], [], ctx.env);
  const html = await overviewReport(source!, ctx.clock?.now() ?? Date.now());
  if (args.out === undefined || args.out === '-') {
    ctx.io.stdout.write(html);
  } else {
    writeFileSync(args.out, html);
    writeLine(ctx.io.stdout, `wrote ${args.out}: the overview of '${spec!.name}'`);
  }
  return EXIT.ok;
}

export function registerUi(y: Argv, ctx: CliContext): Argv {
  const done = (code: number) => {
    ctx.exitCode = code;
  };
  return y
    .command(
      'ui [targets..]',
      'A local read-only dashboard of runs, credits, tables and rejects (pipeline files or destinations)',
      (c) =>
        c
          .positional('targets', {
            type: 'string',
            array: true,
            default: [],
            describe: 'Pipeline files, or destination URLs (sqlite:..., postgresql://...)',
          })
          .option('port', { type: 'number', default: 8642, describe: 'Port (0: any free one)' })
          .option('host', {
            type: 'string',
            default: '127.0.0.1',
            describe: 'Address to listen on; any but the loopback needs a token',
          })
          .option('token', {
            type: 'string',
            describe: 'Token every request must carry (generated and printed off the loopback)',
          })
          .example('$0 ui pipelines/demo.yaml', 'the demo, at http://127.0.0.1:8642/'),
      async (args) => done(await uiCommand(args as unknown as UiArgs, ctx)),
    )
    .command(
      'report <file>',
      "A pipeline's overview (last run, budgets, freshness, alerts) as one static HTML file",
      (c) =>
        c
          .positional('file', { type: 'string', demandOption: true, describe: 'Pipeline file' })
          .option('out', { type: 'string', describe: 'HTML file to write (default: stdout)' })
          .example('$0 report pipelines/demo.yaml --out report.html', 'for a cron job to mail'),
      async (args) => done(await reportCommand(args as { file: string; out?: string }, ctx)),
    );
}
