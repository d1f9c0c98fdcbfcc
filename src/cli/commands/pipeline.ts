import type { Argv } from 'yargs';
import { createLogger, type LogFormat } from '../../log.js';
import type { Clock } from '../../pipeline/clock.js';
import {
  type CreditEstimate,
  clientFor,
  createProgress,
  estimateJob,
  estimateOwnerLookup,
  loadPipeline,
  pipelineJsonSchema,
  type RunSummary,
  runPipeline,
} from '../../pipeline/index.js';
import type { CliContext } from '../context.js';
import { EXIT, exitCodeOfRun } from '../exit-codes.js';
import { creditsText, tablesText } from '../format.js';
import { formatTable, type Io, writeJson, writeLine } from '../output.js';
import { demoCommand } from './demo.js';
import { type PipelineArgs, pipelineFileArg } from './pipeline-args.js';
import { statusCommand } from './status.js';

/**
 * The pipeline commands. Each is a plain function of (arguments, io, env) that returns an exit
 * code, so tests call them directly; index.ts only declares them.
 */

export async function validateCommand(
  args: PipelineArgs,
  io: Io,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const spec = await loadPipeline(args.file, env);
  const jobs = spec.jobs.map((j) => ({
    job: j.name,
    type: j.type,
    table: j.table,
    write: j.write,
    key: j.key,
    records: j.records ?? 'all',
    format: j.format,
  }));
  if (args.json) {
    writeJson(io.stdout, {
      file: spec.file,
      valid: true,
      pipeline: spec.name,
      views: Object.keys(spec.views),
      jobs,
    });
  } else {
    writeLine(
      io.stdout,
      `${spec.file}: valid pipeline '${spec.name}' (${plural(spec.jobs.length, 'job')}, ${plural(Object.keys(spec.views).length, 'view')})`,
    );
    writeLine(
      io.stdout,
      formatTable(
        ['job', 'type', 'records', 'format', 'table', 'write'],
        jobs.map((j) => [
          j.job,
          j.type,
          j.records,
          j.format,
          j.table,
          j.write === 'merge' ? `merge on ${j.key.join(', ')}` : j.write,
        ]),
      ),
    );
  }
  return EXIT.ok;
}

export async function planCommand(
  args: PipelineArgs,
  io: Io,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const spec = await loadPipeline(args.file, env);
  const client = clientFor(spec);
  try {
    const estimates: CreditEstimate[] = [];
    for (const job of spec.jobs) {
      const from = job.people_keys_from;
      const source = from === undefined ? undefined : estimates.find((e) => e.job === from);
      estimates.push(
        source
          ? await estimateOwnerLookup(client, job, source.records)
          : await estimateJob(client, job),
      );
    }
    const refused = estimates.some((e) => e.refusals.length > 0);
    if (args.json) {
      writeJson(io.stdout, {
        pipeline: spec.name,
        guard: refused ? 'refuse' : 'pass',
        jobs: estimates,
      });
    } else {
      writeLine(io.stdout, `Plan for '${spec.name}' (nothing is spent; counts are free):`);
      writeLine(
        io.stdout,
        formatTable(
          ['job', 'found', 'to download', 'credits needed', 'credits left', 'guard'],
          estimates.map((e) => [
            e.job,
            e.found,
            e.records,
            creditsText(e.needed),
            e.remaining ? creditsText(e.remaining) : 'unknown (v3)',
            e.refusals.length ? 'REFUSE' : 'pass',
          ]),
        ),
      );
      for (const e of estimates) for (const r of e.refusals) writeLine(io.stdout, `  ${r.message}`);
    }
    return refused ? EXIT.creditGuard : EXIT.ok;
  } finally {
    await client.close();
  }
}

export interface RunArgs extends PipelineArgs {
  job?: string[];
  fresh?: boolean;
  wait?: boolean;
  'log-format'?: LogFormat;
  progress?: boolean;
}

export async function runCommand(
  args: RunArgs,
  io: Io,
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
  clock?: Clock,
): Promise<number> {
  const spec = await loadPipeline(args.file, env);
  const logger = createLogger({ format: args['log-format'] ?? 'pretty', stream: io.stderr });
  const progress = createProgress({ stream: io.stderr, logger, enabled: args.progress !== false });
  const summary = await runPipeline(spec, {
    env,
    jobs: args.job,
    fresh: args.fresh,
    wait: args.wait,
    signal,
    logger,
    progress,
    ...(clock ? { clock } : {}),
  });
  if (args.json) writeJson(io.stdout, summary);
  else printSummary(summary, io);
  return exitCodeOfRun(summary);
}

