import type { AlertTargetDocument } from '../pipeline/index.js';
import { formatTable, type Io, writeLine } from './output.js';

/**
 * Where a pipeline's alerts go, as a section of `validate`'s text output: each target's kind and
 * host (never its path, token or password), the events it takes and its budget threshold.
 * Nothing for a pipeline without targets (`--json` has `alerts: []`).
 */
export function writeAlertTargets(io: Io, targets: readonly AlertTargetDocument[]): void {
  if (targets.length === 0) return;
  writeLine(io.stdout);
  writeLine(
    io.stdout,
    formatTable(
      ['alerts for', 'target', 'host', 'on', 'budget alert at'],
      targets.map((t) => [t.for, t.kind, t.host, t.on.join(', '), `${t.budget_threshold}%`]),
    ),
  );
}
