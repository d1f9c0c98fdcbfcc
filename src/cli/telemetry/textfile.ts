import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Metric } from './metrics.js';

/**
 * node_exporter's textfile collector format (Prometheus' text exposition format 0.0.4): a HELP
 * and a TYPE line per metric, then a line per series. Every figure is the last run's, so each
 * is a gauge; the collector adds the file's modification time of its own.
 */
export function textfile(metrics: readonly Metric[]): string {
  const lines: string[] = [];
  for (const m of metrics) {
    lines.push(`# HELP ${m.prom} ${m.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`);
    lines.push(`# TYPE ${m.prom} gauge`);
    for (const p of m.points) {
      const labels = Object.entries(p.labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
      lines.push(`${m.prom}${labels.length > 0 ? `{${labels.join(',')}}` : ''} ${p.value}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/**
 * Writes the file whole or not at all: a temporary file in the same folder (which the collector
 * skips: it reads `*.prom` only), renamed over the file, so the collector never reads half.
 */
export async function writeTextfile(path: string, metrics: readonly Metric[]): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(temp, textfile(metrics), { mode: 0o644 });
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
