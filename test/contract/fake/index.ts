/**
 * A destination that lives in the tests only, added the way docs/design.md ("Adding a
 * destination") says: this folder, and one line that registers it (`registerDestination(fake)`
 * in destination.test.ts, where a destination of sluice's own has its line in
 * `src/load/registry.ts`). Its parts are borrowed from SQLite's (a file under a scheme of its
 * own, `fake:PATH`, with a shorter identifier limit); the contract suite, the pipeline file's
 * checks and `runPipeline` take it like the others, and nothing outside this folder names it.
 */
import { isAbsolute, join, resolve } from 'node:path';
import type { DestinationEntry } from '../../../src/load/index.js';
import { sqlite } from '../../../src/load/sqlite/index.js';
import { sqliteTarget } from '../../../src/load/sqlite/test-target.js';

/** The absolute path of a `fake:` URL, relative paths taken from `baseDir`. */
function fakePath(url: string, baseDir = process.cwd()): string {
  const given = url.slice('fake:'.length);
  return isAbsolute(given) ? given : resolve(baseDir, given);
}

export const fake: DestinationEntry = {
  name: 'fake',
  displayName: 'FakeSQL',
  example: 'fake:PATH',
  capabilities: {
    ...sqlite.capabilities,
    maxIdentifierBytes: 40,
    batchBytes: { appends: 32 << 10, merges: { csv: 32 << 10, json: 32 << 10 } },
  },
  matches: (url) => url.startsWith('fake:'),
  identity: (url, options) => fakePath(url, options.baseDir),
  async connect(url, options) {
    const path = fakePath(url, options.baseDir);
    const parts = await sqlite.connect(`sqlite:${path}`, options, {});
    return { ...parts, description: `fake:${path}` };
  },
  testTargets: async () => ({
    ...(await sqlite.testTargets!()),
    fresh: async (dir, name) => sqliteTarget(join(dir, `${name}.db`), 'fake'),
  }),
};
