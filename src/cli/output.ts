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

/** A plain text table: columns padded to their widest cell, numbers aligned right. */
export function formatTable(headers: string[], rows: unknown[][]): string {
  const cells = rows.map((row) => row.map(cellText));
  const widths = headers.map((h, i) =>
    Math.max(h.length, ...cells.map((row) => (row[i] ?? '').length)),
  );
  const numeric = headers.map(
    (_, i) => rows.length > 0 && rows.every((row) => typeof row[i] === 'number'),
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
  if (typeof value === 'string') return value.replace(/\s+/g, ' ');
  return JSON.stringify(value);
}
