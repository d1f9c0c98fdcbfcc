import type { ServiceClient, ViewInfo } from '../../client/types.js';
import type { Logger } from '../../log.js';
import type { RunSummary } from '../outcome.js';
import type { PipelineSpec } from '../spec/spec.js';

/**
 * The declared views of a run, kept in step with the service only when a job needs one: a view
 * is created or updated (where the service's differs) once the first job that downloads with it
 * has passed its schema contract and the credit guard, just before that job's download starts.
 * So a run that refuses a job (a frozen table the view would change, a budget) leaves the
 * account's views as they were, and a job never starts a download before its view is in step.
 * Each view is synced once a run, whichever job asks first; a view no starting job uses is left
 * alone.
 */
export class ViewSync {
  readonly #client: ServiceClient;
  readonly #spec: PipelineSpec;
  readonly #log: Logger;
  readonly #signal: AbortSignal | undefined;
  readonly #synced = new Map<string, Promise<void>>();
  #listed: Promise<Map<string, ViewInfo>> | undefined;
  #v3Said = false;
  /** What the run did to each view it synced, for its summary. */
  readonly done: RunSummary['views'] = { created: [], updated: [], unchanged: [] };
  /** The first failure, which the run reports as its own besides failing the job (stage views). */
  failure: unknown;

  constructor(client: ServiceClient, spec: PipelineSpec, log: Logger, signal?: AbortSignal) {
    this.#client = client;
    this.#spec = spec;
    this.#log = log;
    this.#signal = signal;
  }

  /** Whether `view` is one of the pipeline's declared views (the others are not sluice's). */
  declares(view: string | undefined): view is string {
    return view !== undefined && Object.hasOwn(this.#spec.views, view);
  }

  /** Brings a declared view in step with the service, once a run; any other name is left be. */
  async ready(view: string | undefined): Promise<void> {
    if (!this.declares(view)) return;
    if (this.#client.api === 'v3') {
      if (!this.#v3Said) {
        this.#v3Said = true;
        this.#log.warn(
          'the v3 API cannot manage views: the views in the pipeline file must already exist',
        );
      }
      return;
    }
    let synced = this.#synced.get(view);
    if (!synced) {
      synced = this.#sync(view).catch((error: unknown) => {
        this.failure ??= error;
        throw error;
      });
      this.#synced.set(view, synced);
    }
    await synced;
  }

  async #sync(name: string): Promise<void> {
    const { fields } = this.#spec.views[name]!;
    const signal = this.#signal;
    this.#listed ??= this.#client
      .listViews({ signal })
      .then((views) => new Map(views.map((v) => [v.name, v])));
    const current = (await this.#listed).get(name);
    if (!current) {
      await this.#client.createView({ name, fields }, { signal });
      this.done.created.push(name);
      this.#log.info({ view: name }, `created view ${name}`);
    } else if (current.fields.join('\u0000') !== fields.join('\u0000')) {
      await this.#client.updateView(name, { fields }, { signal });
      this.done.updated.push(name);
      this.#log.info({ view: name }, `updated view ${name}`);
    } else {
      this.done.unchanged.push(name);
    }
  }
}
