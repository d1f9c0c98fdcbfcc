import type { Argv } from 'yargs';
import { UsageError } from '../../errors.js';
import {
  notifyRun,
  notifyTargets,
  type PipelineSpec,
  type RunEnd,
  type RunSummary,
  testTargets,
} from '../../pipeline/index.js';
import { errorInfo } from '../../pipeline/outcome.js';
import type { CliContext } from '../context.js';
import { EXIT, exitCodeFor } from '../exit-codes.js';
import { formatTable, writeJson, writeLine } from '../output.js';
import { type PipelineArgs, pipelineFileArg, withPipeline } from './pipeline-args.js';

/**
 * Alerts of `run` (the pipeline's `notify:`), sent once the run's outcome is printed, and
 * `sluice notify test FILE`. Sending never changes a run's exit code or its JSON document.
 */

/** Sends a run's alerts: its summary's, or the error that kept it from running. */
export async function alertRun(
  spec: PipelineSpec,
  end: { summary: RunSummary } | { error: unknown },
  ctx: CliContext,
): Promise<void> {
  const ended: RunEnd =
    'summary' in end ? end : { error: errorInfo(end.error), exit: exitCodeFor(end.error) };
  await notifyRun(spec, ended, {
    env: ctx.env,
    logger: ctx.logger,
    ...(ctx.clock ? { now: () => ctx.clock!.now() } : {}),
  });
}

/** `sluice notify test FILE`: a sample alert to each target, and what each answered. */
export function notifyTestCommand(args: PipelineArgs, ctx: CliContext): Promise<number> {
  return withPipeline(args, ctx, { source: 'optional', views: 'offline' }, async (spec) => {
    if (notifyTargets(spec).length === 0) {
      throw new UsageError(
        `${spec.file} has no notify: and no SLUICE_NOTIFY_WEBHOOK, SLUICE_NOTIFY_SLACK or SLUICE_NOTIFY_EMAIL is set: nothing to test (e.g. notify: { webhook: https://... })`,
      );
    }
    const deliveries = await testTargets(spec);
    const ok = deliveries.every((d) => d.ok);
    if (args.json) {
      writeJson(ctx.io.stdout, { pipeline: spec.name, ok, targets: deliveries });
    } else {
      writeLine(ctx.io.stdout, `Test alert of '${spec.name}' to ${deliveries.length} target(s):`);
      writeLine(
        ctx.io.stdout,
        formatTable(
          ['target', 'host', 'result', 'tries', 'answer'],
          deliveries.map((d) => [
            d.kind,
            d.host,
            d.ok ? 'delivered' : 'FAILED',
            d.attempts,
            d.answer,
          ]),
        ),
      );
    }
    return ok ? EXIT.ok : EXIT.failed;
  });
}

export function registerNotify(y: Argv, ctx: CliContext): Argv {
  return y.command('notify', "Check a pipeline's alerts (notify:)", (notify) =>
    notify
      .command(
        'test <file>',
        "Send a sample alert to each of the pipeline's targets and show what each answered",
        (c) =>
          pipelineFileArg(c).example(
            '$0 notify test pipelines/nightly.yaml',
            "try the nightly pipeline's webhook, Slack and e-mail",
          ),
        async (args) => {
          ctx.exitCode = await notifyTestCommand(args, ctx);
        },
      )
      .demandCommand(1, 'Name a notify command: test'),
  );
}
