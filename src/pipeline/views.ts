import type { ServiceClient } from '../client/types.js';
import type { Logger } from '../log.js';
import type { RunSummary } from './outcome.js';
import type { PipelineSpec } from './spec.js';

/** Creates or updates the declared views where the service's differ; leaves the rest alone. */
export async function syncViews(
  client: ServiceClient,
  spec: PipelineSpec,
  log: Logger,
  signal?: AbortSignal,
): Promise<RunSummary['views']> {
  const result: RunSummary['views'] = { created: [], updated: [], unchanged: [] };
  const declared = Object.entries(spec.views);
  if (declared.length === 0) return result;
  if (client.api === 'v3') {
    log.warn('the v3 API cannot manage views: the views in the pipeline file must already exist');
    return result;
  }
  const existing = new Map((await client.listViews({ signal })).map((v) => [v.name, v]));
  for (const [name, { fields }] of declared) {
    const current = existing.get(name);
    if (!current) {
      await client.createView({ name, fields }, { signal });
      result.created.push(name);
      log.info({ view: name }, `created view ${name}`);
    } else if (current.fields.join('\u0000') !== fields.join('\u0000')) {
      await client.updateView(name, { fields }, { signal });
      result.updated.push(name);
      log.info({ view: name }, `updated view ${name}`);
    } else {
      result.unchanged.push(name);
    }
  }
  return result;
}
