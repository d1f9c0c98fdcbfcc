import type { Argv } from 'yargs';
import { UsageError } from '../../errors.js';
import {
  alertTargets,
  type BatchMember,
  checkSharedTables,
  clientFor,
  DEFAULT_PARALLEL_JOBS,
  describeKind,
  type JobOutcome,
  namedTable,
  type PipelineSpec,
  type PlanReport,
  pipelineJsonSchema,
  planPipeline,
  type RunSummary,
  replayText,
  runPipeline,
  runPipelines,
  savedState,
  unmatchedPatterns,
} from '../../pipeline/index.js';
import { writeAlertTargets } from '../alert-report.js';
import type { CliContext } from '../context.js';
import { credentialSources, writeCredentials } from '../credential-report.js';
import { EXIT, errorDocument, exitCodeFor, exitCodeOfRun, worstExitCode } from '../exit-codes.js';
import { creditsText, numberFlag, plural, rangeText, tablesText } from '../format.js';
import { Fixed, formatTable, secondsText, writeJson, writeLine } from '../output.js';
import { type RunTelemetry, withTelemetry } from '../telemetry/telemetry.js';
import { demoCommand } from './demo.js';
import { alertRun } from './notify.js';
import {
  type PipelineArgs,
  pipelineFileArg,
  strictFieldsOption,
  withPipeline,
} from './pipeline-args.js';
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
      kind: j.kind,
      ...(j.refreshes === undefined ? {} : { refreshes: j.refreshes }),
      type: j.type,
      table: namedTable(spec, j.table),
      write: j.write,
      key: j.key,
      records: j.records ?? 'all',
      format: j.format,
      incremental: j.incremental ?? null,
    }));
    const { stdout } = ctx.io;
    const credentials = credentialSources(spec, ctx);
    const alerts = alertTargets(spec);
    if (args.json) {
      writeJson(stdout, {
        file: spec.file,
        valid: true,
        pipeline: spec.name,
        views: Object.keys(spec.views),
        jobs,
        warnings: spec.warnings,
        credentials,
        alerts,
      });
      return EXIT.ok;
    }
    const views = Object.keys(spec.views).length;
    const steps = spec.jobs.filter((j) => j.refreshes !== undefined).length;
    const counted = `${plural(spec.jobs.length - steps, 'job')}${steps > 0 ? `, ${plural(steps, 'refresh step')}` : ''}`;
    writeLine(
      stdout,
      `${spec.file}: valid pipeline '${spec.name}' (${counted}, ${plural(views, 'view')})`,
    );
    writeLine(
      stdout,
      formatTable(
        ['job', 'type', 'records', 'format', 'table', 'write'],
        jobs.map((j) =>
          j.refreshes !== undefined
            ? [j.job, j.type, j.records, '-', '-', `targeted update before ${j.refreshes}`]
            : [
                j.job,
                j.type,
                j.records,
                j.format,
                j.table,
                `${j.write === 'merge' ? `merge on ${j.key.join(', ')}` : j.write}${j.incremental ? `, incremental on ${j.incremental.cursor}` : ''}${j.kind === 'scrape' ? ', scraped' : ''}`,
              ],
        ),
      ),
    );
    writeCredentials(ctx.io, credentials);
    writeAlertTargets(ctx.io, alerts);
    return EXIT.ok;
  });
}

export function planCommand(
  args: PipelineArgs & { 'full-refresh'?: boolean; job?: string[] },
  ctx: CliContext,
): Promise<number> {
  return withPipeline(args, ctx, { source: 'required' }, async (spec) => {
    const fullRefresh = args['full-refresh'] === true;
    const now = ctx.clock?.now() ?? Date.now();
    const saved = await savedState(spec, ctx.env, { now, fullRefresh });
    const client = clientFor(spec, ctx.logger);
    try {
      const plan = await planPipeline(spec, client, {
        signal: ctx.signal,
        fullRefresh,
        ...(args.job ? { jobs: args.job } : {}),
        cursors: saved.cursors,
        budgets: saved.budgets,
        open: saved.open,
        breaches: saved.breaches,
      });
      const refused = plan.guard === 'refuse';
      // A job its schema contract would fail: run would fail it, as a mistake to fix.
      const breached = plan.jobs.some((e) => e.schema_breaches !== undefined);
      const exit = refused ? EXIT.creditGuard : breached ? EXIT.invalidInput : EXIT.ok;
      if (args.json) writeJson(ctx.io.stdout, plan);
      else writePlanText(spec, plan, fullRefresh, ctx.io.stdout);
      return exit;
    } finally {
      await client.close();
    }
  });
}

type Stdout = CliContext['io']['stdout'];

