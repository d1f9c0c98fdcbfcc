// Builds dist/ from src/: JavaScript through esbuild (one file per source file, and the vendored
// packages below bundled: 1.3-1.5 s), and with `--types` the declarations through tsc (for the
// package).
// `npm ci` runs it (prepare) without --types. esbuild and TypeScript are dev dependencies: users
// install the package, which holds dist/ already (npm pack runs prepack, which builds), so none
// of them downloads a build tool. A clone installed with --omit=dev has no esbuild: it is told
// to install it (or `npm ci`, then `npm prune --omit=dev`), not left with a broken install.
// dist/ is rebuilt in place, never removed first: a run may be importing from it meanwhile (the
// first `npx sluice` in this folder installs the folder into npx's cache, which runs prepare, while
// a scheduled run of the same install goes on). Each JavaScript file and source map is written to
// a temporary name and renamed over the old one, and only when its content changed; then the
// outputs of sources since deleted are removed. A reader sees a module's old file or its new one,
// never none or half of one (tsc rewrites the declarations in place: no run reads them).
// The pure-JavaScript packages of many files a run loads (kysely, undici, zod, yaml: about 540
// modules) are bundled into dist/vendor/, one file each, and dist/ imports them from there:
// Node opens, resolves and compiles each module of a package apart, and a run opened 1,064
// (docs/speed.md: 0.1-0.2 s less a run). Types still come from the packages. A vendored chunk
// of an earlier build is removed as an output of no source is.
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
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = outDir();
/** Bundled into `out`/vendor/ (see above); imported by their bare names only. */
const VENDORED = ['kysely', 'undici', 'zod', 'yaml'];
const VENDOR_DIR = 'vendor';
const VENDORED_IMPORT = new RegExp(`(from |import |import\\()"(${VENDORED.join('|')})"`, 'g');
/** A package's own files stay in its folder; vendor/ holds only the bundles and their licences. */
const VENDOR_LICENSES = 'LICENSES.txt';
process.chdir(root);

/** Where to build: dist/, or the folder --out names (from the caller's folder), outside the
 * project: pruning removes the .js files no source in src/ gives. */
function outDir() {
  const at = process.argv.indexOf('--out');
  if (at < 0) return join(root, 'dist');
  const given = process.argv[at + 1];
  const dir = given && !given.startsWith('-') ? resolve(given) : undefined;
  const inside = (parent, child) => !relative(parent, child).startsWith('..');
  if (dir === undefined || inside(dir, root) || inside(root, dir)) {
    console.error(`build.mjs: --out needs a folder outside the project, not ${given ?? 'nothing'}`);
    process.exit(2);
  }
  return dir;
}

function sources(dir, found = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, found);
    else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

/**
 * Whether `out` holds a JavaScript file for every source, none older than its source, and every
 * vendored bundle with the chunks it imports (a build stopped half way may have left none).
 */
function upToDate() {
  const built = sources('src').every((source) => {
    const js = join(out, relative('src', source)).replace(/\.ts$/, '.js');
    return existsSync(js) && statSync(js).mtimeMs >= statSync(source).mtimeMs;
  });
  return (
    built &&
    VENDORED.every((name) => {
      const entry = join(out, VENDOR_DIR, `${name}.js`);
      if (!existsSync(entry)) return false;
      const chunks = readFileSync(entry, 'utf8').matchAll(
        /(?:from|import) "\.\/(chunk-[\w-]+\.js)"/g,
      );
      return [...chunks].every(([, chunk]) => existsSync(join(out, VENDOR_DIR, chunk)));
    })
  );
}

