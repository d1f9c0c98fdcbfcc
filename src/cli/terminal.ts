import { Writable } from 'node:stream';
import cliProgress from 'cli-progress';
import { createLogger, type LogFormat, type Logger } from '../log.js';
import { LogProgress, noProgress, type Progress } from '../pipeline/progress.js';

/**
 * stderr, shared by the log and the progress bar. Logs go through here: while a bar is drawn,
 * a log line clears it, is written whole on a line of its own, and the bar is drawn again
 * below it, so the two never run into each other.
 */
export class Terminal {
  readonly logger: Logger;
  readonly #stderr: Writable & { isTTY?: boolean };
  readonly #format: LogFormat;
  #bar: BarProgress | undefined;

  constructor(
    stderr: Writable & { isTTY?: boolean },
    options: { format: LogFormat; level: string },
  ) {
    this.#stderr = stderr;
    this.#format = options.format;
    const self = this;
    const stream = new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        self.#bar?.clear();
        stderr.write(chunk);
        self.#bar?.redraw();
        callback();
      },
    });
    // A terminal gets colours; pino-pretty asks the stream it writes to.
    (stream as Writable & { isTTY?: boolean }).isTTY = stderr.isTTY;
    this.logger = createLogger({ format: options.format, level: options.level, stream });
  }

  /**
   * How a run shows its progress: a bar on a terminal (human logs only), else a log line now
   * and then (cron mails and orchestrator logs do not want carriage returns), or nothing.
   */
  progress(enabled: boolean, logger: Logger = this.logger): Progress {
    if (!enabled) return noProgress;
    if (this.#stderr.isTTY && this.#format === 'pretty') {
      this.#bar = new BarProgress(this.#stderr);
      return this.#bar;
    }
    return new LogProgress(logger);
  }
}

class BarProgress implements Progress {
  readonly #stream: Writable;
  #bar: cliProgress.SingleBar | undefined;

  constructor(stream: Writable) {
    this.#stream = stream;
  }

  phase(job: string, phase: string, total: number | undefined): void {
    this.done();
    this.#bar = new cliProgress.SingleBar(
      {
        stream: this.#stream as NodeJS.WritableStream,
        format: `${job.padEnd(16)} ${phase.padEnd(9)} [{bar}] {percentage}% | {value}/{total} | {duration_formatted}`,
        hideCursor: true,
        clearOnComplete: false,
        etaBuffer: 50,
        // Drawn again after a log line took its place, even when its text did not change.
        forceRedraw: true,
      },
      cliProgress.Presets.shades_classic,
    );
    this.#bar.start(total ?? 0, 0);
  }

  update(value: number, total?: number): void {
    if (total !== undefined) this.#bar?.setTotal(total);
    this.#bar?.update(value);
  }

  done(): void {
    this.#bar?.stop();
    this.#bar = undefined;
  }

  /** Erases the bar's line, so that a log line can take it. */
  clear(): void {
    if (this.#bar) this.#stream.write('\r\x1b[2K');
  }

  redraw(): void {
    this.#bar?.render();
  }
}
