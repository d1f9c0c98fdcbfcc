import type { DataType } from '../../catalog.js';
import { type Dataset, mergeOwner, mix, Rng } from '../data/dataset.js';
import { applyChanges, type Change, isoMs, KEPT_CHANGES } from './churn.js';
import { ExtraFields } from './extra-fields.js';

type Json = Record<string, unknown>;

const DAY_MS = 86_400_000;
/** Records added through the control API take indices from here on, past any churn adds. */
const CONTROL_FIRST = 0x8000_0000;
const TYPE_NUMBER: Record<DataType, number> = {
  properties: 1,
  businesses: 2,
  products: 3,
  people: 4,
};
const SCHEDULE_SALT = 0x51ed270b;
const CHANGE_SALT = 0x68e31da4;
const ARRIVAL_SALT = 0x2f4a7c15;

/** Lowered by each read to the first time after the read's moment when what it read changes. */
export interface Horizon {
  until: number;
}

/** The records of a type at a moment, as dataset indices in the order searches return them. */
export interface IndexList {
  readonly count: number;
  at(position: number): number;
}

export interface ChurnStats {
  /** Records of the start that have changed at least once. */
  updated: number;
  /** Records that appeared since the start, by churn or through the control API. */
  added: number;
}

interface Keys {
  schedule: number;
  change: number;
  arrival: number;
}

interface Added {
  at: number;
  fields: Json;
}

/** The records at a moment: those of the start, then those churn added, then the control API's. */
class Indices implements IndexList {
  constructor(
    readonly base: number,
    readonly firstNew: number,
    readonly arrived: number,
    readonly controlled: number,
  ) {}
  get count(): number {
    return this.base + this.arrived + this.controlled;
  }
  at(position: number): number {
    if (position < this.base) return position;
    const p = position - this.base;
    return p < this.arrived ? this.firstNew + p : CONTROL_FIRST + (p - this.arrived);
  }
}

/**
 * The dataset as it changes with the emulator's clock. From the clock's start (the origin) each
 * record is updated at random times, at `churn` per day, and new records appear at `churn` times
 * the base size per day. Both are drawn from (seed, type, index), so the same seed and the same
 * clock give the same world, and nothing is stored: reading a record as of a moment replays the
 * few changes it had by then. Only changes made through the control API are remembered.
 */
