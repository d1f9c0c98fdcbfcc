import { createHash } from 'node:crypto';

/**
 * Every physical name sluice makes (tables, child and link tables, staging tables, indexes,
 * columns) comes from here. Logical names are unbounded (`homes__people__phone_numbers`); a
 * destination has an identifier limit (63 bytes for one of them, beyond which it silently cuts).
 * A name over the limit is shortened to a prefix and a hash of the whole logical name, the same
 * way every run, so two logical names never meet in one physical name, and a staging table can
 * never be cut down to the name of the live table it stands in for.
 */
export class Naming {
  constructor(
    /** The destination's identifier limit in UTF-8 bytes (Infinity: none). */
    readonly maxBytes: number,
    /** How a logical name is spelt before it is fitted (`naming:` of the pipeline file). */
    readonly style: NamingStyle = 'keep',
  ) {}

  /** The physical name for a logical name: itself when it fits, else prefix + `_` + hash. */
  fit(name: string): string {
    if (Buffer.byteLength(name) <= this.maxBytes) return name;
    const tail = `_${hash(name, 8)}`;
    return cutToBytes(name, this.maxBytes - tail.length) + tail;
  }

  /** A logical name in the style, not yet fitted to the limit. */
  spell(logical: string): string {
    return this.style === 'snake_case' ? snakeCase(logical) : logical;
  }

  table(logical: string): string {
    return this.fit(this.spell(logical));
  }

  column(logical: string): string {
    return this.fit(this.spell(logical));
  }

  /**
   * Where a `write: replace` builds the new table before the swap. `owner` (the pipeline) is
   * part of it, so two pipelines replacing the same table never share a staging table.
   */
  staging(logical: string, owner: string): string {
    return this.fit(`${this.spell(logical)}__sluice_new_${hash(owner, 6)}`);
  }

  /** An index sluice keeps on a table: `key` (merge key) or `parent` (child rows by parent). */
  index(logical: string, purpose: 'key' | 'parent'): string {
    return this.fit(`${this.spell(logical)}__sluice_${purpose}`);
  }
}

/** How field and table names are spelt in the destination (`naming:` of a pipeline file). */
export type NamingStyle = 'keep' | 'snake_case';

/**
 * `firstName` -> `first_name`, `HTTPStatus` -> `http_status`, `address2Line` ->
 * `address2_line`, `Sq Ft` -> `sq_ft`. The double underscore sluice puts between a parent and a
 * nested name (`homes__features`, `address__postalCode`) stays, each part spelt alone; so do
 * leading underscores (sluice's own columns: `_position`). Letters of any script are kept.
 */
export function snakeCase(name: string): string {
  return name
    .split('__')
    .map((part) => {
      const lead = /^_*/.exec(part)![0];
      const body = splitWords(part.slice(lead.length), UNICODE_CASES)
        .replace(/[^\p{L}\p{N}]+/gu, '_')
        .replace(/^_+|_+$/g, '')
        .toLowerCase();
      return lead + (body === '' ? part.slice(lead.length) : body);
    })
    .join('__');
}

/** Where a word ends inside a name: lower or digit then upper; the last of a run of capitals. */
interface CaseBoundaries {
  camel: RegExp;
  acronym: RegExp;
}

const UNICODE_CASES: CaseBoundaries = {
  camel: /([\p{Ll}\p{N}])(\p{Lu})/gu,
  acronym: /(\p{Lu}+)(\p{Lu}\p{Ll})/gu,
};

/**
 * The boundaries child table names were always split at: ASCII letters only. Kept for them (see
 * childTableName), so that the child tables of existing pipelines keep their names.
 */
const ASCII_CASES: CaseBoundaries = {
  camel: /([a-z0-9])([A-Z])/g,
  acronym: /([A-Z]+)([A-Z][a-z])/g,
};

/** `_` between the words of a camelCase name (`phoneNumbers` -> `phone_Numbers`). */
function splitWords(name: string, cases: CaseBoundaries): string {
  return name.replace(cases.camel, '$1_$2').replace(cases.acronym, '$1_$2');
}

/** Child table name parts, remembered: records repeat the same few (bounded, whatever the data). */
const childParts = new Map<string, string>();

/**
 * The logical name of the child table an array of objects `field` of table `parent` goes to
 * (`nested: tables`): `homes` + `phoneNumbers` -> `homes__phone_numbers`.
 *
 * The field's part is split at camelCase boundaries of ASCII letters and lowercased, and nothing
 * else: not snakeCase's rule, which also turns other characters into `_` and knows every
 * script's capitals. The two differ for some names (`phone numbers`: `phone numbers` here,
 * `phone_numbers` by snakeCase; `éA`: `éa` here, `é_a` there) and child tables of existing
 * pipelines were named by this rule, under `naming: keep` as they are: changing it would start
 * new, empty child tables beside theirs. Under `naming: snake_case` the whole logical name then
 * passes through snakeCase as every table's does (Naming.table).
 */
