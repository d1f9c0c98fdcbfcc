import type { Writable } from 'node:stream';

/** Where a command writes: passed in, so tests run commands in-process and read what they said. */
export interface Io {
  stdout: Writable;
  stderr: Writable;
}

export const processIo: Io = { stdout: process.stdout, stderr: process.stderr };

/** Streams whose reader went away (`sluice status FILE | head -1`): what follows is dropped. */
const readerGone = new WeakSet<Writable>();
const watched = new WeakSet<Writable>();

/**
 * Makes a closed reader end the output quietly, as Unix tools do: once a write fails with EPIPE,
 * the rest of the output is dropped, without a stack trace; the command still finishes what it
 * was doing (a run still records its outcome) and exits with its own code, 0 when it did its work.
 */
export function dropOutputWhenReaderGoes(stream: Writable): void {
  if (watched.has(stream)) return;
  watched.add(stream);
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    readerGone.add(stream);
  });
}

function write(stream: Writable, text: string): void {
  if (readerGone.has(stream) || stream.destroyed) return;
  stream.write(text);
}

export function writeLine(stream: Writable, text = ''): void {
  write(stream, `${text}\n`);
}

/** Streams a JSON document was written to: a command's one document, never a second. */
const documented = new WeakSet<Writable>();

export function writeJson(stream: Writable, value: unknown): void {
  documented.add(stream);
  write(stream, `${JSON.stringify(value, null, 2)}\n`);
}

export function wroteJson(stream: Writable): boolean {
  return documented.has(stream);
}

/** A number a table shows with so many decimals, aligned right as numbers are: `2.70`, `2.49`. */
export class Fixed {
  constructor(
    readonly value: number,
    readonly digits = 2,
  ) {}

  toString(): string {
    return this.value.toLocaleString('en-US', {
      minimumFractionDigits: this.digits,
      maximumFractionDigits: this.digits,
    });
  }
}

/** Seconds as every table and summary shows them: two decimals (`2.70`, not `2.7`). */
export function secondsText(seconds: number): string {
  return new Fixed(seconds).toString();
}

/** The widest a table's cell of free text (an error message) is shown; `--json` has it whole. */
export const TEXT_CELL_MAX = 80;

/** `text` on one line, cut to `max` characters with an ellipsis: a table stays readable. */
export function clipCell(text: string, max = TEXT_CELL_MAX): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1).trimEnd()}…`;
}

/** A time as tables and lines show it: `-` when the service sent none, or the epoch (0). */
export function dateText(iso: string | null | undefined): string {
  if (iso === null || iso === undefined || iso === '') return '-';
  const ms = Date.parse(iso);
  return Number.isNaN(ms) || ms <= 0 ? '-' : iso;
}

/** A plain text table: columns padded to their widest cell, numbers aligned right. */
export function formatTable(headers: string[], rows: unknown[][]): string {
  const cells = rows.map((row) => row.map(cellText));
  const widths = headers.map((h, i) =>
    Math.max(h.length, ...cells.map((row) => (row[i] ?? '').length)),
  );
  const numeric = headers.map(
    (_, i) =>
      rows.length > 0 && rows.every((row) => typeof row[i] === 'number' || row[i] instanceof Fixed),
  );
  const line = (row: string[]) =>
    row
      .map((cell, i) => (numeric[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

function cellText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'number') return value.toLocaleString('en-US');
  if (value instanceof Fixed) return value.toString();
  if (typeof value === 'string') return value.replace(/\s+/g, ' ');
  return JSON.stringify(value);
}
