import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FileToRead } from '../destination.js';

/** A result file written to the scratch folder for DuckDB to read (read-file.ts). */
export interface Spooled {
  path: string;
  bytes: number;
  /** It opens with a UTF-8 byte order mark. */
  bom: boolean;
}

/**
 * Writes a file's text to `path`; its bytes. Each chunk is written as it comes, synchronously (a
 * write to the page cache), so that it is garbage at once: chunks queued in a write stream lived
 * on into V8's old generation, and their megabytes of external memory brought full collections
 * every few megabytes fetched (docs/speed.md).
 */
async function spoolTo(
  path: string,
  file: Pick<FileToRead, 'open'>,
  signal: AbortSignal,
): Promise<Spooled> {
  // Opened before the fetch, so that a file that cannot be made leaves no response open.
  const fd = openSync(path, 'w');
  let bytes = 0;
  let first: number[] | undefined;
  const write = async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) {
      if (first === undefined || first.length < 3)
        first = [...(first ?? []), ...chunk.subarray(0, 3)];
      for (let at = 0; at < chunk.length; ) at += writeSync(fd, chunk, at);
      bytes += chunk.length;
    }
  };
  let spooled = false;
  try {
    const stream = await file.open();
    await pipeline(stream as AsyncIterable<Buffer>, write, { signal });
    spooled = true;
  } finally {
    closeSync(fd);
    if (!spooled) rmSync(path, { force: true });
  }
  const bom = first !== undefined && first[0] === 0xef && first[1] === 0xbb && first[2] === 0xbf;
  return { path, bytes, bom };
}

interface Ahead<T> {
  name: string;
  done: Promise<Spooled | undefined>;
  /** What was begun on it once fetched (its check), undefined if it failed. */
  begun: Promise<T | undefined>;
  abort: AbortController;
}

/** A file spooled, and what was begun on it while fetched ahead. */
export interface Taken<T> {
  spooled: Spooled;
  begun?: Promise<T | undefined>;
}

/**
 * The result files a session's loads spool, each removed by its reader once read. While one
 * file is read, the next file of the job (`FileToRead.next`) is fetched into the folder too, and
 * work begun on it (its check), so that neither is waited for: a file fetched ahead
 * that failed, or that is not the one asked for next, is dropped, and the file asked for fetched
 * then.
 */
export class Spools<T> {
  #ahead: Ahead<T> | undefined;
  #count = 0;

  constructor(readonly folder: () => string) {}

  /** `file` spooled: fetched ahead, or now. */
  async take(file: FileToRead): Promise<Taken<T>> {
    const ahead = this.#ahead;
    this.#ahead = undefined;
    if (ahead?.name === file.name) {
      const spooled = await ahead.done;
      if (spooled !== undefined) return { spooled, begun: ahead.begun };
    } else if (ahead !== undefined) {
      await this.#drop(ahead);
    }
    return { spooled: await spoolTo(this.#path(), file, new AbortController().signal) };
  }

  /**
   * Starts fetching `file` while the one before it is read, then `begin` on it (`signal` aborted
   * once the file is dropped: what has not begun need not).
   */
  fetchAhead(
    file: Pick<FileToRead, 'name' | 'open'>,
    begin: (spooled: Spooled, signal: AbortSignal) => Promise<T | undefined>,
  ): void {
    // One file ahead: one fetched ahead before and not taken goes.
    const before = this.#ahead;
    if (before !== undefined) void this.#drop(before);
    const path = this.#path();
    const abort = new AbortController();
    const done = spoolTo(path, file, abort.signal).catch(() => undefined);
    const begun = done
      .then((spooled) => (spooled === undefined ? undefined : begin(spooled, abort.signal)))
      .catch(() => undefined);
    this.#ahead = { name: file.name, done, begun, abort };
  }

  /** Stops and removes a file fetched ahead and not read, once what was begun on it ends. */
  async close(): Promise<void> {
    const ahead = this.#ahead;
    this.#ahead = undefined;
    if (ahead !== undefined) await this.#drop(ahead);
  }

  /** Stops a file fetched ahead, waits for what was begun on it, and removes it. */
  async #drop(ahead: Ahead<T>): Promise<void> {
    ahead.abort.abort();
    const spooled = await ahead.done;
    await ahead.begun;
    if (spooled !== undefined) rmSync(spooled.path, { force: true });
  }

  #path(): string {
    return join(this.folder(), `file-${++this.#count}.ndjson`);
  }
}
