import type { DataType } from '../catalog.js';
import type { QueryNode } from '../query/ast.js';
import { compileQuery } from '../query/evaluate.js';
import { checkQuery } from '../query/lint.js';
import type { Dataset } from './data/dataset.js';

export type AddressMatching = 'on' | 'off' | 'retry';

export interface SearchOptions {
  autoTrace: boolean;
  addressMatching: AddressMatching;
  requirePeopleData: boolean;
}

/** The records a search found, as indices into the dataset, in dataset order. */
export interface MatchSet {
  readonly count: number;
  at(position: number): number;
}

class RangeSet implements MatchSet {
  constructor(readonly count: number) {}
  at(position: number): number {
    return position;
  }
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

/**
 * Runs queries over the synthetic dataset. A search is a full scan (the emulator has no
 * indexes), so results are cached by query and options: a download started after a count of
 * the same query does not scan again.
 */
export class SearchEngine {
  readonly #dataset: Dataset;
  readonly #cache = new Map<string, MatchSet>();

  constructor(dataset: Dataset) {
    this.#dataset = dataset;
  }

  get dataset(): Dataset {
    return this.#dataset;
  }

  /** Parses and checks a query for a data type; throws QueryError with the service's wording. */
  parse(type: DataType, query: string): QueryNode {
    return checkQuery(query, type);
  }

  match(type: DataType, query: string, options: SearchOptions): MatchSet {
    const key = `${type}\u0000${options.autoTrace}\u0000${options.addressMatching}\u0000${options.requirePeopleData}\u0000${query}`;
    const cached = this.#cache.get(key);
    if (cached) {
      // Refresh its place so the cache evicts the least recently used entry.
      this.#cache.delete(key);
      this.#cache.set(key, cached);
      return cached;
    }
    const ast = this.parse(type, query);
    let result: MatchSet;
    if (options.addressMatching === 'retry') {
      result = this.#scan(type, ast, options, 'off');
      if (result.count === 0) result = this.#scan(type, ast, options, 'on');
    } else {
      result = this.#scan(type, ast, options, options.addressMatching);
    }
    this.#cache.set(key, result);
    if (this.#cache.size > CACHE_SIZE) this.#cache.delete(this.#cache.keys().next().value!);
    return result;
  }

  /** The record at a dataset index as a search returns it (with the owner merged for autotrace). */
  record(type: DataType, index: number, autoTrace: boolean): Record<string, unknown> {
    if (autoTrace && type === 'properties') {
      const traced = this.#dataset.autotrace(index);
      if (traced) return traced;
    }
    return this.#dataset.record(type, index);
  }

  #scan(type: DataType, ast: QueryNode, options: SearchOptions, address: 'on' | 'off'): MatchSet {
    const total = this.#dataset.count(type);
    const filtered = type === 'properties' && (options.autoTrace || options.requirePeopleData);
    if (ast.type === 'all' && !filtered) return new RangeSet(total);
    const predicate = compileQuery(ast, type, { addressMatching: address });
    const found: number[] = [];
    for (let i = 0; i < total; i++) {
      let record: Record<string, unknown> | undefined;
      if (type === 'properties' && options.autoTrace) {
        // Autotrace returns only records whose owner matched a person.
        record = this.#dataset.autotrace(i);
        if (!record) continue;
      } else {
        record = this.#dataset.record(type, i);
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
