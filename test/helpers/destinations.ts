/**
 * The destinations the end-to-end tests run on, chosen by `SLUICE_TEST_DESTINATIONS` (default:
 * every registered kind that can make test targets). Each test gets a fresh target, as its
 * destination's entry makes one (`DestinationEntry.testTargets`: a new file, or a new schema
 * dropped afterwards); rows are read back with a separate connection, as an analyst would. Tests
 * ask a target what they need (its columns, its indexes, how many files it writes at once)
 * rather than which destination it is: nothing here names one.
 */
import { after } from 'node:test';
import type { TestTarget as OwnTarget, TestTargets } from '../../src/load/entry.js';
import { destinations } from '../../src/load/index.js';

/** A destination kind's name in the registry. */
export type Kind = string;

export interface TestTarget extends OwnTarget {
  kind: Kind;
  /** One process at a time has the database open (see `TestTargets.oneProcess`). */
  oneProcess: boolean;
  /** The types it declares for sluice's column types (see `TestTargets.declared`). */
  declared: TestTargets['declared'];
  /** Files of one job it loads at once (1: one writer). */
  writersAtOnce: number;
  /** Longest name it keeps whole, in UTF-8 bytes. */
  maxIdentifierBytes: number;
  /** The type it declares for sluice's integer columns, as `columns` reports it. */
  integerType: string;
  one<T = Record<string, unknown>>(sql: string): Promise<T>;
}

/** The registered kinds that make test targets. */
function testableKinds(): Kind[] {
  return destinations()
    .filter((d) => d.testTargets !== undefined)
    .map((d) => d.name);
}

export function destinationKinds(): Kind[] {
  const known = testableKinds();
  const list = (process.env.SLUICE_TEST_DESTINATIONS ?? known.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const kind of list) {
    if (!known.includes(kind)) throw new Error(`unknown destination kind '${kind}'`);
  }
  return list;
}

async function targetsOf(kind: Kind): Promise<TestTargets> {
  const entry = destinations().find((d) => d.name === kind);
  const targets = await entry?.testTargets?.();
  if (targets === undefined) throw new Error(`destination ${kind} makes no test targets`);
  return targets;
}

/** Why a kind cannot run here (its server unreachable outside CI), or undefined. */
export async function skipReason(kind: Kind): Promise<string | undefined> {
  return (await targetsOf(kind)).skipReason();
}

/**
 * Opens fresh targets of `kind` under `dir()` for one suite, and disposes of them after it.
 * Call it where the suite is declared.
 */
export function targetFactory(
  kind: Kind,
  dir: () => string,
): (name: string) => Promise<TestTarget> {
  const targets: TestTarget[] = [];
  after(async () => {
    for (const t of targets) await t.dispose();
  });
  return async (name) => {
    const t = await openTarget(kind, dir(), name);
    targets.push(t);
    return t;
  };
}

export async function openTarget(kind: Kind, dir: string, name: string): Promise<TestTarget> {
  const targets = await targetsOf(kind);
  const own = await targets.fresh(dir, name);
  const { capabilities } = destinations().find((d) => d.name === kind)!;
  return {
    ...own,
    kind,
    oneProcess: targets.oneProcess,
    declared: targets.declared,
    writersAtOnce: capabilities.concurrentWriters,
    maxIdentifierBytes: capabilities.maxIdentifierBytes,
    integerType: targets.declared.integer,
    one: async <T>(sql: string) => {
      const [row] = await own.all<T>(sql);
      if (row === undefined) throw new Error(`no row from: ${sql}`);
      return row;
    },
  };
}
