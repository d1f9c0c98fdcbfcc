import type { Argv } from 'yargs';
import {
  clientFor,
  pipelineJsonSchema,
  planPipeline,
  type RunSummary,
  runPipeline,
  savedCursors,
} from '../../pipeline/index.js';
import type { CliContext } from '../context.js';
import { EXIT, exitCodeOfRun } from '../exit-codes.js';
import { creditsText, plural, rangeText, tablesText } from '../format.js';
import { formatTable, writeJson, writeLine } from '../output.js';
import { demoCommand } from './demo.js';
import { type PipelineArgs, pipelineFileArg, withPipeline } from './pipeline-args.js';
import { statusCommand } from './status.js';

/**
 * The pipeline commands. Each is a plain function of (arguments, context) that returns an exit
 * code, so tests call them directly; registerPipeline only declares them.
 */

export function validateCommand(args: PipelineArgs, ctx: CliContext): Promise<number> {
  // Offline: a job's view must be declared or pre-made; plan and run may ask the service.
  return withPipeline(args, ctx, { source: 'optional', views: 'offline' }, async (spec) => {
    const jobs = spec.jobs.map((j) => ({
      job: j.name,
      type: j.type,
      table: j.table,
      write: j.write,
      key: j.key,
      records: j.records ?? 'all',
      format: j.format,
      incremental: j.incremental ?? null,
    }));
    const { stdout } = ctx.io;
    if (args.json) {
      writeJson(stdout, {
        file: spec.file,
        valid: true,
        pipeline: spec.name,
        views: Object.keys(spec.views),
        jobs,
        warnings: spec.warnings,
      });
      return EXIT.ok;
    }
    const views = Object.keys(spec.views).length;
    writeLine(
      stdout,
      `${spec.file}: valid pipeline '${spec.name}' (${plural(spec.jobs.length, 'job')}, ${plural(views, 'view')})`,
    );
    writeLine(
      stdout,
      formatTable(
        ['job', 'type', 'records', 'format', 'table', 'write'],
        jobs.map((j) => [
          j.job,
          j.type,
          j.records,
          j.format,
          j.table,
          `${j.write === 'merge' ? `merge on ${j.key.join(', ')}` : j.write}${j.incremental ? `, incremental on ${j.incremental.cursor}` : ''}`,
        ]),
      ),
    );
    return EXIT.ok;
  });
}

export function planCommand(
  args: PipelineArgs & { 'full-refresh'?: boolean },
  ctx: CliContext,
): Promise<number> {
  return withPipeline(args, ctx, { source: 'required' }, async (spec) => {
    const fullRefresh = args['full-refresh'] === true;
    const cursors = fullRefresh ? undefined : await savedCursors(spec, ctx.env);
    const client = clientFor(spec, ctx.logger);
    try {
      const plan = await planPipeline(spec, client, {
        signal: ctx.signal,
        fullRefresh,
        ...(cursors ? { cursors } : {}),
      });
      const refused = plan.guard === 'refuse';
      const { stdout } = ctx.io;
      if (args.json) {
        writeJson(stdout, plan);
        return refused ? EXIT.creditGuard : EXIT.ok;
      }
      writeLine(stdout, `Plan for '${spec.name}' (nothing is spent; counts are free):`);
      const { create, update } = plan.views;
      if (create.length > 0) writeLine(stdout, `views run would create: ${create.join(', ')}`);
      if (update.length > 0) writeLine(stdout, `views run would update: ${update.join(', ')}`);
      writeLine(
        stdout,
        formatTable(
          ['job', 'found', 'to download', 'credits needed', 'credits left', 'guard'],
          plan.jobs.map((e) => [
            e.job,
            e.found,
            e.records,
            creditsText(e.needed),
            e.remaining ? creditsText(e.remaining) : 'unknown (v3)',
            e.refusals.length ? 'REFUSE' : 'pass',
          ]),
        ),
      );
      for (const e of plan.jobs) for (const r of e.refusals) writeLine(stdout, `  ${r.message}`);
      for (const e of plan.jobs) {
        const inc = e.incremental;
        if (!inc) continue;
        const range =
          inc.from === null
            ? `every record${fullRefresh ? ' (--full-refresh)' : ' (first run)'}`
            : `${inc.cursor} since ${inc.from}${inc.last === null ? ' (start)' : ` (cursor ${inc.last})`}`;
        writeLine(
          stdout,
          `  ${e.job}: incremental, ${range}: ${plural(e.records, 'record')} to pay for, ${plural(inc.full_records, 'record')} in a full refresh${inc.credits_saved > 0 ? ` (${plural(inc.credits_saved, 'credit')} saved)` : ''}`,
        );
      }
      return refused ? EXIT.creditGuard : EXIT.ok;
    } finally {
      await client.close();
    }
  });
}

