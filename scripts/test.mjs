// Runs the test suite with Node's own test runner through tsx.
// Node 20 does not expand globs for --test, so the files are listed here.
// Usage: node scripts/test.mjs [--wire live|contract|real] [dir-or-file ...]   (default: test/)
// --wire sets SLUICE_TEST_WIRE: the wire mode of every emulator whose test names none (CI runs
// the end-to-end files once more against the contract's forms: npm run test:e2e-contract).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path).sort()) {
      // Benchmarks are not tests; the reliability suite runs on its own (npm run test:reliability).
      if (name === 'bench' || name === 'fixtures' || (name === 'reliability' && !explicit))
        continue;
      collect(join(path, name), out);
    }
  } else if (path.endsWith('.test.ts')) {
    out.push(path);
  }
  return out;
}

// The end-to-end tests run the built CLI (dist/), as users do: build it first (under two seconds).
const build = spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const args = process.argv.slice(2);
const env = { ...process.env };
const wireAt = args.indexOf('--wire');
if (wireAt >= 0) {
  env.SLUICE_TEST_WIRE = args[wireAt + 1] ?? '';
  args.splice(wireAt, 2);
}
const roots = args;
const explicit = roots.some((r) => r.includes('reliability'));
// The long end-to-end files start first, so that short ones fill the gaps at the end instead of
// one long file running alone on the last core.
const FIRST = ['test/e2e/', 'test/contract/', 'test/conformance/'];
const rank = (file) => {
  const i = FIRST.findIndex((prefix) => file.startsWith(prefix));
  return i < 0 ? FIRST.length : i;
};
const files = (roots.length ? roots : ['test'])
  .flatMap((root) => collect(root, []))
  .sort((a, b) => rank(a) - rank(b));
if (files.length === 0) {
  console.error('no test files found under', roots.join(' ') || 'test');
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=3', '--test-reporter=spec', ...files],
  { stdio: 'inherit', env },
);
process.exit(result.status ?? 1);
