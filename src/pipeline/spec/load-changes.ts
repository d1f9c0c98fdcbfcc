import type { Attempt } from '../../load/destination.js';
import type { JobSpec, LoadSettings } from './spec-format.js';

/**
 * What changed in how a job loads since one of its downloads was started: each setting whose
 * value differs (`columns.latitude is now real, was not pinned`), for the refusal of a download
 * half loaded under the old settings. A download started before the settings were recorded
 * (state version 4) has only its table and write mode to compare.
 */
export function loadChanges(attempt: Attempt, job: JobSpec): string[] {
  const now = job.loadSettings;
  const was = recorded(attempt);
  if (was === undefined) return olderChanges(attempt, now);
  const changes: string[] = [];
  const differ = (a: unknown, b: unknown) => JSON.stringify(a) !== JSON.stringify(b);
  for (const name of ['table', 'write', 'nested', 'key', 'people_table'] as const) {
    if (differ(now[name], was[name])) {
      changes.push(`${name} is now ${shown(now[name])}, was ${shown(was[name])}`);
    }
  }
  const pinsNow = new Map(now.columns ?? []);
  const pinsWas = new Map(was.columns ?? []);
  for (const field of [...new Set([...pinsNow.keys(), ...pinsWas.keys()])].sort()) {
    const a = pinsNow.get(field);
    const b = pinsWas.get(field);
    if (a === b) continue;
    changes.push(
      `columns.${field} is now ${a ?? 'not pinned'}, was ${b === undefined ? 'not pinned' : b}`,
    );
  }
  const namingNow = now.naming ?? 'keep';
  const namingWas = was.naming ?? 'keep';
  if (namingNow !== namingWas) changes.push(`naming is now ${namingNow}, was ${namingWas}`);
  return changes;
}

/** The settings an attempt was started (or moved) with, when it recorded them. */
function recorded(attempt: Attempt): LoadSettings | undefined {
  if (attempt.load_settings === null || attempt.load_settings === undefined) return undefined;
  try {
    return JSON.parse(attempt.load_settings) as LoadSettings;
  } catch {
    return undefined;
  }
}

/** A download of a sluice that recorded only its table and write mode. */
function olderChanges(attempt: Attempt, now: LoadSettings): string[] {
  const changes: string[] = [];
  if (attempt.target_table !== now.table) {
    changes.push(`table is now ${shown(now.table)}, was ${shown(attempt.target_table)}`);
  }
  if (attempt.write_mode !== null && attempt.write_mode !== now.write) {
    changes.push(`write is now ${now.write}, was ${attempt.write_mode}`);
  }
  if (changes.length === 0) {
    changes.push(
      'one of nested, key, people_table, columns or naming (the download was started by an older sluice, which recorded only its table and write mode)',
    );
  }
  return changes;
}

function shown(value: unknown): string {
  if (value === null) return 'not set';
  if (Array.isArray(value)) return value.length === 1 ? String(value[0]) : `[${value.join(', ')}]`;
  return String(value);
}
