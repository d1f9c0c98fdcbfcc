import type { DataType } from '../../catalog.js';
import type { QueryNode } from '../../query/ast.js';
import { compileQuery } from '../../query/evaluate.js';
import { checkQuery } from '../../query/lint.js';
import type { Dataset } from '../data/dataset.js';
import type { ExtraFields } from './extra-fields.js';
import type { Horizon, World } from './world.js';

export type AddressMatching = 'on' | 'off' | 'retry';

export interface SearchOptions {
  autoTrace: boolean;
  addressMatching: AddressMatching;
  onlyTraceable: boolean;
}

/** The records a search found, as indices into the dataset, in dataset order. */
export interface MatchSet {
  readonly count: number;
  at(position: number): number;
}

class IndexSet implements MatchSet {
  readonly #indices: Uint32Array;
  constructor(indices: Uint32Array) {
    this.#indices = indices;
  }
  get count(): number {
    return this.#indices.length;
  }
  at(position: number): number {
    return this.#indices[position]!;
  }
}

const CACHE_SIZE = 32;

/** A search's result and the span of emulator time in which the world gives the same one. */
interface Cached {
  result: MatchSet;
  from: number;
  until: number;
  generation: number;
}

/**
 * Runs queries over the synthetic dataset as of a moment of emulator time. A search is a full
 * scan (the emulator has no indexes), so results are cached by query and options: a download
 * started after a count of the same query does not scan again. The scan also learns the
 * soonest moment at which a record it read changes or a new one appears, and the result serves
 * only until then.
 */
export class SearchEngine {
  readonly #world: World;
  readonly #cache = new Map<string, Cached>();

  constructor(world: World) {
    this.#world = world;
  }

  get world(): World {
    return this.#world;
  }

  get dataset(): Dataset {
    return this.#world.dataset;
  }

  /**
   * Parses and checks a query for a data type against the fields served (the catalogue's and
   * the extra ones); throws QueryError with the service's wording, for an unknown field too.
   */
  parse(type: DataType, query: string): QueryNode {
    return checkQuery(query, type, { strict: true, schema: this.#schema(type) }).ast;
  }

  #schema(type: DataType) {
    const extras = this.#world.extras;
    return (path: string) => extras.resolve(type, path);
  }

  /** The records matching a query as of `at` (emulator ms). */
  match(type: DataType, query: string, options: SearchOptions, at: number): MatchSet {
    const key = `${type}\u0000${options.autoTrace}\u0000${options.addressMatching}\u0000${options.onlyTraceable}\u0000${query}`;
    const generation = this.#world.generation;
    const cached = this.#cache.get(key);
    if (cached) {
      this.#cache.delete(key);
      if (cached.generation === generation && cached.from <= at && at < cached.until) {
        // Back at the end, so the cache evicts the least recently used entry.
        this.#cache.set(key, cached);
        return cached.result;
      }
    }
    const ast = this.parse(type, query);
    const horizon: Horizon = { until: Number.POSITIVE_INFINITY };
    let result: MatchSet;
    if (options.addressMatching === 'retry') {
      result = this.#scan(type, ast, options, 'off', at, horizon);
      if (result.count === 0) result = this.#scan(type, ast, options, 'on', at, horizon);
    } else {
      result = this.#scan(type, ast, options, options.addressMatching, at, horizon);
    }
    this.#cache.set(key, { result, from: at, until: horizon.until, generation });
    if (this.#cache.size > CACHE_SIZE) this.#cache.delete(this.#cache.keys().next().value!);
    return result;
  }

  /**
   * The record at a dataset index as of `at`, as a search returns it (with the owner merged
   * for autotrace).
   */
  record(
    type: DataType,
    index: number,
    autoTrace: boolean,
    at: number,
    extras?: ExtraFields,
  ): Record<string, unknown> {
    if (autoTrace && type === 'properties') {
      const traced = this.#world.autotrace(index, at, undefined, extras);
      if (traced) return traced;
    }
    return this.#world.record(type, index, at, undefined, extras);
  }

  #scan(
    type: DataType,
    ast: QueryNode,
    options: SearchOptions,
    address: 'on' | 'off',
    at: number,
    horizon: Horizon,
  ): MatchSet {
    const world = this.#world;
    const list = world.indices(type, at);
    horizon.until = Math.min(horizon.until, world.nextArrival(type, at));
    const filtered = type === 'properties' && (options.autoTrace || options.onlyTraceable);
    if (ast.type === 'all' && !filtered) return list;
    const predicate = compileQuery(ast, type, {
      addressMatching: address,
      schema: this.#schema(type),
    });
    const found: number[] = [];
    for (let p = 0; p < list.count; p++) {
      const i = list.at(p);
      let record: Record<string, unknown> | undefined;
      if (type === 'properties' && options.autoTrace) {
        // Autotrace returns only records whose owner matched a person.
        record = world.autotrace(i, at, horizon);
        if (!record) continue;
      } else {
        record = world.record(type, i, at, horizon);
        if (filtered && !hasPeople(record)) continue;
      }
      if (predicate(record)) found.push(i);
    }
    return new IndexSet(Uint32Array.from(found));
  }

  clear(): void {
    this.#cache.clear();
  }
}

function hasPeople(record: Record<string, unknown>): boolean {
  return Array.isArray(record.people) && record.people.length > 0;
}