export class World {
  readonly #dataset: Dataset;
  readonly #churn: number;
  readonly #keys: Record<DataType, Keys>;
  #origin = 0;
  #generation = 0;
  #extras: ExtraFields;
  readonly #added: Record<DataType, Added[]> = {
    properties: [],
    businesses: [],
    products: [],
    people: [],
  };
  readonly #updates: Record<DataType, Map<number, number[]>> = {
    properties: new Map(),
    businesses: new Map(),
    products: new Map(),
    people: new Map(),
  };

  constructor(
    dataset: Dataset,
    churnPerDay: number,
    startedAt: number,
    extras: ExtraFields = new ExtraFields(),
  ) {
    this.#dataset = dataset;
    this.#churn = churnPerDay;
    this.#extras = extras;
    const key = (salt: number, type: DataType) => mix(dataset.seed, salt, TYPE_NUMBER[type]);
    this.#keys = Object.fromEntries(
      (Object.keys(TYPE_NUMBER) as DataType[]).map((type) => [
        type,
        {
          schedule: key(SCHEDULE_SALT, type),
          change: key(CHANGE_SALT, type),
          arrival: key(ARRIVAL_SALT, type),
        },
      ]),
    ) as Record<DataType, Keys>;
    this.reset(startedAt);
  }

  get dataset(): Dataset {
    return this.#dataset;
  }

  /** Fraction of records updated per day. */
  get churn(): number {
    return this.#churn;
  }

  /** Where changes begin: the clock's start, on a whole second so no change is dated before it. */
  get origin(): number {
    return this.#origin;
  }

  /** Bumped by every change through the control API and by reset: cached reads are stale. */
  get generation(): number {
    return this.#generation;
  }

  /** The fields served beyond the core ones (extra-fields.ts). */
  get extras(): ExtraFields {
    return this.#extras;
  }

  /** Serves these extra fields from now on: searches see them, and downloads started later. */
  setExtras(extras: ExtraFields): void {
    this.#extras = extras;
    this.#generation += 1;
  }

  reset(startedAt: number): void {
    this.#origin = Math.floor(startedAt / 1000) * 1000;
    for (const list of Object.values(this.#added)) list.length = 0;
    for (const map of Object.values(this.#updates)) map.clear();
    this.#generation += 1;
  }

  indices(type: DataType, at: number): IndexList {
    return this.#indices(type, at);
  }

  #indices(type: DataType, at: number): Indices {
    const added = this.#added[type];
    let controlled = added.length;
    while (controlled > 0 && added[controlled - 1]!.at > at) controlled--;
    return new Indices(
      this.#dataset.count(type),
      this.#dataset.firstNewIndex(type),
      this.#arrived(type, at),
      controlled,
    );
  }

  /** When the next record of a type appears by churn after `at` (Infinity when none will). */
  nextArrival(type: DataType, at: number): number {
    return this.#churn > 0
      ? this.#arrival(type, this.#arrived(type, at))
      : Number.POSITIVE_INFINITY;
  }

  /**
   * Record `index` as of `at`, with `extras` (those served now, unless a download's own);
   * `horizon` learns when it next changes.
   */
  record(
    type: DataType,
    index: number,
    at: number,
    horizon?: Horizon,
    extras: ExtraFields = this.#extras,
  ): Json {
    const record = this.#dataset.record(type, index);
    extras.apply(type, index, record, this.#dataset.seed);
    const born = this.#bornAt(type, index);
    if (born !== undefined) {
      record.dateAdded = isoMs(born);
      record.dateUpdated = record.dateAdded;
      if (index >= CONTROL_FIRST) {
        Object.assign(record, structuredClone(this.#added[type][index - CONTROL_FIRST]!.fields));
      }
    }
    const times = this.#changeTimes(type, index, born ?? this.#origin, at, horizon);
    if (times) applyChanges(type, record, this.#changes(type, index, times));
    return record;
  }

  /** Property `index` with its owner's people record (as of `at`) merged in, or undefined. */
  autotrace(
    index: number,
    at: number,
    horizon?: Horizon,
    extras: ExtraFields = this.#extras,
  ): Json | undefined {
    const owner = this.#dataset.ownerOf(index);
    if (owner?.personIndex === undefined) return undefined;
    const property = this.record('properties', index, at, horizon, extras);
    const person = this.record('people', owner.personIndex, at, horizon, extras);
    return mergeOwner(property, person, owner);
  }

  /**
   * A number that changes whenever the record as returned (with its owner for autotrace)
   * changes: files of the same records at the same versions are the same file.
   */
  version(type: DataType, index: number, at: number, autoTrace: boolean): number {
    const own = this.#changeCount(type, index, at);
    if (!autoTrace || type !== 'properties') return own;
    const person = this.#dataset.ownerOf(index)?.personIndex;
    return person === undefined ? own : own * 0x100000 + this.#changeCount('people', person, at);
  }

  /** Dataset indices of the records with these ids as of `at`; ids not found are left out. */
  find(type: DataType, ids: readonly string[], at: number): Map<string, number> {
    const wanted = new Set(ids);
    const found = new Map<string, number>();
    const list = this.indices(type, at);
    for (let p = 0; p < list.count && found.size < wanted.size; p++) {
      const index = list.at(p);
      const id = this.#dataset.id(type, index);
      if (wanted.has(id)) found.set(id, index);
    }
    return found;
  }

  /**
   * Updates records at `at` (the control API's "now", or a time to come: a targeted update's
   * records are refreshed as it progresses), as a churn change would.
   */
  update(type: DataType, indices: readonly number[], at: number): void {
    const updates = this.#updates[type];
    for (const index of indices) {
      const times = updates.get(index) ?? [];
      times.push(at);
      updates.set(index, times);
    }
    this.#generation += 1;
  }

  /** Adds `count` records at `at` with `fields` set on each; answers their indices. */
  add(type: DataType, count: number, fields: Json, at: number): number[] {
    const added = this.#added[type];
    const indices: number[] = [];
    for (let i = 0; i < count; i++) {
      indices.push(CONTROL_FIRST + added.length);
      added.push({ at, fields });
    }
    this.#generation += 1;
    return indices;
  }

  /** What has changed between the origin and `at`; a pass over the type's records, no more. */
  stats(type: DataType, at: number): ChurnStats {
    const list = this.#indices(type, at);
    const manual = this.#updates[type];
    let updated = 0;
    for (let index = 0; index < list.base; index++) {
      if (this.#firstChange(type, index, this.#origin) <= at) updated++;
      else if (manual.size > 0 && manual.get(index)?.some((t) => t <= at)) updated++;
    }
    return { updated, added: list.arrived + list.controlled };
  }

  /** When record `index` came to be; undefined for the records of the start. */
  #bornAt(type: DataType, index: number): number | undefined {
    if (index < this.#dataset.count(type)) return undefined;
    if (index >= CONTROL_FIRST) return this.#added[type][index - CONTROL_FIRST]!.at;
    return this.#arrival(type, index - this.#dataset.firstNewIndex(type));
  }

  /**
   * Arrival `k` comes at (k + 1 + jitter) / rate after the origin, the jitter within half a
   * period either way: arrivals never cross, so how many came by a moment is found in a few
   * steps from the rate, whatever the time.
   */
  #arrival(type: DataType, k: number): number {
    const perMs = (this.#churn * this.#dataset.count(type)) / DAY_MS;
    const jitter = mix(this.#keys[type].arrival, k) / 4294967296 - 0.5;
    return this.#origin + Math.ceil((k + 1 + jitter) / perMs);
  }

  #arrived(type: DataType, at: number): number {
    if (this.#churn === 0 || at <= this.#origin) return 0;
    const perMs = (this.#churn * this.#dataset.count(type)) / DAY_MS;
    const room = CONTROL_FIRST - this.#dataset.firstNewIndex(type);
    let n = Math.min(room, Math.max(0, Math.floor((at - this.#origin) * perMs) - 2));
    while (n > 0 && this.#arrival(type, n - 1) > at) n--;
    while (n < room && this.#arrival(type, n) <= at) n++;
    return n;
  }

  /** Milliseconds to a record's next change: exponential, so changes come as a Poisson process. */
  #gap(unit: number): number {
    return Math.max(1, Math.ceil((-Math.log(1 - unit) * DAY_MS) / this.#churn));
  }

  #firstChange(type: DataType, index: number, start: number): number {
    if (this.#churn === 0) return Number.POSITIVE_INFINITY;
    return start + this.#gap(mix(this.#keys[type].schedule, index) / 4294967296);
  }

  /** Times of the changes of a record up to `at`, in order; undefined when there are none. */
  #changeTimes(
    type: DataType,
    index: number,
    start: number,
    at: number,
    horizon?: Horizon,
  ): number[] | undefined {
    let times: number[] | undefined;
    let t = this.#firstChange(type, index, start);
    let rng: Rng | undefined;
    while (t <= at) {
      times ??= [];
      times.push(t);
      rng ??= new Rng(mix(this.#keys[type].schedule, index, 1));
      t += this.#gap(rng.next());
    }
    if (horizon && t < horizon.until) horizon.until = t;
    const manual = this.#updates[type].size > 0 ? this.#updates[type].get(index) : undefined;
    if (manual) {
      const made = manual.filter((m) => m <= at);
      if (made.length > 0) times = [...(times ?? []), ...made].sort((a, b) => a - b);
      // An update set for later (a targeted update refreshes its records one after another)
      // changes what a read of this moment holds once its time comes.
      const next = Math.min(...manual.filter((m) => m > at));
      if (horizon && next < horizon.until) horizon.until = next;
    }
    return times;
  }

  #changeCount(type: DataType, index: number, at: number): number {
    return (
      this.#changeTimes(type, index, this.#bornAt(type, index) ?? this.#origin, at)?.length ?? 0
    );
  }

  /** The latest changes of a record, each with the draws of its place in the record's history. */
  #changes(type: DataType, index: number, times: readonly number[]): Change[] {
    const first = Math.max(0, times.length - KEPT_CHANGES);
    const key = mix(this.#keys[type].change, index);
    return times.slice(first).map((at, i) => ({ at, rng: new Rng(mix(key, first + i)) }));
  }
}
