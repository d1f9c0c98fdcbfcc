/** Rows and rejects a file has written so far, in a transaction not yet committed. */
export interface FileCounts {
  rows: number;
  rejects: number;
  /** Loaded alone: no other file is in flight, none starts until it ends. */
  alone: boolean;
}

/**
 * The files being written at once and what each has written so far, which the job's outcome
 * counts only once a file commits: the progress shown, and `max_rejects`, count them too.
 *
 * A file may also be loaded alone (one that must make or change a table, or that lost a
 * conflict, beside others): it waits for the files in flight to end (committed or rolled back),
 * and no file starts until it has ended. A file that is already the only one in flight may
 * become alone at once (`claimAlone`).
 */
export class FilesInFlight {
  readonly #files = new Set<FileCounts>();
  /** Files waiting to be loaded alone, or loaded alone. */
  #alone = 0;
  #waiting: (() => void)[] = [];
  /** Set when a file failed: no file starts after it. */
  #stopped = false;

  /** A file's entry, once it may start; undefined when the job stopped meanwhile. */
  async open(alone = false): Promise<FileCounts | undefined> {
    if (alone) {
      this.#alone++;
      while (this.#files.size > 0) await this.#change();
    } else {
      while (this.#alone > 0 && !this.#stopped) await this.#change();
    }
    if (this.#stopped) {
      if (alone) this.#settle(alone);
      return undefined;
    }
    const counts = { rows: 0, rejects: 0, alone };
    this.#files.add(counts);
    return counts;
  }

  /**
   * Makes `counts`' file alone if it is the only file in flight and none waits to be: then true,
   * and no file starts until it ends.
   */
  claimAlone(counts: FileCounts): boolean {
    if (counts.alone) return true;
    if (this.#files.size !== 1 || !this.#files.has(counts) || this.#alone > 0) return false;
    counts.alone = true;
    this.#alone++;
    return true;
  }

  close(counts: FileCounts): void {
    if (this.#files.delete(counts)) this.#settle(counts.alone);
  }

  /** A file failed: the files waiting to start do not. */
  stop(): void {
    this.#stopped = true;
    this.#settle(false);
  }

  get rows(): number {
    let n = 0;
    for (const f of this.#files) n += f.rows;
    return n;
  }

  get rejects(): number {
    let n = 0;
    for (const f of this.#files) n += f.rejects;
    return n;
  }

  #settle(alone: boolean): void {
    if (alone) this.#alone--;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }

  #change(): Promise<void> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }
}
