import { readFileSync } from 'node:fs';
import {
  type BudgetStanding,
  budgetsNow,
  type PipelineSpec,
  type RunSummary,
  withTracer,
} from '../../pipeline/index.js';
import type { CliContext } from '../context.js';
import { type OtlpConfig, otlpSetting } from './config.js';

/**
 * A command's telemetry: the trace and metrics OpenTelemetry's variables ask for (config.ts),
 * and `--metrics-file`. Undefined when neither is asked for: then no module of them is loaded
 * and a run does nothing more. Whatever goes wrong exporting is a warning: it never changes a
 * run's outcome or its exit code, and it takes at most the export timeout (5 s by default).
 */
interface Telemetry {
  /** Runs the command's pipelines, traced when a trace is asked for. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Sends (and writes) what the runs did, once they ended. */
  finish(runs: readonly { spec: PipelineSpec; summary: RunSummary }[]): Promise<void>;
}

/** What a command's runs tell its telemetry. */
export interface RunTelemetry {
  /** Runs pipelines, traced when a trace is asked for. */
  traced<T>(work: () => Promise<T>): Promise<T>;
  /** A run that ended: its metrics are sent with the others' when the command ends. */
  ran(spec: PipelineSpec, summary: RunSummary): void;
}

/**
 * Runs a command's pipelines (`work`) with the telemetry the environment and `metricsFile` ask
 * for; once they ended (or threw), the trace and the metrics are sent.
 */
export async function withTelemetry<T>(
  ctx: CliContext,
  metricsFile: string | undefined,
  work: (telemetry: RunTelemetry) => Promise<T>,
): Promise<T> {
  const telemetry = await startTelemetry(ctx, metricsFile);
  if (!telemetry) return work({ traced: (run) => run(), ran() {} });
  const ran: { spec: PipelineSpec; summary: RunSummary }[] = [];
  try {
    return await work({
      traced: (run) => telemetry.run(run),
      ran: (spec, summary) => ran.push({ spec, summary }),
    });
  } finally {
    await telemetry.finish(ran);
  }
}

async function startTelemetry(
  ctx: CliContext,
  metricsFile: string | undefined,
): Promise<Telemetry | undefined> {
  const setting = otlpSetting(ctx.env);
  if (setting && 'unsupported' in setting) ctx.logger.warn(`telemetry: ${setting.unsupported}`);
  const config = setting && 'config' in setting ? setting.config : undefined;
  if (!config && metricsFile === undefined) return undefined;
  const startedAt = ctx.clock?.now() ?? Date.now();
  const otlp = config ? await import('./otlp.js') : undefined;
  const tracer = otlp && config?.traces ? new otlp.OtlpTracer(config) : undefined;
  return {
    run: (work) => (tracer ? withTracer(tracer, work) : work()),
    async finish(runs) {
      const exports: Promise<void>[] = [];
      const warn = (what: string) => (error: unknown) =>
        ctx.logger.warn(`telemetry: ${what} failed: ${(error as Error).message}`);
      if (otlp && tracer && config?.traces && tracer.spans.length > 0) {
        const body = otlp.tracesBody(tracer, config, version());
        exports.push(otlp.send(config.traces, body, config.timeoutMs).catch(warn('the trace')));
      }
      if (runs.length > 0 && (config?.metrics || metricsFile !== undefined)) {
        exports.push(sendMetrics(ctx, runs, config, metricsFile, startedAt, warn));
      }
      await Promise.all(exports);
    },
  };
}

async function sendMetrics(
  ctx: CliContext,
  runs: readonly { spec: PipelineSpec; summary: RunSummary }[],
  config: OtlpConfig | undefined,
  metricsFile: string | undefined,
  startedAt: number,
  warn: (what: string) => (error: unknown) => void,
): Promise<void> {
  const now = ctx.clock?.now() ?? Date.now();
  const measured = [];
  for (const run of runs) measured.push({ ...run, budgets: await budgetsOf(ctx, run.spec, now) });
  const { runMetrics } = await import('./metrics.js');
  const metrics = runMetrics(measured, now);
  const done: Promise<void>[] = [];
  if (metricsFile !== undefined) {
    const { writeTextfile } = await import('./textfile.js');
    done.push(writeTextfile(metricsFile, metrics).catch(warn(`--metrics-file ${metricsFile}`)));
  }
  if (config?.metrics) {
    const otlp = await import('./otlp.js');
    const body = otlp.metricsBody(metrics, config, version(), startedAt);
    done.push(otlp.send(config.metrics, body, config.timeoutMs).catch(warn('the metrics')));
  }
  await Promise.all(done);
}

/** What the pipeline's budgets have left now; none when they cannot be read (warned). */
async function budgetsOf(
  ctx: CliContext,
  spec: PipelineSpec,
  now: number,
): Promise<BudgetStanding[]> {
  try {
    return await budgetsNow(spec, ctx.env, now);
  } catch (error) {
    ctx.logger.warn(`telemetry: the budgets of '${spec.name}': ${(error as Error).message}`);
    return [];
  }
}

/** sluice's version, from its package.json (three folders up from src/cli/telemetry). */
function version(): string {
  const file = new URL('../../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}