export function childTableName(parent: string, field: string): string {
  let part = childParts.get(field);
  if (part === undefined) {
    part = splitWords(field, ASCII_CASES).toLowerCase();
    if (childParts.size < 10_000) childParts.set(field, part);
  }
  return `${parent}__${part}`;
}

/** The column of a child row that holds its top-level record's `key` field. */
export function parentColumn(key: string): string {
  return `_parent_${key}`;
}

/**
 * A name case folded, as sluice compares table and column names: names that fold alike are one
 * name in a destination that folds the case of names. They fold ASCII only; folding more only adds suffixes (ColumnNames)
 * or refuses a table name a little more often, never lets two names meet.
 */
export function foldCase(name: string): string {
  return name.toLowerCase();
}

/**
 * The physical columns of one table for the row keys (logical names) written to it. Physical
 * names are unique within a table case aside: destinations that fold the case of names would
 * put `City` and `city` in one column, and users of those that do not are better served by the
 * same tables. Under `naming: snake_case`, `firstName` and `first_name` are spelt alike too. A
 * logical name gets, in this order:
 *
 * - its own suffixed column (below), when the table has it: it got that column in an earlier
 *   run, whichever of the names that meet comes first now;
 * - the column that is exactly its name (fitted to the limit), when the table has one no other
 *   name took: tables of earlier runs load on as they are, an old table of a case-keeping
 *   destination with both `City` and `city` included;
 * - its name, when no column of the table (existing, or given to a name before it) has that
 *   name case aside;
 * - else its name with `__` and a short hash of the exact name (`City__1a2b3c`), the same every
 *   run, so a later run finds the same column: with `city` and `City__1a2b3c` in the table,
 *   `city` keeps `city` and `City` is `City__1a2b3c` again.
 *
 * Built from the table's columns as a transaction sees them; each name is worked out once and
 * remembered, so rows are never renamed value by value.
 */
export class ColumnNames {
  readonly #naming: Naming;
  /** The table's columns, exactly as named. */
  readonly #existing: ReadonlySet<string>;
  /** Columns of the table and names given, case folded. */
  readonly #folded = new Set<string>();
  readonly #physical = new Map<string, string>();
  readonly #logical = new Map<string, string>();

  constructor(naming: Naming, columns: Iterable<string>) {
    this.#naming = naming;
    this.#existing = new Set(columns);
    for (const column of this.#existing) this.#folded.add(foldCase(column));
  }

  /** The column a logical name is written to. */
  physical(logical: string): string {
    let physical = this.#physical.get(logical);
    if (physical === undefined) {
      physical = this.#choose(logical);
      this.#physical.set(logical, physical);
      this.#logical.set(physical, logical);
      this.#folded.add(foldCase(physical));
    }
    return physical;
  }

  /** The logical name a column holds: the one given it, else its own. */
  logical(physical: string): string {
    return this.#logical.get(physical) ?? physical;
  }

  #choose(logical: string): string {
    const plain = this.#naming.column(logical);
    const suffixed = (n: number) =>
      this.#naming.column(`${logical}__${hash(n === 0 ? logical : `${logical}\u0000${n}`, 6)}`);
    // A name may share its spelling with another (`City` and `city`; `firstName` and
    // `first_name` under snake_case): the one of them that got the suffixed column once keeps
    // it, whichever comes first in a later run.
    const own = suffixed(0);
    if (this.#existing.has(own) && !this.#logical.has(own)) return own;
    if (this.#free(plain)) return plain;
    // A hash of the exact name, then (only if that too is taken: a field named so on purpose)
    // of the name and a counter: the same column every run for the same table.
    for (let n = 0; ; n++) {
      const candidate = suffixed(n);
      if (this.#free(candidate)) return candidate;
    }
  }

  /** Whether `physical` may hold a name not given a column yet. */
  #free(physical: string): boolean {
    if (this.#logical.has(physical)) return false;
    return this.#existing.has(physical) || !this.#folded.has(foldCase(physical));
  }
}

function hash(text: string, length: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

/** The longest prefix of `text` that fits in `bytes` UTF-8 bytes, never cutting a character. */
function cutToBytes(text: string, bytes: number): string {
  let used = 0;
  let end = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char);
    if (used + size > bytes) break;
    used += size;
    end += char.length;
  }
  return text.slice(0, end);
}
