import type { Writable } from 'node:stream';

/** Where a command writes: passed in, so tests run commands in-process and read what they said. */
export interface Io {
  stdout: Writable;
  stderr: Writable;
}

export const processIo: Io = { stdout: process.stdout, stderr: process.stderr };

export function writeLine(stream: Writable, text = ''): void {
  stream.write(`${text}\n`);
}

/** Streams a JSON document was written to: a command's one document, never a second. */
const documented = new WeakSet<Writable>();

export function writeJson(stream: Writable, value: unknown): void {
  documented.add(stream);
  stream.write(`${JSON.stringify(value, null, 2)}\n`);
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
