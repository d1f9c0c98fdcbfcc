import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * What benchmarks share: a command run in a child process, timed, with the peak resident memory
 * of it and its children.
 */

/** Runs a command, sampling the peak resident memory of it and its children from /proc. */
export function measure(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{
  seconds: number;
  peakRssMb: number;
  code: number;
  stderr: string;
  /** CPU seconds the whole machine was busy meanwhile (every process: servers, emulator). */
  machineCpuSeconds: number;
}> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const cpu0 = machineBusyTicks();
    const child = spawn(cmd, args, {
      cwd,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr = (stderr + d).slice(-4000);
    });
    let peak = 0;
    const timer = setInterval(() => {
      peak = Math.max(peak, treeRssKb(child.pid!));
    }, 25);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearInterval(timer);
      resolve({
        seconds: (performance.now() - t0) / 1000,
        peakRssMb: peak / 1024,
        code: code ?? 1,
        stderr,
        machineCpuSeconds: (machineBusyTicks() - cpu0) / TICKS_PER_SECOND,
      });
    });
  });
}

/** The peak resident memory of a process and its children, in kB. */
function treeRssKb(pid: number): number {
  let total = 0;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    // The high-water mark: a peak between two samples is not missed.
    total += Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    for (const child of children ? children.split(/\s+/) : []) total += treeRssKb(Number(child));
  } catch {
    // The process ended between two samples.
  }
  return total;
}

/** Linux's USER_HZ, the unit of /proc/stat: 100 on every architecture sluice runs on. */
const TICKS_PER_SECOND = 100;

/** The machine's busy CPU time so far (all cores, /proc/stat: all but idle and iowait), in ticks. */
function machineBusyTicks(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    return total - (ticks[3] ?? 0) - (ticks[4] ?? 0);
  } catch {
    return 0;
  }
}
