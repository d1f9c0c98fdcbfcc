/**
 * Where records end in a file's bytes as they arrive: just past each newline, outside quotes
 * for CSV (a doubled quote closes and opens again: the same). Bytes of a UTF-8 character are
 * never a quote or a newline, so counting bytes counts characters. `last` is the offset, in
 * the bytes not yet sent, just past the last record end, or -1.
 */
export class RecordEnds {
  last = -1;
  #inQuotes = false;
  #scanned = 0;

  constructor(readonly quotes: boolean) {}

  add(chunk: Buffer): void {
    const base = this.#scanned;
    this.#scanned += chunk.byteLength;
    if (!this.quotes) {
      const newline = chunk.lastIndexOf(10);
      if (newline >= 0) this.last = base + newline + 1;
      return;
    }
    // One pass over the bytes: CSV cells of JSON hold many doubled quotes, and a search call
    // per quote cost more than looking at each byte. Through a plain Uint8Array with its length
    // read once: a Buffer's `byteLength` getter in the loop made it 8 times slower (80 MB/s
    // against 650: at a million CSV records, 20 s of the main thread).
    const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const length = bytes.length;
    let quoted = this.#inQuotes ? 1 : 0;
    let last = -1;
    for (let i = 0; i < length; i++) {
      const c = bytes[i]!;
      if (c === 34) quoted ^= 1;
      else if (c === 10 && quoted === 0) last = i;
    }
    if (last >= 0) this.last = base + last + 1;
    this.#inQuotes = quoted === 1;
  }

  /** The bytes before `offset` were sent: offsets now count from there. */
  cutAt(offset: number): void {
    this.#scanned -= offset;
    this.last = -1;
  }

  reset(): void {
    this.last = -1;
    this.#inQuotes = false;
    this.#scanned = 0;
  }
}

/** The offset just past the `count`th newline of `block` (0 for none). */
export function afterNewlines(block: Buffer, count: number): number {
  let at = 0;
  for (let n = 0; n < count; n++) at = block.indexOf(10, at) + 1;
  return at;
}

export function countNewlines(block: Buffer): number {
  let count = 0;
  for (let i = block.indexOf(10); i >= 0; i = block.indexOf(10, i + 1)) count++;
  return count;
}
