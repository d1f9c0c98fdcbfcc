import type { Destination } from '../load/destination.js';
import { openDestination } from '../load/index.js';
import { openPipelineDestination } from '../pipeline/run/run.js';
import type { PipelineSpec } from '../pipeline/spec/spec.js';

/**
 * Where the dashboard reads: one destination, and the pipeline files that name it (their budgets
 * and pinned columns are in the files, not in the state tables). A destination named on the
 * command line shows every pipeline that ran there.
 *
 * Each answer opens the destination read-only and closes it: a database file that one process
 * at a time can open is held by a run while it writes, so the dashboard reads it between runs,
 * and while a run holds it shows the last answer it read (see server.ts).
 */
export interface Source {
  /** Where it is, without any password (the destination's own description once opened). */
  label: string;
  /** The pipeline files naming it, by pipeline name. */
  specs: Map<string, PipelineSpec>;
  open(): Promise<Destination>;
}

/** Groups pipeline files by the destination they name; URLs stand alone. */
export function sourcesOf(
  specs: readonly PipelineSpec[],
  urls: readonly string[],
  env: NodeJS.ProcessEnv,
): Source[] {
  const byUrl = new Map<string, Source>();
  for (const spec of specs) {
    const url = env.SLUICE_DESTINATION ?? spec.destination.url;
    const key = `${url} ${JSON.stringify(spec.destination.settings)}`;
    const known = byUrl.get(key);
    if (known) {
      known.specs.set(spec.name, spec);
      continue;
    }
    byUrl.set(key, {
      label: redactUrl(url),
      specs: new Map([[spec.name, spec]]),
      open: () => openPipelineDestination(spec, env, { readOnly: true }),
    });
  }
  const sources = [...byUrl.values()];
  for (const url of urls) {
    sources.push({
      label: redactUrl(url),
      specs: new Map(),
      open: () => openDestination(url, { readOnly: true }),
    });
  }
  return sources;
}

/** A URL's password (`user:secret@`) and secret-looking query values, replaced by `***`. */
export function redactUrl(url: string): string {
  return url
    .replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@')
    .replace(/([?&](password|pass|secret|token|key)=)[^&]*/gi, '$1***');
}