function printSummary(summary: RunSummary, io: Io): void {
  writeLine(
    io.stdout,
    `Run ${summary.run_id} of '${summary.pipeline}': ${summary.status} in ${summary.seconds}s -> ${summary.destination}`,
  );
  const v = summary.views;
  if (v.created.length + v.updated.length + v.unchanged.length > 0) {
    writeLine(
      io.stdout,
      `views: ${v.created.length} created, ${v.updated.length} updated, ${v.unchanged.length} unchanged`,
    );
  }
  writeLine(
    io.stdout,
    formatTable(
      [
        'job',
        'status',
        'download',
        'found',
        'downloaded',
        'loaded',
        'rejected',
        'credits',
        'seconds',
        'tables',
      ],
      summary.jobs.map((j) => [
        j.job,
        j.status,
        `${j.download_id ?? '-'}${j.reattached ? ' (re-attached)' : ''}`,
        j.found ?? '-',
        j.downloaded,
        j.loaded,
        j.rejected,
        creditsText(j.credits),
        j.seconds,
        tablesText(j.tables),
      ]),
    ),
  );
  for (const j of summary.jobs) {
    if (j.error) writeLine(io.stdout, `  ${j.job}: ${j.error.message}`);
    else if (j.message) writeLine(io.stdout, `  ${j.job}: ${j.message}`);
  }
}

export function schemaCommand(io: Io): number {
  writeJson(io.stdout, pipelineJsonSchema());
  return EXIT.ok;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Declares validate, plan, run, status, schema and demo; handlers report their exit code. */
export function registerPipeline(y: Argv, ctx: CliContext): Argv {
  const done = (code: number) => {
    ctx.exitCode = code;
  };
  return y
    .command(
      'validate <file>',
      'Check a pipeline file and its queries (sends no request)',
      (c) => pipelineFileArg(c),
      async (args) => done(await validateCommand(args, ctx.io, ctx.env)),
    )
    .command(
      'plan <file>',
      'Show what each job would download and cost, and whether the credit guard passes (spends nothing)',
      (c) => pipelineFileArg(c),
      async (args) => done(await planCommand(args, ctx.io, ctx.env)),
    )
    .command(
      'run <file>',
      'Run a pipeline: sync views, start or re-attach downloads, load the files',
      (c) =>
        pipelineFileArg(c)
          .option('job', {
            type: 'string',
            array: true,
            describe: 'Run only this job (repeatable)',
          })
          .option('fresh', {
            type: 'boolean',
            default: false,
            describe: 'Start new downloads instead of re-attaching to unfinished ones',
          })
          .option('wait', {
            type: 'boolean',
            default: false,
            describe: 'Wait for another run of the same pipeline instead of exiting',
          })
          .option('log-format', {
            type: 'string',
            choices: ['pretty', 'json'],
            default: 'pretty',
            describe: 'Logs on stderr: readable lines or JSON lines',
          })
          .option('progress', {
            type: 'boolean',
            default: true,
            describe: 'Progress bar on a terminal (--no-progress to hide)',
          }),
      async (args) =>
        done(await runCommand(args as RunArgs, ctx.io, ctx.env, ctx.signal, ctx.clock)),
    )
    .command(
      'status <file>',
      'Recent runs, downloads and loaded files of a pipeline, from its state tables',
      (c) =>
        pipelineFileArg(c).option('limit', {
          type: 'number',
          default: 10,
          describe: 'How many runs',
        }),
      async (args) => done(await statusCommand(args, ctx.io, ctx.env)),
    )
    .command(
      'schema',
      'Print the JSON Schema of pipeline files (for editor completion)',
      (c) => c,
      () => done(schemaCommand(ctx.io)),
    )
    .command(
      'demo',
      'Start the emulator and run pipelines/demo.yaml into data/demo.sqlite',
      (c) =>
        c.option('json', {
          type: 'boolean',
          default: false,
          describe: 'Print the run summary as JSON',
        }),
      async (args) => done(await demoCommand(args, ctx.io, ctx.env, ctx.signal)),
    );
}
