import type { ResultFileRef } from '../../client/types.js';
import { SluiceError } from '../../errors.js';
import type { FileRow } from '../../load/destination.js';

/**
 * Whether a download's files hold the records the service says it has, so that a file that came
 * short (an empty 200, a body that ended cleanly too soon) is never recorded as loaded: once in
 * `_sluice_files`, no later run would fetch it again.
 *
 * A file's records are its rows and its rejects: every record of a file is one or the other. A
 * file of no records in a download that has some is short at once. Otherwise which file is short
 * cannot be told, only that the files together are: the check falls to the file whose commit
 * would complete the download, which is the last file written while every other file of the
 * download is committed or written too. Files are loaded at once (FilesInFlight), so "written"
 * counts files whose transactions have not ended yet: of two files written together, the one
 * written second checks both, whichever commits first. A written file that then rolls back
 * checks again when it is written again.
 */
export class DownloadRecords {
  readonly #downloadId: string;
  /** The records the service says the download holds (`numRecords`). */
  readonly #expected: number;
  readonly #names = new Map<number, string>();
  /** Records of the committed files, by file index: earlier runs' and this one's. */
  readonly #committed = new Map<number, number>();
  /** Files written in a transaction that has not ended yet: their records. */
  readonly #written = new Map<number, number>();
  /** Records of the files not committed, as last written (for messages). */
  readonly #seen = new Map<number, number>();

  constructor(
    downloadId: string,
    expected: number,
    files: readonly ResultFileRef[],
    loaded: ReadonlyMap<number, Pick<FileRow, 'file_name' | 'rows_loaded' | 'rows_rejected'>>,
  ) {
    this.#downloadId = downloadId;
    this.#expected = expected;
    for (const file of files) this.#names.set(file.index, file.name);
    for (const [index, row] of loaded) {
      this.#names.set(index, row.file_name);
      this.#committed.set(index, Number(row.rows_loaded) + Number(row.rows_rejected));
    }
  }

  get expected(): number {
    return this.#expected;
  }

  /**
   * `file` was written, all of its `records` read, in a transaction not yet committed. Throws
   * SLUICE_FILE_INCOMPLETE when it must not commit: it holds no records where the download has
   * some, or its commit would complete the download with fewer records than the service says.
   * Returns the records of the whole download when this file is the one that completes it.
   */
  written(file: ResultFileRef, records: number): number | undefined {
    this.#seen.set(file.index, records);
    if (records === 0 && this.#expected > 0) {
      throw new SluiceError(
        `result file ${file.name} holds no records, where download ${this.#downloadId} holds ${this.#expected}`,
        { code: 'SLUICE_FILE_INCOMPLETE' },
      );
    }
    this.#written.set(file.index, records);
    for (const index of this.#names.keys()) {
      if (!this.#committed.has(index) && !this.#written.has(index)) return undefined;
    }
    const total = sum(this.#committed) + sum(this.#written);
    if (total < this.#expected) {
      this.#written.delete(file.index);
      throw new SluiceError(
        `download ${this.#downloadId} holds ${this.#expected} records, its files ${total}`,
        { code: 'SLUICE_FILE_INCOMPLETE' },
      );
    }
    return total;
  }

  committed(file: ResultFileRef): void {
    const records = this.#written.get(file.index) ?? this.#seen.get(file.index) ?? 0;
    this.#written.delete(file.index);
    this.#seen.delete(file.index);
    this.#committed.set(file.index, records);
  }

  /** `file`'s transaction ended without a commit: it is to be written again, or not at all. */
  rolledBack(file: ResultFileRef): void {
    this.#written.delete(file.index);
  }

  /**
   * What to say when `file` stayed short after `tries`: the records expected, those each file
   * holds, and what to do.
   */
  incomplete(file: ResultFileRef, tries: number): SluiceError {
    const kept = `${file.name} was not recorded as loaded and the download is kept: run again later to fetch it anew, without buying anything again`;
    if (this.#seen.get(file.index) === 0) {
      return new SluiceError(
        `result file ${file.name} held no records each of the ${tries} times it was fetched, where download ${this.#downloadId} holds ${this.#expected}; ${kept}`,
        { code: 'SLUICE_FILE_INCOMPLETE' },
      );
    }
    const files = [...this.#names.entries()].sort(([a], [b]) => a - b);
    const held = files.map(([index, name]) => {
      const loaded = this.#committed.get(index);
      if (loaded !== undefined) return `${name} ${loaded} (loaded)`;
      const seen = this.#seen.get(index);
      if (index === file.index) return `${name} ${seen} (fetched ${tries} times, not loaded)`;
      return seen === undefined ? `${name} (not read)` : `${name} ${seen} (not loaded)`;
    });
    const listed =
      held.length > 20 ? [...held.slice(0, 20), `and ${held.length - 20} more files`] : held;
    return new SluiceError(
      `download ${this.#downloadId} holds ${this.#expected} records by the service's count, its result files fewer: ${listed.join(', ')}; ${kept}; if the files stay short, the service delivered fewer records than it counts: ask the service, or buy the download again with --fresh`,
      { code: 'SLUICE_FILE_INCOMPLETE' },
    );
  }
}

function sum(records: ReadonlyMap<number, number>): number {
  let n = 0;
  for (const r of records.values()) n += r;
  return n;
}
