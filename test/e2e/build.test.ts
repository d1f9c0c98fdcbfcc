import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/pipeline.js';

/**
 * scripts/build.mjs (npm's prepare) rebuilds in place: the first `npx sluice` in a folder runs
 * it while a run of the same install may be importing modules, so it must never remove a file
 * that is still wanted, nor leave one half written.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function build(...args: string[]) {
  return spawnSync(process.execPath, ['scripts/build.mjs', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
  });
}

/** Every file under `root`, by its path in it. */
function files(root: string, dir = root, found: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files(root, path, found);
    else found.push(relative(root, path));
  }
  return found;
}

describe('the build', () => {
  test('rebuilds in place: unchanged files stay the same files, a changed one is replaced whole, outputs of no source go', (t) => {
    const dir = tempDir('sluice-build-');
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const out = join(dir, 'dist');
    assert.equal(build('--out', out).status, 0);
    const first = files(out);
    assert.ok(first.includes('cli/main.js') && first.includes('cli/main.js.map'));
    const text = new Map(first.map((path) => [path, readFileSync(join(out, path), 'utf8')]));
    // A second name for each file: a file replaced (or removed and written again) loses it.
    mkdirSync(join(dir, 'links'));
    for (const [i, path] of first.entries()) linkSync(join(out, path), join(dir, 'links', `${i}`));

    writeFileSync(join(out, 'errors.js'), 'stale');
    writeFileSync(join(out, 'errors.d.ts'), 'export {};'); // tsc's, of a source that is there
    writeFileSync(join(out, 'gone.js'), 'from a source since deleted');
    writeFileSync(join(out, 'gone.d.ts'), 'export {};');
    mkdirSync(join(out, 'old/deeper'), { recursive: true });
    writeFileSync(join(out, 'old/deeper/module.js.map'), '{}');
    writeFileSync(join(out, 'NOTES.txt'), 'not an output: left alone');
    writeFileSync(join(out, 'vendor/chunk-OLDBUILD.js'), 'a chunk of an earlier build');
    writeFileSync(join(out, 'vendor/NOTES.txt'), 'not a bundle: left alone');
    // A temporary file of a build still going (this process), and of one that stopped.
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    writeFileSync(join(out, `cli/main.js.${process.pid}.tmp`), 'another build writing');
    writeFileSync(join(out, `cli/index.js.${dead}.tmp`), 'a build killed half way');
    assert.equal(build('--out', out).status, 0);

    for (const [i, path] of first.entries()) {
      assert.equal(readFileSync(join(out, path), 'utf8'), text.get(path), path);
      const same = statSync(join(out, path)).ino === statSync(join(dir, 'links', String(i))).ino;
      assert.equal(same, path !== 'errors.js', `${path} is ${same ? 'the same file' : 'new'}`);
    }
    assert.equal(existsSync(join(out, 'errors.d.ts')), true);
    for (const gone of [
      'gone.js',
      'gone.d.ts',
      'old',
      `cli/index.js.${dead}.tmp`,
      'vendor/chunk-OLDBUILD.js',
    ]) {
      assert.equal(existsSync(join(out, gone)), false, `${gone} is removed`);
    }
    assert.equal(existsSync(join(out, 'NOTES.txt')), true);
    assert.equal(existsSync(join(out, 'vendor/NOTES.txt')), true);
    assert.equal(existsSync(join(out, `cli/main.js.${process.pid}.tmp`)), true);
  });

  test('bundles the packages of many modules into vendor/, and the built code imports them from there', async (t) => {
    const dir = tempDir('sluice-build-');
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const out = join(dir, 'dist');
    assert.equal(build('--out', out).status, 0);
    const vendored = ['kysely', 'undici', 'zod', 'yaml'];
    for (const path of files(out).filter((p) => p.endsWith('.js') && !p.startsWith('vendor/'))) {
      const text = readFileSync(join(out, path), 'utf8');
      for (const name of vendored) {
        assert.doesNotMatch(
          text,
          new RegExp(`(from |import |import\\()"${name}[/"]`),
          `${path}: ${name}`,
        );
      }
    }
    assert.match(
      readFileSync(join(out, 'client/http.js'), 'utf8'),
      /from "\.\.\/vendor\/undici\.js"/,
    );
    // The bundles stand alone (outside the project: no node_modules to fall back on), with
    // the exports the code imports, a CommonJS package's (undici) named ones too.
    const kysely = await import(join(out, 'vendor/kysely.js'));
    const undici = await import(join(out, 'vendor/undici.js'));
    const zod = await import(join(out, 'vendor/zod.js'));
    const yaml = await import(join(out, 'vendor/yaml.js'));
    assert.equal(typeof kysely.Kysely, 'function');
    assert.equal(typeof kysely.sql, 'function');
    assert.equal(typeof undici.Agent, 'function');
    assert.equal(typeof undici.request, 'function');
    assert.deepEqual(zod.z.object({ a: zod.z.number() }).parse({ a: 1 }), { a: 1 });
    assert.deepEqual(yaml.parse('a: [1, 2]'), { a: [1, 2] });
    // Their licences ship with them, each package named with its version.
    const licenses = readFileSync(join(out, 'vendor/LICENSES.txt'), 'utf8');
    for (const name of vendored) {
      const { version } = JSON.parse(
        readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'),
      );
      assert.ok(licenses.includes(`${name}@${version}`), name);
    }
    assert.match(licenses, /Permission is hereby granted/);
  });

  test('without esbuild (a production install), takes dist as built only with its vendored bundles', (t) => {
    const dir = tempDir('sluice-build-');
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const out = join(dir, 'dist');
    assert.equal(build('--out', out).status, 0);
    // esbuild as `npm prune --omit=dev` leaves it: not there.
    const hooks = join(dir, 'no-esbuild.mjs');
    writeFileSync(
      hooks,
      `export async function resolve(specifier, context, next) {
        if (specifier === 'esbuild') throw Object.assign(new Error('gone'), { code: 'ERR_MODULE_NOT_FOUND' });
        return next(specifier, context);
      }`,
    );
    const register = join(dir, 'register.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module'; register(${JSON.stringify(`file://${hooks}`)});`,
    );
    const withoutEsbuild = () =>
      spawnSync(process.execPath, ['--import', register, 'scripts/build.mjs', '--out', out], {
        cwd: ROOT,
        encoding: 'utf8',
      });
    assert.equal(withoutEsbuild().status, 0, 'built and whole: nothing to do');
    // A build stopped half way: a bundle's chunk, then a bundle, gone.
    const chunk = readdirSync(join(out, 'vendor')).find((f) => f.startsWith('chunk-'))!;
    rmSync(join(out, 'vendor', chunk));
    let result = withoutEsbuild();
    assert.equal(result.status, 1);
    assert.match(result.stderr, /esbuild is not installed/);
    assert.equal(build('--out', out).status, 0);
    rmSync(join(out, 'vendor/undici.js'));
    result = withoutEsbuild();
    assert.equal(result.status, 1);
  });

  test('refuses to build into the project or a folder holding it, which pruning would empty', () => {
    for (const args of [['--out'], ['--out', '.'], ['--out', 'bin'], ['--out', '--types']]) {
      const result = build(...args);
      assert.equal(result.status, 2, args.join(' '));
      assert.match(result.stderr, /--out needs a folder outside the project/);
    }
  });
});
