import type { Argv } from 'yargs';

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