/** `sluice plan` without `--json`: the jobs' table, then notes on each job, budgets and cursors. */
function writePlanText(
  spec: PipelineSpec,
  plan: PlanReport,
  fullRefresh: boolean,
  stdout: Stdout,
): void {
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
        creditsLeftText(e, plan),
        e.verdict === 'refuse'
          ? 'REFUSE'
          : e.verdict === 'unknown'
            ? 'unknown: legacy plan'
            : 'pass',
      ]),
    ),
  );
  for (const e of plan.jobs) for (const r of e.refusals) writeLine(stdout, `  ${r.message}`);
  writeSchemaNotes(plan, stdout);
  writeKindNotes(spec, plan, stdout);
  if (plan.account.plan === 'legacy') {
    writeLine(
      stdout,
      `  the account is on a legacy plan (${(plan.account.total_used ?? 0).toLocaleString('en-US')} credits used in all): the service does not say what is left, so run checks max_credits${plan.budgets.length > 0 ? ' and the budgets' : ''} only, and the service refuses (402) what the account cannot pay for`,
    );
  }
  if (plan.budgets.length > 0) {
    writeLine(stdout, 'budgets (calendar periods in UTC):');
    writeLine(stdout, budgetsTable(plan.budgets));
  }
  writeIncrementalNotes(plan, fullRefresh, stdout);
}

/** Per job: the column types pinned, and the schema contract breaches that would fail it. */
function writeSchemaNotes(plan: PlanReport, stdout: Stdout): void {
  for (const e of plan.jobs) {
    if (e.pinned) {
      const list = Object.entries(e.pinned).map(([field, type]) => `${field} ${type}`);
      writeLine(stdout, `  ${e.job}: column types pinned: ${list.join(', ')}`);
    }
    for (const b of e.schema_breaches ?? []) {
      const what = [
        b.added.length > 0 ? `no column for ${b.added.join(', ')}` : '',
        b.widened.length > 0 ? `would widen ${b.widened.join(', ')}` : '',
      ].filter(Boolean);
      writeLine(
        stdout,
        `  ${e.job}: SCHEMA CONTRACT: ${b.table} ${what.join('; ')}: run would fail the job before buying it`,
      );
    }
  }
}

/** Per job: what a targeted update or a scrape does, and a purchase run would re-attach to. */
function writeKindNotes(spec: PipelineSpec, plan: PlanReport, stdout: Stdout): void {
  for (const e of plan.jobs) {
    const job = spec.jobs.find((j) => j.name === e.job);
    if (job?.kind === 'targeted_update') {
      writeLine(
        stdout,
        `  ${e.job}: a targeted update: the service refreshes these records before ${job.refreshes} downloads them`,
      );
    } else if (job?.kind === 'scrape') {
      writeLine(stdout, `  ${e.job}: a scrape: the records come fresh from their sources`);
    }
    if (e.reattaches) {
      writeLine(
        stdout,
        `  ${e.job}: run re-attaches to ${describeKind(job ?? { kind: 'download' })} ${e.reattaches}, started by an earlier run: nothing more to pay`,
      );
    }
  }
}

/** Per incremental job: the range it downloads, and what that saves against a full refresh. */
function writeIncrementalNotes(plan: PlanReport, fullRefresh: boolean, stdout: Stdout): void {
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
}

/** What the account has left for a job: per type, or why the service does not say. */
function creditsLeftText(e: PlanReport['jobs'][number], plan: PlanReport): string {
  if (e.remaining) return creditsText(e.remaining);
  if (plan.account.plan === 'legacy') {
    return `unknown (legacy plan, ${(plan.account.total_used ?? 0).toLocaleString('en-US')} used)`;
  }
  return 'unknown (v3)';
}

/** Each budget in its period: spent, what the planned jobs take, and what is left after them. */
function budgetsTable(budgets: PlanReport['budgets']): string {
  return formatTable(
    ['credits', 'budget', 'period', 'spent', 'planned', 'left after'],
    budgets.map((b) => [
      b.type,
      `${b.limit.toLocaleString('en-US')}/${b.period}`,
      `${b.from} to ${b.until}`,
      b.spent,
      b.planned,
      b.left,
    ]),
  );
}

export interface RunArgs {
  files: string[];
  json?: boolean;
  job?: string[];
  fresh?: boolean;
  'full-refresh'?: boolean;
  wait?: boolean;
  progress?: boolean;
  parallel?: number;
  'run-key'?: string;
  'strict-fields'?: boolean;
  'metrics-file'?: string;
}

/**
 * `sluice run FILE...`: with one file, its summary is the JSON document; with several (run one
 * after another as one command: see pipeline/run/batch.ts), one document holds them all. The exit
 * code is the worst of theirs.
 */
export function runCommand(args: RunArgs, ctx: CliContext): Promise<number> {
  return withTelemetry(ctx, args['metrics-file'], (telemetry) => runFiles(args, ctx, telemetry));
}

