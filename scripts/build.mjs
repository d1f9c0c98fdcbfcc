// Builds dist/ from src/: JavaScript through esbuild (one file per source file, no bundling, in
// well under a second), and with `--types` the declarations through tsc (for the package).
// `npm ci` runs it (prepare) without --types, so `npm ci --omit=dev` gives a working install:
// esbuild is a dependency, TypeScript only a dev dependency.
// Usage: node scripts/build.mjs [--types]
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);

function sources(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

rmSync('dist', { recursive: true, force: true });
await build({
  entryPoints: sources('src'),
  outdir: 'dist',
  outbase: 'src',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});

if (process.argv.includes('--types')) {
  const tsc = spawnSync(
    process.execPath,
    ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'],
    { stdio: 'inherit' },
  );
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
}

// `npx sluice` in this folder finds the command here, instead of installing the folder into
// npx's cache first (npm does not link a project's own bin into its node_modules/.bin).
if (existsSync('node_modules')) {
  const link = join('node_modules', '.bin', 'sluice');
  mkdirSync(dirname(link), { recursive: true });
  try {
    lstatSync(link);
  } catch {
    symlinkSync(relative(dirname(link), 'bin/sluice.js'), link);
  }
}
