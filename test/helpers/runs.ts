/**
 * What the reliability suite and the incremental tests share: runs of the built command in their own processes, stopped
 * at named checkpoints, and snapshots of every table to compare with a reference load.
 */
import { strict as assert } from 'node:assert';
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { TestTarget } from './destinations.js';
import type { EmulatorHarness } from './emulator.js';
import { emulatorEnv, SLUICE_BIN } from './pipeline.js';

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * A `sluice run` of one pipeline file or several in a process of its own; `checkpoint` makes it
 * stop there (see checkpoints.ts).
 */
export function startRun(
  file: string | readonly string[],
  harness: EmulatorHarness,
  options: { checkpoint?: string; env?: Record<string, string>; args?: string[] } = {},
): { child: ChildProcess; finished: Promise<Finished>; reached: Promise<void> } {
  const child = spawn(
    process.execPath,
    [
      SLUICE_BIN,
      'run',
      ...(typeof file === 'string' ? [file] : file),
      '--json',
      '--no-progress',
      '--log-format',
      'json',
      ...(options.args ?? []),
    ],
    {
      env: {
        ...emulatorEnv(harness, options.env ?? {}),
        ...(options.checkpoint ? { SLUICE_CHECKPOINT: options.checkpoint } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  let reach: () => void = () => {};
  const reached = new Promise<void>((resolve) => (reach = resolve));
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => {
    stderr += d;
    if (stderr.includes('sluice-checkpoint ')) reach();
  });
  const finished = new Promise<Finished>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, finished, reached };
}

/** Runs to the end, unstopped; fails the test unless it exits 0. */
export async function runToEnd(
  file: string | readonly string[],
  harness: EmulatorHarness,
  env: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  const { finished } = startRun(file, harness, { env });
  const done = await finished;
  assert.equal(done.code, 0, `run failed: ${done.stdout}\n${done.stderr}`);
  return JSON.parse(done.stdout);
}

/**
 * Does `work` while the process `child` is paused (SIGSTOP), as a machine can stop running a
 * process for a while (a suspended VM, a long pause); it goes on afterwards (SIGCONT), however
 * `work` ends.
 */
export async function whilePaused<T>(child: ChildProcess, work: () => Promise<T>): Promise<T> {
  child.kill('SIGSTOP');
  try {
    return await work();
  } finally {
    child.kill('SIGCONT');
  }
}

/** Stops a run at a checkpoint with a signal, and checks how it ended. */
export async function stopAt(
  file: string | readonly string[],
  harness: EmulatorHarness,
  checkpoint: string,
  signal: NodeJS.Signals,
  env: Record<string, string> = {},
): Promise<Finished> {
  const run = startRun(file, harness, { checkpoint, env });
  const reached = await Promise.race([
    run.reached.then(() => true),
    run.finished.then(() => false),
  ]);
  const early = reached ? undefined : await run.finished;
  assert.ok(reached, `the run never reached ${checkpoint}: ${early?.stdout}\n${early?.stderr}`);
  run.child.kill(signal);
  const done = await run.finished;
  if (signal === 'SIGKILL') assert.equal(done.signal, 'SIGKILL');
  else {
    assert.equal(done.code, 130, `${signal} at ${checkpoint}: ${done.stdout}\n${done.stderr}`);
    // Several files: the last run of the command's document is the one stopped.
    const doc = JSON.parse(done.stdout);
    assert.equal(
      doc.runs ? doc.runs.at(-1)?.status : doc.status,
      'interrupted',
      `${signal} at ${checkpoint}: ${done.stdout}\n${done.stderr}`,
    );
  }
  return done;
}

export interface TableSnapshot {
  rows: number;
  keys: number;
  hash: string;
}

/**
 * Every data table: its rows, distinct keys and a hash of its content, without the columns
 * that name a download or a time (a reference load has other downloads).
 */
/** Rows without the load metadata, each as one line of text, in a stable order. */
export function rowLines(rows: Record<string, unknown>[]): string[] {
  return rows
    .map((row) =>
      JSON.stringify(
        Object.entries(row)
          .filter(([k]) => !k.startsWith('_sluice_'))
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]),
      ),
    )
    .sort();
}

export async function snapshot(target: TestTarget): Promise<Record<string, TableSnapshot>> {
  const out: Record<string, TableSnapshot> = {};
  for (const table of await target.tables('')) {
    if (table.startsWith('_sluice')) continue;
    const rows = await target.all<Record<string, unknown>>(`select * from "${table}"`);
    const lines = rowLines(rows);
    const keyColumn = ['id', 'people_key'].find((k) => rows[0] && k in rows[0]);
    out[table] = {
      rows: rows.length,
      keys: keyColumn ? new Set(rows.map((r) => r[keyColumn])).size : rows.length,
      hash: createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16),
    };
  }
  return out;
}

/** Downloads the emulator started, per data type. */
export function downloadsByType(harness: EmulatorHarness): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const d of harness.emulator.context.state.downloads)
    counts[d.type] = (counts[d.type] ?? 0) + 1;
  return counts;
}

export function creditsUsed(harness: EmulatorHarness): Record<string, number> {
  return { ...harness.emulator.context.state.account.used };
}
