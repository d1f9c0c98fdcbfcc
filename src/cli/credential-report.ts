import type { PipelineSpec } from '../pipeline/index.js';
import { envLookup, type SettingOrigin } from '../util/env-layers.js';
import type { CliContext } from './context.js';
import { formatTable, type Io, writeLine } from './output.js';

/** One source of a credential, as `validate --json` and `status --json` list it: never a value. */
export interface CredentialDocument {
  credential: string;
  from: SettingOrigin['from'];
  variable?: string;
  file?: string;
}

/**
 * Where each credential of a pipeline came from: the service's URL, email, password and token,
 * and the destination when a variable gave it (a path written in the file is no credential).
 * `SLUICE_DESTINATION` stands in for the file's destination, as a run takes it.
 */
export function credentialSources(spec: PipelineSpec, ctx: CliContext): CredentialDocument[] {
  const lookup = ctx.settings?.forFile(spec.file).lookup ?? envLookup([{ vars: ctx.env }]);
  const override = lookup('SLUICE_DESTINATION');
  const out: CredentialDocument[] = [];
  for (const { credential, origins } of spec.credentials) {
    if (credential.startsWith('destination')) {
      if (override || origins.every((o) => o.from === 'pipeline_file' && !o.variable)) continue;
    }
    for (const origin of origins) out.push({ credential, ...origin });
  }
  if (override) out.push({ credential: 'destination', ...override.origin });
  return out;
}

/** The credentials' sources as a section of a command's text output. */
export function writeCredentials(io: Io, sources: readonly CredentialDocument[]): void {
  if (sources.length === 0) return;
  const rows = new Map<string, string[]>();
  for (const s of sources) rows.set(s.credential, [...(rows.get(s.credential) ?? []), said(s)]);
  writeLine(io.stdout);
  writeLine(
    io.stdout,
    formatTable(
      ['credential', 'from (values are never shown)'],
      [...rows].map(([credential, from]) => [credential, from.join('; ')]),
    ),
  );
}

function said(s: CredentialDocument): string {
  switch (s.from) {
    case 'environment':
      return `${s.variable} in the environment`;
    case 'env_file':
      return `${s.variable} in ${s.file}`;
    case 'secret_file':
      return `secret file ${s.file}${s.variable ? ` (${s.variable})` : ''}`;
    case 'pipeline_file':
      return s.variable
        ? `the default of \${${s.variable}} in the pipeline file`
        : 'written in the pipeline file';
    case 'unset':
      return `${s.variable}: not set`;
    case 'unreadable':
      return `secret file ${s.file}: cannot be read`;
  }
}
