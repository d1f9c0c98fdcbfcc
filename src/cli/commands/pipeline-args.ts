import type { Argv } from 'yargs';
import { attachContext } from '../../errors.js';
import { type LoadOptions, loadPipeline, type PipelineSpec } from '../../pipeline/index.js';
import type { CliContext } from '../context.js';

export interface PipelineArgs {
  file: string;
  json?: boolean;
}

export function pipelineFileArg(y: Argv): Argv<PipelineArgs> {
  return y
    .positional('file', { type: 'string', demandOption: true, describe: 'Pipeline file (YAML)' })
    .option('json', {
      type: 'boolean',
      default: false,
      describe: 'Print one JSON document on stdout',
    }) as Argv<PipelineArgs>;
}

/**
 * Runs `work` on the pipeline file; what goes wrong is reported as this pipeline's. The file's
 * warnings (variables left unset, secrets written in the file) are logged, but those of
 * `source:` not when the command never uses the source (`status` reads the destination only).
 */
export async function withPipeline<T>(
  args: PipelineArgs,
  ctx: CliContext,
  load: LoadOptions & { usesSource?: boolean },
  work: (spec: PipelineSpec) => Promise<T>,
): Promise<T> {
  const { usesSource = true, ...options } = load;
  const spec = await loadPipeline(args.file, ctx.env, options);
  for (const warning of spec.warnings) {
    if (usesSource || !/^([^ ]*: )?source[.:]/.test(warning)) {
      ctx.logger.warn({ pipeline: spec.name }, warning);
    }
  }
  try {
    return await work(spec);
  } catch (error) {
    throw attachContext(error, { pipeline: spec.name });
  }
}
