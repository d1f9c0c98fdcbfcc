/**
 * Takes a pipeline's lock away from the run holding it, as the world can: for a file
 * destination (SQLite, DuckDB) its lock file is deleted, for PostgreSQL the session holding the advisory lock is terminated (as
 * `idle_session_timeout` or an administrator would). The holder lives on, not knowing.
 */
import { createHash } from 'node:crypto';
import { realpathSync, rmSync } from 'node:fs';
import pg from 'pg';
import { postgresUrl } from './postgres.js';

export async function breakLock(
  target: { kind: string; url: string; schema?: string },
  name: string,
): Promise<void> {
  if (target.kind !== 'postgres') {
    const file = realpathSync(target.url.replace(/^[a-z]+:/, ''));
    const path = `${file}.${name.replace(/[^A-Za-z0-9_.-]+/g, '_')}.lock`;
    rmSync(path);
    return;
  }
  // The advisory lock's key, as the PostgreSQL destination makes it: a bigint lock shows in
  // pg_locks as its high and low 32 bits.
  const key = createHash('sha256')
    .update(`sluice:lock:${target.schema ?? 'public'}:${name}`)
    .digest()
    .readBigInt64BE(0);
  const unsigned = BigInt.asUintN(64, key);
  const client = new pg.Client({ connectionString: postgresUrl() });
  client.on('error', () => {});
  await client.connect();
  try {
    const { rows } = await client.query(
      `select pg_terminate_backend(pid) as ended from pg_locks
       where locktype = 'advisory' and granted and objsubid = 1
         and classid::bigint = $1 and objid::bigint = $2`,
      [String(unsigned >> 32n), String(unsigned & 0xffffffffn)],
    );
    if (!rows.some((r: { ended: boolean }) => r.ended)) {
      throw new Error(`no session holds the lock ${name} of schema ${target.schema}`);
    }
  } finally {
    await client.end();
  }
}
