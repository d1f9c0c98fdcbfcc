// Runs the test suite with Node's own test runner through tsx.
// Node 20 does not expand globs for --test, so the files are listed here.
// Usage: node scripts/test.mjs [dir-or-file ...]   (default: test/)
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path).sort()) {
      if (name === 'bench' || name === 'fixtures') continue;
      collect(join(path, name), out);
    }
  } else if (path.endsWith('.test.ts')) {
    out.push(path);
  }
  return out;
}

// The end-to-end tests run the built CLI (dist/), as users do: build it first (incremental).
const build = spawnSync(
  process.execPath,
  ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'],
  {
    stdio: 'inherit',
  },
);
if (build.status !== 0) process.exit(build.status ?? 1);

const roots = process.argv.slice(2);
const files = (roots.length ? roots : ['test']).flatMap((root) => collect(root, []));
if (files.length === 0) {
  console.error('no test files found under', roots.join(' ') || 'test');
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
