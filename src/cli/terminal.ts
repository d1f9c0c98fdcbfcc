import { Writable } from 'node:stream';
import { createLogger, type LogFormat, type Logger } from '../log.js';
import { LogProgress, noProgress, type Phase, type Progress } from '../pipeline/progress.js';
import { num } from '../util/words.js';

/**
 * stderr, shared by the log and the jobs' progress lines. Logs go through here: while progress
 * lines are drawn, a log line erases them, is written whole above them, and they are drawn again
 * below it; so a log line is never cut, lost, or mixed with a progress line.
 */
export class Terminal {
  readonly logger: Logger;
  readonly #stderr: Writable & { isTTY?: boolean; columns?: number };
  readonly #format: LogFormat;
  #lines: JobLines | undefined;

  constructor(
    stderr: Writable & { isTTY?: boolean; columns?: number },
    options: { format: LogFormat; level: string; color?: boolean },
  ) {
    this.#stderr = stderr;
    this.#format = options.format;
    const self = this;
    const stream = new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        if (self.#lines) self.#lines.above(String(chunk));
        else stderr.write(chunk);
        callback();
      },
    });
    // A terminal gets colours; pino-pretty asks the stream it writes to.
    (stream as Writable & { isTTY?: boolean }).isTTY = stderr.isTTY;
    this.logger = createLogger({
      format: options.format,
      level: options.level,
      stream,
      ...(options.color === undefined ? {} : { color: options.color }),
    });
  }

  /**
   * How a run shows its progress: a line per job in flight on a terminal (human logs only), else
   * a log line now and then (cron mails and orchestrator logs do not want cursor moves), or
   * nothing.
   */
  progress(enabled: boolean, logger: Logger = this.logger): Progress {
    if (!enabled) return noProgress;
    if (this.#stderr.isTTY && this.#format === 'pretty') {
      this.#lines = new JobLines(this.#stderr);
      return this.#lines;
    }
    return new LogProgress(logger);
  }
}

const PHASES: Record<Phase, string> = {
  waiting: 'waiting',
  download: 'downloading',
  queued: 'queued',
  load: 'loading',
};

/** How often progress lines are drawn again for new counts (a log line redraws them at once). */
const REDRAW_MS = 100;
const ERASE_LINE = '\x1b[2K';
const ERASE_BELOW = '\x1b[J';
const BAR_WIDTH = 20;

interface JobLine {
  phase: Phase;
  value: number;
  total: number | undefined;
  since: number;
}

/**
 * The progress lines of the jobs in flight, at the bottom of the terminal: `homes  downloading
 * [██████░░░░] 1,200 of 4,000  12s`. Lines are cut to the terminal's width so that none wraps:
 * the cursor goes back up exactly as many lines as were drawn.
 */
class JobLines implements Progress {
  readonly #stream: Writable & { columns?: number };
  readonly #jobs = new Map<string, JobLine>();
  /** Lines drawn now, below the cursor's line start. */
  #drawn = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(stream: Writable & { columns?: number }) {
    this.#stream = stream;
  }

  phase(job: string, phase: Phase, total: number | undefined): void {
    this.#jobs.set(job, { phase, value: 0, total, since: Date.now() });
    this.#draw();
  }

  update(job: string, value: number, total?: number): void {
    const line = this.#jobs.get(job);
    if (line === undefined) return;
    line.value = value;
    if (total !== undefined) line.total = total;
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#draw();
    }, REDRAW_MS).unref();
  }

  /** The job's line goes: its end is said by the run's log lines and summary. */
  done(job: string): void {
    this.#jobs.delete(job);
    this.#draw();
  }

  /** Writes log text above the progress lines, whole. */
  above(text: string): void {
    this.#stream.write(`${this.#erase()}${text}${text.endsWith('\n') ? '' : '\n'}`);
    this.#drawn = 0;
    this.#draw();
  }

  /** Moves back to the first progress line and erases it and everything below. */
  #erase(): string {
    if (this.#drawn === 0) return '';
    return `\r${this.#drawn > 1 ? `\x1b[${this.#drawn - 1}A` : ''}${ERASE_LINE}${ERASE_BELOW}`;
  }

  #draw(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const width = Math.max(20, (this.#stream.columns ?? 80) - 1);
    const name = Math.min(24, Math.max(0, ...[...this.#jobs.keys()].map((j) => j.length)));
    const lines = [...this.#jobs].map(([job, line]) => fit(render(job, name, line), width));
    this.#stream.write(`${this.#erase()}${lines.join('\n')}`);
    this.#drawn = lines.length;
  }
}

function render(job: string, nameWidth: number, line: JobLine): string {
  const seconds = `${Math.round((Date.now() - line.since) / 1000)}s`;
  const head = `${job.padEnd(nameWidth)}  ${PHASES[line.phase].padEnd(11)}`;
  if (line.phase === 'waiting' || line.phase === 'queued') return `${head}  ${seconds}`;
  const { value, total } = line;
  const share = total ? Math.min(1, value / total) : 0;
  const full = Math.round(share * BAR_WIDTH);
  const bar = `[${'█'.repeat(full)}${'░'.repeat(BAR_WIDTH - full)}]`;
  const count = total === undefined ? num(value) : `${num(value)} of ${num(total)}`;
  return `${head}  ${bar} ${count}  ${seconds}`;
}

/** `text` cut to `width` characters, so that it never wraps. */
function fit(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}
