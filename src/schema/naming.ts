import { createHash } from 'node:crypto';

/**
 * Every physical name sluice makes (tables, child and link tables, staging tables, indexes,
 * columns) comes from here. Logical names are unbounded (`homes__people__phone_numbers`); a
 * destination has an identifier limit (PostgreSQL: 63 bytes, beyond which it silently cuts).
 * A name over the limit is shortened to a prefix and a hash of the whole logical name, the same
 * way every run, so two logical names never meet in one physical name, and a staging table can
 * never be cut down to the name of the live table it stands in for.
 */
export class Naming {
  constructor(
    /** The destination's identifier limit in UTF-8 bytes (Infinity: none). */
    readonly maxBytes: number,
  ) {}

  /** The physical name for a logical name: itself when it fits, else prefix + `_` + hash. */
  fit(name: string): string {
    if (Buffer.byteLength(name) <= this.maxBytes) return name;
    const tail = `_${hash(name, 8)}`;
    return cutToBytes(name, this.maxBytes - tail.length) + tail;
  }

  table(logical: string): string {
    return this.fit(logical);
  }

  column(logical: string): string {
    return this.fit(logical);
  }

  /**
   * Where a `write: replace` builds the new table before the swap. `owner` (the pipeline) is
   * part of it, so two pipelines replacing the same table never share a staging table.
   */
  staging(logical: string, owner: string): string {
    return this.fit(`${logical}__sluice_new_${hash(owner, 6)}`);
  }

  /** An index sluice keeps on a table: `key` (merge key) or `parent` (child rows by parent). */
  index(logical: string, purpose: 'key' | 'parent'): string {
    return this.fit(`${logical}__sluice_${purpose}`);
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
