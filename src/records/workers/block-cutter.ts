import { isLongLine, type LongLine } from '../record-size.js';
import type { BlockToSend } from './parse-protocol.js';
import { countNewlines, RecordEnds } from './record-ends.js';

/**
 * A block sent and not yet taken: where it ends in the file, its first line and, for CSV, its
 * bytes, to be cut again if a broken record before it moves where records end (or the line
 * beyond the limit it stands for, sent again as it was).
 */
export interface SentBlock {
  endsAt: number;
  firstLine: number;
  data?: Buffer;
  long?: LongLine;
}

interface CutterOptions {
  csv: boolean;
  /** Bytes a block holds at least. */
  blockBytes: number;
  /** CSV text this long with no record end is read as one record. */
  maxRecordBytes: number;
}

/**
 * Cuts a file into blocks of whole records as its bytes arrive (see ParserPool): NDJSON lines;
 * CSV records end at a newline outside quotes, which a count of quotes tells. Each block is
 * handed to `dispatch` with its number and first line; `mayCut` says whether blocks may go now
 * (not while a CSV block is out to read the header, nor once the file is given up).
 */
export class BlockCutter {
  /** Blocks sent so far: the next one's number. */
  sent = 0;
  /** Blocks sent and not yet taken, by number. */
  readonly inFlight = new Map<number, SentBlock>();
  /** The file was read to its end: what is pending goes as its last block. */
  ended = false;
  /**
   * A line beyond the limit that follows the pending bytes: it goes once they have gone (the
   * file is read no further meanwhile), as a block of its own.
   */
  long: LongLine | undefined;
  /** Bytes read and not yet sent, and where records end in them. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #line = 1;
  #bytes = 0;
  readonly #ends: RecordEnds;

  constructor(
    readonly options: CutterOptions,
    readonly dispatch: (block: BlockToSend) => void,
    /** The CSV file's header, once a block has read it. */
    readonly columns: () => string[] | undefined,
    readonly mayCut: () => boolean,
  ) {
    this.#ends = new RecordEnds(options.csv);
  }

  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  add(chunk: Buffer): void {
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.byteLength;
    this.#ends.add(chunk);
  }

  /** Sends the blocks the pending bytes hold, and at the end of the file what is left. */
  cut(atEnd = this.ended): void {
    while (this.mayCut()) {
      if (this.long !== undefined) {
        // The bytes before a line beyond the limit end where it begins, their last record too;
        // the header may be in them: the line waits for it.
        if (this.#pendingBytes > 0) this.#sendRest();
        else {
          this.#sendLong(this.long);
          this.long = undefined;
        }
        continue;
      }
      if (atEnd) {
        if (this.#pendingBytes > 0) this.#sendRest();
        return;
      }
      if (!this.#sendBlock()) return;
    }
  }

  /**
   * Block `seq` used only its first `used` bytes: the file is cut again from there, with the
   * blocks sent after it (whose batches the taker drops) and the bytes not yet sent.
   */
  recut(seq: number, used: number): void {
    const block = this.inFlight.get(seq)!;
    const data = block.data!;
    const again: (Buffer | LongLine)[] = [data.subarray(used)];
    for (let s = seq + 1; s < this.sent; s++) {
      const later = this.inFlight.get(s)!;
      again.push(later.long ?? later.data!);
      this.inFlight.delete(s);
    }
    this.#line = block.firstLine + countNewlines(data.subarray(0, used));
    this.#bytes = block.endsAt - data.byteLength + used;
    // Given back piece by piece, so that blocks keep their size (the end of the file waits);
    // a line beyond the limit not yet sent stays after them all.
    again.push(...this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#ends.reset();
    const waiting = this.long;
    this.long = undefined;
    for (const piece of again) {
      if (isLongLine(piece)) this.long = piece;
      else this.add(piece);
      this.cut(false);
    }
    this.long = waiting;
  }

  /** Sends a block of whole records if the pending bytes hold one; false if they do not. */
  #sendBlock(): boolean {
    const { csv, blockBytes, maxRecordBytes } = this.options;
    if (this.#pendingBytes < blockBytes) return false;
    let end = this.#ends.last;
    let forced = false;
    if (end < 0) {
      if (!csv || this.#pendingBytes < maxRecordBytes) return false;
      end = this.#pendingBytes;
      forced = true;
    }
    const pending = this.#pending;
    const all = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
    this.#pending = end < all.byteLength ? [all.subarray(end)] : [];
    this.#pendingBytes = all.byteLength - end;
    // After a record read whole for want of an end, quotes are counted afresh (as csv.ts does).
    if (forced) this.#ends.reset();
    else this.#ends.cutAt(end);
    this.#send(all.subarray(0, end), false, forced);
    return true;
  }

  /** Sends all the pending bytes as one block, their last record ending with it. */
  #sendRest(): void {
    const rest = Buffer.concat(this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#ends.reset();
    this.#send(rest, true, false);
  }

  #send(block: Buffer, final: boolean, forced: boolean): void {
    const { csv } = this.options;
    const seq = this.sent++;
    const firstLine = this.#line;
    this.#line += countNewlines(block);
    this.#bytes += block.byteLength;
    this.inFlight.set(seq, { endsAt: this.#bytes, firstLine, ...(csv ? { data: block } : {}) });
    let text = block;
    if (seq === 0 && block[0] === 0xef && block[1] === 0xbb && block[2] === 0xbf) {
      text = block.subarray(3); // a byte order mark is not part of the first record
    }
    // An NDJSON block of its own memory is handed over, not copied (after this, `block` is
    // empty: its memory belongs to the worker). A CSV block is copied: it may be cut again.
    const data =
      !csv && text.byteOffset === 0 && text.byteLength === text.buffer.byteLength
        ? new Uint8Array(text.buffer, 0, text.byteLength)
        : Uint8Array.from(text);
    this.dispatch({ seq, firstLine, data, final, forced, columns: this.columns() });
  }

  /** A line beyond the limit, as a block of its first bytes that a worker keeps as a reject. */
  #sendLong(skipped: LongLine): void {
    const seq = this.sent++;
    const firstLine = this.#line++;
    this.#bytes += skipped.span;
    this.inFlight.set(seq, { endsAt: this.#bytes, firstLine, long: skipped });
    this.dispatch({
      seq,
      firstLine,
      data: Uint8Array.from(skipped.head),
      final: false,
      forced: false,
      columns: this.columns(),
      tooLong: skipped.bytes,
    });
  }
}