export interface RunArgs extends PipelineArgs {
  job?: string[];
  fresh?: boolean;
  'full-refresh'?: boolean;
  wait?: boolean;
  progress?: boolean;
}

export function runCommand(args: RunArgs, ctx: CliContext): Promise<number> {
  return withPipeline(args, ctx, { source: 'required' }, async (spec) => {
    const summary = await runPipeline(spec, {
      env: ctx.env,
      jobs: args.job,
      fresh: args.fresh,
      fullRefresh: args['full-refresh'],
      wait: args.wait,
      signal: ctx.signal,
      logger: ctx.logger,
      progress: ctx.terminal.progress(args.progress !== false),
      ...(ctx.clock ? { clock: ctx.clock } : {}),
    });
    if (args.json) writeJson(ctx.io.stdout, summary);
    else printSummary(summary, ctx);
    return exitCodeOfRun(summary);
  });
}

export function printSummary(summary: RunSummary, ctx: CliContext): void {
  const { stdout } = ctx.io;
  writeLine(
    stdout,
    `Run ${summary.run_id} of '${summary.pipeline}': ${summary.status} in ${summary.seconds}s -> ${summary.destination}`,
  );
  const v = summary.views;
  if (v.created.length + v.updated.length + v.unchanged.length > 0) {
    writeLine(
      stdout,
      `views: ${v.created.length} created, ${v.updated.length} updated, ${v.unchanged.length} unchanged`,
    );
  }
  if (summary.error) writeLine(stdout, `${summary.error.stage}: ${summary.error.message}`);
  if (summary.jobs.length === 0) return;
  writeLine(
    stdout,
    formatTable(
      [
        'job',
        'status',
        'download',
        'found',
        'downloaded',
        'loaded',
        'rejected',
        'credits spent',
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
    if (j.error) writeLine(stdout, `  ${j.job}: ${j.error.message}`);
    else if (j.message) writeLine(stdout, `  ${j.job}: ${j.message}`);
    if (j.incremental) writeLine(stdout, `  ${j.job}: ${rangeText(j.incremental)}`);
  }
}

/** Declares validate, plan, run, status, schema and demo; handlers report their exit code. */
export function registerPipeline(y: Argv, ctx: CliContext): Argv {
  const done = (code: number) => {
    ctx.exitCode = code;
  };
  return y
    .command(
      'validate <file>',
      'Check a pipeline file and its queries (sends no request, needs no credentials)',
      (c) => pipelineFileArg(c).example('$0 validate pipelines/demo.yaml', 'check the demo'),
      async (args) => done(await validateCommand(args, ctx)),
    )
    .command(
      'plan <file>',
      'Show what each job would download and cost, and whether the credit guard passes (spends nothing)',
      (c) =>
        pipelineFileArg(c)
          .option('full-refresh', {
            type: 'boolean',
            default: false,
            describe: 'Plan a run --full-refresh: incremental jobs download everything',
          })
          .example('$0 plan pipelines/demo.yaml --json', 'as JSON'),
      async (args) => done(await planCommand(args, ctx)),
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
          .option('full-refresh', {
            type: 'boolean',
            default: false,
            describe:
              'Incremental jobs download every record (or since their start) and reset their cursors',
          })
          .option('wait', {
            type: 'boolean',
            default: false,
            describe: 'Wait for another run of the same pipeline instead of exiting',
          })
          .option('progress', {
            type: 'boolean',
            default: true,
            describe: 'Progress bar on a terminal (--no-progress to hide)',
          })
          .example('$0 run pipelines/demo.yaml', 'run every job')
          .example('$0 run pipelines/demo.yaml --job texas_homes', 'one job')
          .example(
            '$0 run pipelines/nightly.yaml --job homes --full-refresh',
            'one incremental job from scratch',
          )
          .example(
            '$0 run pipelines/demo.yaml --json --log-format json --no-progress',
            'for an orchestrator: one JSON document on stdout, JSON lines on stderr',
          ),
      async (args) => done(await runCommand(args as RunArgs, ctx)),
    )
    .command(
      'status <file>',
      'Recent runs, downloads and loaded files of a pipeline, from its state tables (read-only)',
      (c) =>
        pipelineFileArg(c).option('limit', {
          type: 'number',
          default: 10,
          describe: 'How many runs',
        }),
      async (args) => done(await statusCommand(args, ctx)),
    )
    .command(
      'schema',
      'Print the JSON Schema of pipeline files (for editor completion)',
      (c) => c,
      () => {
        writeJson(ctx.io.stdout, pipelineJsonSchema());
        done(EXIT.ok);
      },
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
      async (args) => done(await demoCommand(args, ctx)),
    );
}
