import type { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';
import pretty from 'pino-pretty';

export type { Logger } from 'pino';
export type LogFormat = 'pretty' | 'json';

/** Fields that can carry secrets; pino replaces them wherever they appear in a log line. */
const REDACT = [
  'password',
  'token',
  'authorization',
  '*.password',
  '*.token',
  '*.authorization',
  'source.password',
  'source.token',
];

/**
 * Logs go to stderr (stdout is kept for `--json` results): readable lines for people, or JSON
 * lines (`--log-format json`) for orchestrators that parse them.
 */
export function createLogger(
  options: { format?: LogFormat; level?: string; stream?: Writable; color?: boolean } = {},
): Logger {
  const level = options.level ?? 'info';
  const redact = { paths: REDACT, censor: '[redacted]' };
  if (options.format === 'json') {
    return pino(
      {
        level,
        base: undefined,
        redact,
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
      },
      options.stream ?? pino.destination({ fd: 2, sync: true }),
    );
  }
  const stream = options.stream ?? process.stderr;
  // Colours on a terminal, unless NO_COLOR (https://no-color.org) says none.
  const colorize =
    Boolean((stream as { isTTY?: boolean }).isTTY) && (options.color ?? !process.env.NO_COLOR);
  return pino(
    { level, base: undefined, redact },
    pretty({
      destination: stream,
      sync: true,
      colorize,
      // Every line of a run carries these; people see them once, in the run's summary.
      ignore: 'pid,hostname,pipeline,run_id',
      translateTime: 'SYS:HH:MM:ss',
      singleLine: true,
    }),
  );
}

/** A logger that discards everything, for library callers and tests that do not care. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
