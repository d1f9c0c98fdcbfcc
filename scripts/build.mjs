// Builds dist/ from src/: JavaScript through esbuild (one file per source file, no bundling, in
// well under a second), and with `--types` the declarations through tsc (for the package).
// `npm ci` runs it (prepare) without --types, so `npm ci --omit=dev` gives a working install:
// esbuild is a dependency, TypeScript only a dev dependency.
// dist/ is rebuilt in place, never removed first: a run may be importing from it meanwhile (the
// first `npx sluice` in this folder installs the folder into npx's cache, which runs prepare, while
// a scheduled run of the same install goes on). Each file is written to a temporary name and
// renamed over the old one, and only when its content changed; files whose source is gone are
// removed after. A reader sees the old file or the new one, never none or half of one.
// Usage: node scripts/build.mjs [--types] [--out DIR]   (DIR: dist by default; tests build elsewhere)
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const at = process.argv.indexOf('--out');
const out = at < 0 ? 'dist' : resolve(process.argv[at + 1] ?? '');
process.chdir(root);

function sources(dir, found = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, found);
    else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

const built = await build({
  entryPoints: sources('src'),
  write: false,
  outdir: out,
  outbase: 'src',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
for (const file of built.outputFiles) {
  let same = false;
  try {
    same = readFileSync(file.path).equals(file.contents);
  } catch {}
  if (same) continue;
  mkdirSync(dirname(file.path), { recursive: true });
  const temporary = `${file.path}.${process.pid}.tmp`;
  writeFileSync(temporary, file.contents);
  renameSync(temporary, file.path);
}

/** Removes what no source in src/ gives (a source deleted or renamed); another build's files
 * being written (*.tmp) are left to it. Returns whether the folder is left empty. */
function prune(dir) {
  let left = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (prune(path)) rmdirSync(path);
      else left++;
      continue;
    }
    const stem = relative(out, path).replace(/\.(js|js\.map|d\.ts|d\.ts\.map)$/, '');
    if (name.endsWith('.tmp') || (stem !== relative(out, path) && existsSync(`src/${stem}.ts`)))
      left++;
    else rmSync(path, { force: true });
  }
  return left === 0;
}
prune(out);

if (process.argv.includes('--types')) {
  const tsc = spawnSync(
    process.execPath,
    ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--outDir', out],
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