async function runFiles(args: RunArgs, ctx: CliContext, telemetry: RunTelemetry): Promise<number> {
  const files = args.files;
  if (files.length === 1) {
    let spec: PipelineSpec | undefined;
    let summary: RunSummary;
    try {
      summary = await withPipeline(
        { file: files[0]!, ...strictOf(args) },
        ctx,
        { source: 'required' },
        async (loaded) => {
          spec = loaded;
          const options = { ...runOptions(args, ctx), progress: progressOf(args, ctx) };
          const ran = await telemetry.traced(() => runPipeline(loaded, options));
          telemetry.ran(loaded, ran);
          return ran;
        },
      );
    } catch (error) {
      // A run that could not start (its login, its lock) alerts too, then fails as it would.
      if (spec) await alertRun(spec, { error }, ctx);
      throw error;
    }
    if (args.json) writeJson(ctx.io.stdout, summary);
    else printSummary(summary, ctx);
    await alertRun(spec!, { summary }, ctx);
    return exitCodeOfRun(summary);
  }
  const members: BatchMember[] = [];
  for (const file of files) {
    members.push({
      file,
      spec: await withPipeline(
        { file, ...strictOf(args) },
        ctx,
        { source: 'required' },
        async (spec) => spec,
      ),
    });
  }
  // Before any of them buys anything: no file's tables may be another's in one destination.
  checkSharedTables(
    members.map((m) => m.spec),
    ctx.env,
  );
  const missing = unmatchedPatterns(
    members.map((m) => m.spec),
    args.job ?? [],
  );
  if (missing.length > 0) {
    throw new UsageError(
      `no job ${missing.map((m) => `'${m}'`).join(', ')} in ${files.join(', ')}`,
      'SLUICE_UNKNOWN_JOB',
    );
  }
  const runs: (RunSummary | (ReturnType<typeof errorDocument> & { file: string }))[] = [];
  const codes: number[] = [];
  const ended = await telemetry.traced(() =>
    runPipelines(members, {
      ...runOptions(args, ctx),
      progress: () => progressOf(args, ctx),
      onRun: (run) => {
        if ('summary' in run) {
          telemetry.ran(run.spec, run.summary);
          runs.push(run.summary);
          codes.push(exitCodeOfRun(run.summary));
          if (!args.json) printSummary(run.summary, ctx);
          return;
        }
        const doc = errorDocument(run.error);
        runs.push({ file: run.file, ...doc });
        codes.push(exitCodeFor(run.error));
        ctx.logger.error({ pipeline: run.spec.name, code: doc.error.code }, doc.error.message);
      },
    }),
  );
  const code = worstExitCode(codes);
  if (args.json) writeJson(ctx.io.stdout, { exit_code: code, runs });
  await Promise.all(ended.map((run) => alertRun(run.spec, run, ctx)));
  return code;
}

/** What `run`'s flags ask of each pipeline run. */
function runOptions(args: RunArgs, ctx: CliContext) {
  return {
    env: ctx.env,
    jobs: args.job,
    fresh: args.fresh,
    fullRefresh: args['full-refresh'],
    wait: args.wait,
    ...(args.parallel === undefined ? {} : { parallel: args.parallel }),
    ...(args['run-key'] === undefined ? {} : { runKey: args['run-key'] }),
    signal: ctx.signal,
    logger: ctx.logger,
    ...(ctx.clock ? { clock: ctx.clock } : {}),
  };
}

function progressOf(args: RunArgs, ctx: CliContext) {
  return ctx.terminal.progress(args.progress !== false);
}

/** `--strict-fields`, passed on to the pipeline files' loads. */
function strictOf(args: RunArgs): { 'strict-fields'?: boolean } {
  return args['strict-fields'] === true ? { 'strict-fields': true } : {};
}

export function printSummary(summary: RunSummary, ctx: CliContext): void {
  const { stdout } = ctx.io;
  const original = summary.replayed ? summary.original : undefined;
  if (original) {
    // A replay bought nothing now: the table is the earlier run's, and says so.
    writeLine(
      stdout,
      `Run ${summary.run_id} of '${summary.pipeline}': ${summary.status}, replayed in ${secondsText(summary.seconds)}s (0 credits spent now) -> ${summary.destination}`,
    );
    writeLine(stdout, `${replayText(summary)}; what that run did:`);
    printJobs(original.jobs, 'credits spent then', ctx);
    return;
  }
  writeLine(
    stdout,
    `Run ${summary.run_id} of '${summary.pipeline}': ${summary.status} in ${secondsText(summary.seconds)}s -> ${summary.destination}`,
  );
  const v = summary.views;
  if (v.created.length + v.updated.length + v.unchanged.length > 0) {
    writeLine(
      stdout,
      `views: ${v.created.length} created, ${v.updated.length} updated, ${v.unchanged.length} unchanged`,
    );
  }
  if (summary.error) writeLine(stdout, `${summary.error.stage}: ${summary.error.message}`);
  printJobs(summary.jobs, 'credits spent', ctx);
}

