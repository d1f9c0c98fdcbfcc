import type { Argv } from 'yargs';
import { attachContext } from '../../errors.js';
import { type LoadOptions, loadPipeline, type PipelineSpec } from '../../pipeline/index.js';
import type { CliContext } from '../context.js';

export interface PipelineArgs {
  file: string;
  json?: boolean;
  /** `--strict-fields`, on the commands that check fields: refuse what the catalogue lacks. */
  'strict-fields'?: boolean;
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

/** `--strict-fields`, for the commands that check a pipeline's queries, views and keys. */
export function strictFieldsOption<T>(y: Argv<T>): Argv<T & { 'strict-fields': boolean }> {
  return y.option('strict-fields', {
    type: 'boolean',
    default: false,
    describe:
      "Refuse fields sluice's catalogue does not list (queries, views, keys, columns), as strict_fields: true does, instead of warning and sending them",
  }) as Argv<T & { 'strict-fields': boolean }>;
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
  const strict = args['strict-fields'] === true ? { strictFields: true } : {};
  // Its `${VAR}`s from the `.env` beside it, whichever folder the command's other files are in.
  const own = ctx.settings?.forFile(args.file);
  const spec = await loadPipeline(args.file, own?.env ?? ctx.env, {
    ...options,
    ...strict,
    ...(own ? { lookup: own.lookup } : {}),
  });
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
