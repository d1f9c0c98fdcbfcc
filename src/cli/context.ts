import type { LogFormat, Logger } from '../log.js';
import type { Clock } from '../pipeline/clock.js';
import type { CommandEnv } from './command-env.js';
import type { Io } from './output.js';
import type { Terminal } from './terminal.js';

/** What every command handler gets: where to write, when to stop, the environment. */
export interface CliContext {
  io: Io;
  /** Aborted on SIGINT/SIGTERM: long-running commands stop cleanly when it fires. */
  signal: AbortSignal;
  env: NodeJS.ProcessEnv;
  /**
   * The env files the command reads (`--env-file`, `.env`), set before its handler runs, which
   * also makes `env` theirs and the environment's together; unset when a test calls a handler.
   */
  settings?: CommandEnv;
  /** Logs on stderr, in the format and at the level the global flags chose. */
  logger: Logger;
  /** With `json`, stderr holds only JSON lines: commands write no text there themselves. */
  logFormat: LogFormat;
  /** stderr shared by the log and progress bars. */
  terminal: Terminal;
  /** Time for pipeline runs; tests pass one they move themselves. */
  clock?: Clock;
  /**
   * Set by a handler whose outcome is not an error but still not plain success (a pipeline run
   * refused by the credit guard exits 3); main() returns it, 0 when unset.
   */
  exitCode?: number;
}