/** The jobs' table of a run, and a line for each job's error, message or range. */
function printJobs(jobs: readonly JobOutcome[], creditsHeader: string, ctx: CliContext): void {
  const { stdout } = ctx.io;
  if (jobs.length === 0) return;
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
        creditsHeader,
        'seconds',
        'tables',
      ],
      jobs.map((j) => [
        j.job,
        j.status,
        `${j.download_id ?? '-'}${j.reattached ? ' (re-attached)' : ''}`,
        j.found ?? '-',
        j.downloaded,
        j.loaded,
        j.rejected,
        creditsText(j.credits),
        new Fixed(j.seconds),
        tablesText(j.tables),
      ]),
    ),
  );
  for (const j of jobs) {
    if (j.error) writeLine(stdout, `  ${j.job}: ${j.error.message}`);
    else if (j.message) writeLine(stdout, `  ${j.job}: ${j.message}`);
    if (j.incremental) writeLine(stdout, `  ${j.job}: ${rangeText(j.incremental)}`);
  }
}

/**
 * Declares validate, plan, run, status, schema and demo; handlers report their exit code. Over 80
 * lines: the commands' flag declarations, each one line of their `--help`, and no logic.
 */
export function registerPipeline(y: Argv, ctx: CliContext): Argv {
  const done = (code: number) => {
    ctx.exitCode = code;
  };
  return y
    .command(
      'validate <file>',
      'Check a pipeline file and its queries (sends no request, needs no credentials)',
      (c) =>
        strictFieldsOption(pipelineFileArg(c)).example(
          '$0 validate pipelines/demo.yaml',
          'check the demo',
        ),
      async (args) => done(await validateCommand(args, ctx)),
    )
    .command(
      'plan <file>',
      'Show what each job would download and cost, and whether the credit guard passes (spends nothing)',
      (c) =>
        strictFieldsOption(pipelineFileArg(c))
          .option('full-refresh', {
            type: 'boolean',
            default: false,
            describe: 'Plan a run --full-refresh: incremental jobs download everything',
          })
          .option('job', {
            type: 'string',
            array: true,
            describe: 'Plan only these jobs: names or globs (repeatable)',
          })
          .example('$0 plan pipelines/demo.yaml --json', 'as JSON'),
      async (args) => done(await planCommand(args, ctx)),
    )
    .command(
      'run <files..>',
      'Run pipelines: sync views, start or re-attach downloads, load the files',
      (c) =>
        strictFieldsOption(c)
          .positional('files', {
            type: 'string',
            array: true,
            // Else help says `[default: []]` of an argument it requires.
            default: undefined,
            demandOption: true,
            describe:
              'Pipeline files (YAML), run one after another as one command: run again after it stopped, it finishes what it had not',
          })
          .option('json', {
            type: 'boolean',
            default: false,
            describe: 'Print one JSON document on stdout',
          })
          .option('job', {
            type: 'string',
            array: true,
            describe: 'Run only these jobs: names or globs such as "homes_*" (repeatable)',
          })
          .option(
            'parallel',
            numberFlag(
              'parallel',
              { min: 1, max: 64 },
              `Jobs in flight at once, 1 to 64, in place of the file's max_parallel_jobs (default ${DEFAULT_PARALLEL_JOBS})`,
            ),
          )
          .option('run-key', {
            type: 'string',
            describe:
              "An orchestrator's key for the run (a logical date): it names the selected jobs; a retry replays the key's run of them that ended, or finishes the rest, never buying twice",
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
            describe:
              'Wait for another run of the same pipeline instead of exiting; what it loaded is not bought again (a run of the same jobs that ended is replayed)',
          })
          .option('progress', {
            type: 'boolean',
            default: true,
            describe: 'Progress bar on a terminal (--no-progress to hide)',
          })
          .option('metrics-file', {
            type: 'string',
            describe:
              "Write the run's metrics to this file in node_exporter's textfile format (e.g. /var/lib/node_exporter/sluice.prom), atomically",
          })
          .example('$0 run pipelines/demo.yaml', 'run every job')
          .example('$0 run pipelines/demo.yaml --job texas_homes', 'one job')
          .example('$0 run pipelines/a.yaml pipelines/b.yaml', 'two pipelines, one after the other')
          .example(
            '$0 run pipelines/nightly.yaml --run-key 2026-11-26',
            "from an orchestrator: its retries never buy the day's jobs again",
          )
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
        pipelineFileArg(c)
          .option('limit', numberFlag('limit', { min: 1 }, 'How many runs', 10))
          .option('job', {
            type: 'string',
            array: true,
            describe: 'Only these jobs: names or globs (repeatable)',
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
