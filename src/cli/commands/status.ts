import type { BudgetStanding, PipelineSpec } from '../../pipeline/index.js';
import { statusReport } from '../../pipeline/report/status-report.js';
import type { CliContext } from '../context.js';
import {
  type CredentialDocument,
  credentialSources,
  writeCredentials,
} from '../credential-report.js';
import { EXIT } from '../exit-codes.js';
import { creditsText } from '../format.js';
import { clipCell, formatTable, type Io, writeJson, writeLine } from '../output.js';
import { type PipelineArgs, withPipeline } from './pipeline-args.js';

/**
 * `sluice status`: recent runs, jobs, downloads and files of a pipeline, read from its state
 * tables. Read-only: it opens the destination for reading, creates nothing, and needs no
 * service credentials.
 */
export function statusCommand(args: StatusArgs, ctx: CliContext): Promise<number> {
  return withPipeline(args, ctx, { source: 'optional', usesSource: false }, async (spec) => {
    const credentials = credentialSources(spec, ctx);
    const now = ctx.clock?.now() ?? Date.now();
    const code = await status(spec, args, ctx.io, ctx.env, now, credentials);
    if (!args.json) writeCredentials(ctx.io, credentials);
    return code;
  });
}

/** What `statusReport` returns when the destination holds state for the pipeline. */
type FoundReport = Extract<Awaited<ReturnType<typeof statusReport>>, { state: 'found' }>;
type StatusArgs = PipelineArgs & { limit?: number; job?: string[] };

async function status(
  spec: PipelineSpec,
  args: StatusArgs,
  io: Io,
  env: NodeJS.ProcessEnv,
  now: number,
  credentials: CredentialDocument[],
): Promise<number> {
  const report = await statusReport(spec, env, now, { limit: args.limit ?? 10, jobs: args.job });
  if (report.state === 'none') {
    writeNoState(spec, report, args.json, io, credentials);
  } else if (args.json) {
    writeStatusJson(spec, report, io, credentials);
  } else {
    writeStatusText(spec, report, io);
  }
  return EXIT.ok;
}

/** The destination holds no state of this pipeline: say where it looked. */
function writeNoState(
  spec: PipelineSpec,
  report: { destination: string; budgets: BudgetStanding[] },
  json: boolean | undefined,
  io: Io,
  credentials: CredentialDocument[],
): void {
  const where = report.destination;
  if (json) {
    writeJson(io.stdout, {
      pipeline: spec.name,
      destination: where,
      state: 'none',
      runs: [],
      budgets: report.budgets,
      credentials,
    });
  } else {
    writeLine(
      io.stdout,
      `no state found at ${where}: pipeline '${spec.name}' has not run against this destination (or the destination is not the one you meant)`,
    );
  }
}

/** `--json`: the state found, as one document. */
function writeStatusJson(
  spec: PipelineSpec,
  report: FoundReport,
  io: Io,
  credentials: CredentialDocument[],
): void {
  const { resume, recent, paid, budgets } = report;
  writeJson(io.stdout, {
    pipeline: spec.name,
    destination: report.destination,
    state: 'found',
    resume: resume ?? null,
    runs: recent.runs.map(({ summary, credits: _credits, ...run }) => ({
      ...run,
      credits_paid: paid.get(run.run_id) ?? {},
      summary: summary ? JSON.parse(summary) : null,
    })),
    jobs: recent.jobs.map(({ summary: _summary, ...job }) => job),
    // A scrape's saved answer is records, not status: it stays in the state tables.
    downloads: recent.downloads.map(({ payload: _payload, ...d }) => ({
      ...d,
      kind: d.kind ?? 'download',
    })),
    files: recent.files,
    rejects: recent.rejects,
    cursors: recent.cursors,
    budgets,
    credentials,
  });
}

/** The state found, as tables: runs, downloads, then cursors and budgets when there are any. */
function writeStatusText(spec: PipelineSpec, report: FoundReport, io: Io): void {
  const { resume, recent, paid, budgets } = report;
  writeLine(io.stdout, `Pipeline '${spec.name}' in ${report.destination}`);
  if (resume) {
    writeLine(
      io.stdout,
      `A run before ${resume.until} resumes run ${resume.run_id} (${resume.status}): ${resume.skip.length > 0 ? `it skips ${resume.skip.join(', ')}, already loaded` : 'no job of it was loaded'}; --fresh runs every job anew.`,
    );
  }
  writeLine(io.stdout);
  writeLine(io.stdout, 'Recent runs');
  writeLine(
    io.stdout,
    formatTable(
      ['run', 'started', 'finished', 'status', 'stage', 'credits paid', 'error'],
      recent.runs.map((r) => [
        r.run_id,
        r.started_at,
        r.finished_at ?? '-',
        r.status,
        r.stage ?? '-',
        creditsText(paid.get(r.run_id) ?? {}),
        clipCell(r.error_message ?? ''),
      ]),
    ),
  );
  writeLine(io.stdout);
  writeDownloads(recent, io);
  if (recent.cursors.length > 0) {
    writeLine(io.stdout);
    writeLine(
      io.stdout,
      'Cursors of incremental jobs (the next run downloads from here, less the lookback)',
    );
    writeLine(
      io.stdout,
      formatTable(
        ['job', 'field', 'cursor', 'moved at', 'by run'],
        recent.cursors.map((c) => [c.job, c.field, c.value, c.updated_at, c.run_id]),
      ),
    );
  }
  if (budgets.length > 0) {
    writeLine(io.stdout);
    writeLine(io.stdout, 'Budgets: spent this period (calendar periods in UTC)');
    writeLine(io.stdout, budgetsTable(budgets));
  }
}

/** The downloads table, with the files loaded and records rejected of each download. */
function writeDownloads(recent: FoundReport['recent'], io: Io): void {
  // Targeted updates and scrapes are bought as downloads are, and listed with them.
  const kinds = recent.downloads.some((d) => d.kind);
  writeLine(io.stdout, kinds ? 'Downloads, targeted updates and scrapes' : 'Downloads');
  const rejects = new Map(recent.rejects.map((r) => [r.download_id, Number(r.count)]));
  const filesBy = new Map<string, number>();
  for (const f of recent.files) filesBy.set(f.download_id, (filesBy.get(f.download_id) ?? 0) + 1);
  const headers = [
    'job',
    'download',
    'status',
    'found',
    'records',
    'files loaded',
    'rejected',
    'table',
    'requested',
  ];
  writeLine(
    io.stdout,
    formatTable(
      kinds ? ['job', 'kind', ...headers.slice(1)] : headers,
      recent.downloads.map((d) => {
        const row = [
          d.job,
          d.download_id ?? '-',
          d.status,
          d.num_found ?? '-',
          d.num_records ?? '-',
          d.download_id ? (filesBy.get(d.download_id) ?? 0) : 0,
          d.download_id ? (rejects.get(d.download_id) ?? 0) : 0,
          d.kind === 'targeted_update' ? '-' : d.target_table,
          d.requested_at,
        ];
        return kinds ? [d.job, kindText(d.kind), ...row.slice(1)] : row;
      }),
    ),
  );
}

function kindText(kind: string | null | undefined): string {
  return kind === 'targeted_update' ? 'targeted update' : (kind ?? 'download');
}

function budgetsTable(budgets: readonly BudgetStanding[]): string {
  return formatTable(
    ['credits', 'budget', 'period', 'spent', 'left'],
    budgets.map((b) => [
      b.type,
      `${b.limit.toLocaleString('en-US')}/${b.period}`,
      `${b.from} to ${b.until}`,
      b.spent,
      b.limit - b.spent,
    ]),
  );
}
