import type { DuckDBInstance } from '@duckdb/node-api';
import { sleep } from '../../util/sleep.js';
import { DestinationError } from '../errors.js';
import { translateDuckDbError } from './errors.js';

type DuckDbApi = typeof import('@duckdb/node-api');

/** DuckDB's words when a read-only open meets a log it can replay only by writing the file. */
const UNREPLAYED = /Failure while replaying WAL/i;
/** Opens tried while another process replays the log (a reader as this one, or a run). */
const ATTEMPTS = 10;
const PAUSE_MS = 200;

/**
 * A read-only instance of `path` (of this process's DuckDB instance cache), with the log a
 * killed run left replayed first where DuckDB needs that.
 *
 * A run killed after it committed leaves its write-ahead log (`<file>.wal`: sluice has DuckDB
 * write it into the file once a GB, see connection.ts), which the next process to open the file
 * replays. DuckDB replays some logs only by writing the file (a replace's swap: "Could not write
 * file ... Bad file descriptor"), which a read-only open cannot. Then the file is opened for
 * writing a moment, which replays the log and writes it in (CHECKPOINT), as the next run would:
 * DuckDB's own lock on the file, which every run holds while it has the file open, makes that
 * open fail while another process has the file open, so a live run's file is never touched.
 * Nothing else is written.
 */
export async function readOnlyInstance(api: DuckDbApi, path: string): Promise<DuckDBInstance> {
  let last: unknown;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    try {
      return await api.DuckDBInstance.fromCache(path, { access_mode: 'READ_ONLY' });
    } catch (error) {
      if (!UNREPLAYED.test(String((error as Error).message))) throw error;
      last = error;
    }
    const refused = await replay(api, path);
    // Another process has the file open to write it: a run, which replays the log, or a reader
    // replaying it as this one does, for a moment.
    if (refused?.code === 'SLUICE_LOCKED') {
      last = refused;
      await sleep(PAUSE_MS);
    } else if (refused !== undefined) throw refused;
  }
  throw last;
}

/** Replays the log by opening the file to write it, a moment; or why it cannot be. */
async function replay(api: DuckDbApi, path: string): Promise<DestinationError | undefined> {
  let instance: DuckDBInstance;
  try {
    instance = await api.DuckDBInstance.fromCache(path);
  } catch (error) {
    return cannotReplay(path, error);
  }
  try {
    const conn = await instance.connect();
    try {
      await conn.run('CHECKPOINT');
    } finally {
      conn.closeSync();
    }
  } finally {
    instance.closeSync();
  }
  return undefined;
}

function leftLog(path: string): string {
  return `the DuckDB database ${path} holds the log of a run that ended without closing it (${path}.wal: killed, or its machine stopped); nothing is lost, but DuckDB replays this log only in a process that can write the file`;
}

function cannotReplay(path: string, error: unknown): DestinationError {
  const translated = translateDuckDbError(error, path);
  if ((translated as { code?: unknown }).code === 'SLUICE_LOCKED') {
    const holder = /Conflicting lock is held in (.*?) \(PID (\d+)\)/.exec(String(error));
    return new DestinationError(
      `${leftLog(path)}, and another process has it open${holder ? ` (${holder[1]}, PID ${holder[2]})` : ''}: run this again when it ends (a run replays the log as it opens the file)`,
      'SLUICE_LOCKED',
      error,
    );
  }
  const why = translated instanceof Error ? translated.message : String(error);
  return new DestinationError(
    `${leftLog(path)}, which this one cannot (${why}): the next run of the pipeline replays it, or run this again as a user who can write the file`,
    'SLUICE_DESTINATION_RECOVERY',
    error,
  );
}
