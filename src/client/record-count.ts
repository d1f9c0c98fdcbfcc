/**
 * Counting the records of a result file as its bytes go by, without parsing them: enough to
 * tell a file that holds fewer records than its download says from a whole one. It counts what
 * the loader reads as records: NDJSON lines that hold more than blanks; CSV records, a newline
 * inside a quoted cell being part of its record, the header and empty lines left out.
 */

const QUOTE = 0x22;
const COMMA = 0x2c;
const NEWLINE = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;

/** Where a CSV scan is: a cell's start, a cell without quotes, inside quotes, just past a quote in them. */
enum Cell {
  Start,
  Bare,
  Quoted,
  QuoteInQuoted,
}

export type CountedFormat = 'csv' | 'json';

export class RecordCounter {
  readonly #csv: boolean;
  #records = 0;
  /** The record under way has something besides blanks (CSV: besides a CR). */
  #content = false;
  #cell = Cell.Start;
  /** The CSV header has been passed. */
  #header = false;

  constructor(format: CountedFormat) {
    this.#csv = format === 'csv';
  }

  add(chunk: Uint8Array): void {
    if (this.#csv) this.#addCsv(chunk);
    else this.#addLines(chunk);
  }

  /** The records counted, the last one included when the file does not end with a newline. */
  end(): number {
    this.#endRecord();
    return this.#records;
  }

  #addLines(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b === NEWLINE) this.#endRecord();
      else if (b !== SPACE && b !== TAB && b !== CR) this.#content = true;
    }
  }

  /**
   * Only a quote that opens a cell opens a quoted cell, as RFC 4180 has it: the quote in an
   * unquoted `5" tall` is text, and does not join the lines after it into one record.
   */
  #addCsv(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b !== NEWLINE && b !== CR) this.#content = true;
      switch (this.#cell) {
        case Cell.Quoted:
          if (b === QUOTE) this.#cell = Cell.QuoteInQuoted;
          break;
        case Cell.QuoteInQuoted:
          // A doubled quote is a quote in the cell; anything else closed it.
          if (b === QUOTE) this.#cell = Cell.Quoted;
          else this.#afterCell(b);
          break;
        case Cell.Start:
          if (b === QUOTE) this.#cell = Cell.Quoted;
          else this.#afterCell(b);
          break;
        case Cell.Bare:
          this.#afterCell(b);
          break;
      }
    }
  }

  /** A byte outside quotes. */
  #afterCell(b: number): void {
    if (b === COMMA) this.#cell = Cell.Start;
    else if (b === NEWLINE) {
      this.#cell = Cell.Start;
      this.#endRecord();
    } else if (b !== CR) this.#cell = Cell.Bare;
  }

  #endRecord(): void {
    if (!this.#content) return;
    this.#content = false;
    if (this.#csv && !this.#header) this.#header = true;
    else this.#records++;
  }
}

/**
 * The format a result file's records are in: the download's, else its name's (`.csv`, or
 * `.txt`, `.json`, `.ndjson`, `.jsonl` for NDJSON, a `.gz` after it set aside); undefined when
 * neither says.
 */
export function formatOfFile(
  name: string,
  downloadFormat: CountedFormat | undefined,
): CountedFormat | undefined {
  if (downloadFormat !== undefined) return downloadFormat;
  const extension = /\.([a-z]+)(?:\.gz)?$/i.exec(name)?.[1]?.toLowerCase();
  if (extension === 'csv') return 'csv';
  if (extension && ['txt', 'json', 'ndjson', 'jsonl'].includes(extension)) return 'json';
  return undefined;
}