let build;
try {
  ({ build } = await import('esbuild'));
} catch {
  // A clone pruned to its dependencies (npm ci, then npm prune --omit=dev) has dist/ built:
  // `npx sluice` installs the folder into npx's cache, which runs prepare again.
  if (!process.argv.includes('--types') && upToDate()) process.exit(0);
  console.error(
    'build.mjs: esbuild is not installed (it is a dev dependency): build with `npm ci`, then `npm prune --omit=dev` for a production install',
  );
  process.exit(1);
}
const built = await build({
  absWorkingDir: root,
  entryPoints: sources('src'),
  write: false,
  outdir: out,
  outbase: 'src',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  metafile: true,
  logLevel: 'warning',
});
const vendored = await vendor();
const isChunk = (file) => /[\\/]chunk-[^\\/]*$/.test(file.path);
// The chunks before the bundles that import them, the bundles before the code that imports
// them: a run importing from `out` meanwhile never finds an import of a file not yet written.
for (const file of [
  ...vendored.filter(isChunk),
  ...vendored.filter((f) => !isChunk(f)),
  ...built.outputFiles.map((f) => fromVendor(f, built.metafile)),
]) {
  let same = false;
  try {
    same = readFileSync(file.path).equals(file.contents);
  } catch {}
  if (same) {
    // Unchanged, but newer than its source again (upToDate reads the times).
    const now = new Date();
    utimesSync(file.path, now, now);
    continue;
  }
  mkdirSync(dirname(file.path), { recursive: true });
  const temporary = `${file.path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/**
 * The vendored packages bundled into `out`/vendor/: an entry each that names the package's
 * exports (a CommonJS package's too: `export *` would give only its default), code both share
 * in chunks, and `require` for the builtins a CommonJS package asks for.
 */
async function vendor() {
  if (existsSync(join('src', VENDOR_DIR))) {
    throw new Error(`build.mjs: src/${VENDOR_DIR} would be built where the vendored bundles go`);
  }
  const entries = {};
  const licenses = [];
  const versions = [];
  for (const name of VENDORED) {
    const folder = join(root, 'node_modules', name);
    const { version, license } = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
    versions.push(`${name}@${version}`);
    const text = readdirSync(folder).find((f) => /^licen[cs]e(\.(md|txt))?$/i.test(f));
    licenses.push(
      `${name}@${version} (${license})\n\n${text ? readFileSync(join(folder, text), 'utf8').trim() : ''}\n`,
    );
    const module = await import(name);
    const names = Object.keys(module).filter(
      (k) => k !== 'default' && /^[A-Za-z_$][\w$]*$/.test(k),
    );
    entries[name] = `export { ${names.join(', ')} } from '${name}';\n`;
    if ('default' in module) entries[name] += `export { default } from '${name}';\n`;
  }
  const bundled = await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(VENDORED.map((name) => [name, `vendor:${name}`])),
    chunkNames: 'chunk-[hash]',
    bundle: true,
    splitting: true,
    write: false,
    outdir: join(out, VENDOR_DIR),
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    banner: {
      js: `/* Bundled by sluice's build: ${versions.join(', ')}; their licences in ${VENDOR_LICENSES}. */\nimport { createRequire as __vendorRequire } from 'node:module'; const require = __vendorRequire(import.meta.url);`,
    },
    plugins: [
      {
        name: 'vendor-entries',
        setup(b) {
          b.onResolve({ filter: /^vendor:/ }, (args) => ({
            path: args.path.slice('vendor:'.length),
            namespace: 'vendor',
          }));
          b.onLoad({ filter: /.*/, namespace: 'vendor' }, (args) => ({
            contents: entries[args.path],
            resolveDir: root,
            loader: 'js',
          }));
        },
      },
    ],
  });
  const notice = `The packages bundled in this folder, each under its own licence:\n\n${licenses.join('\n---\n\n')}`;
  const path = join(out, VENDOR_DIR, VENDOR_LICENSES);
  return [...bundled.outputFiles, { path, contents: Buffer.from(notice) }];
}

/**
 * A built file of src/ with its imports of vendored packages taken from `out`/vendor/. The
 * imports esbuild found (`metafile`) are the ones rewritten, each once: an import the rewrite
 * misses would load the package's second copy, and text that only looks like one is not code.
 */
function fromVendor(file, metafile) {
  if (!file.path.endsWith('.js')) return file;
  const name = relative(out, file.path);
  const found = (metafile.outputs[relative(root, file.path)]?.imports ?? []).filter((i) =>
    VENDORED.some((v) => i.path === v || i.path.startsWith(`${v}/`)),
  );
  for (const i of found) {
    if (!VENDORED.includes(i.path)) {
      // Its own copy of the package beside the vendored one: vendor the subpath too.
      throw new Error(`build.mjs: ${name} imports ${i.path}, not vendored`);
    }
  }
  if (found.length === 0) return file;
  let rewrites = 0;
  const rewritten = file.text.replace(VENDORED_IMPORT, (_, before, pkg) => {
    rewrites++;
    let path = relative(dirname(file.path), join(out, VENDOR_DIR, `${pkg}.js`));
    if (!path.startsWith('.')) path = `./${path}`;
    return `${before}"${path}"`;
  });
  if (rewrites !== found.length) {
    throw new Error(
      `build.mjs: ${name} imports ${found.length} vendored packages, and ${rewrites} were rewritten`,
    );
  }
  return { path: file.path, contents: Buffer.from(rewritten) };
}

const OUTPUT = /\.(js|js\.map|d\.ts|d\.ts\.map)$/;
/** A build's temporary file: its own to rename, unless that build is gone (killed, disk full). */
const TEMPORARY = /\.(\d+)\.tmp$/;
const STALE_TEMPORARY_MS = 60_000;

/** Removes the outputs of sources since deleted or renamed, and temporary files left behind by a
 * build that stopped; anything else is left as it is. Returns whether the folder is left empty. */
function prune(dir) {
  let left = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!prune(path) || !removeEmpty(path)) left++;
    } else if (TEMPORARY.test(entry.name) ? abandoned(path) : stale(path)) {
      rmSync(path, { force: true });
    } else left++;
  }
  return left === 0;
}

/** Removes an empty folder, unless another build has just written into it. */
function removeEmpty(dir) {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    if (error.code === 'ENOTEMPTY' || error.code === 'EEXIST') return false;
    throw error;
  }
}

function stale(path) {
  if (relative(out, path).startsWith(`${VENDOR_DIR}/`)) {
    // A chunk of an earlier build; anything else put there is left as it is.
    return /\.js(\.map)?$/.test(path) && !vendored.some((file) => file.path === path);
  }
  const stem = relative(out, path).replace(OUTPUT, '');
  return stem !== relative(out, path) && !existsSync(join('src', `${stem}.ts`));
}

function abandoned(path) {
  const pid = Number(TEMPORARY.exec(path)[1]);
  try {
    process.kill(pid, 0);
    return Date.now() - statSync(path).mtimeMs > STALE_TEMPORARY_MS; // a pid reused since
  } catch (error) {
    return error.code === 'ESRCH' || error.code === 'ENOENT'; // ENOENT: renamed meanwhile
  }
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

// node_modules/.bin/sluice, as the README's cron line runs it: npm does not link a project's own
// command there. (`npx sluice` does not use it: npx installs the folder into its cache instead.)
if (out === join(root, 'dist') && existsSync('node_modules')) {
  const link = join('node_modules', '.bin', 'sluice');
  mkdirSync(dirname(link), { recursive: true });
  try {
    lstatSync(link);
  } catch {
    try {
      symlinkSync(relative(dirname(link), 'bin/sluice.js'), link);
    } catch (error) {
      if (error.code !== 'EEXIST') throw error; // another build made it meanwhile
    }
  }
}
