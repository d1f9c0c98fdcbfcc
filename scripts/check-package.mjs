// The package as users get it, checked the way they use it (.ci/run runs this after the tests):
//  1. `npm pack`, the tarball installed with `--omit=dev` into an empty folder: no build tool
//     (esbuild), no fastify and no DuckDB come with it; the emulator asks for fastify by name, a
//     duckdb: destination for @duckdb/node-api; once fastify is
//     installed, `import('sluice')` and `import('sluice/emulator')` give the public API and the
//     installed `sluice` command runs a pipeline against the emulator into SQLite. Then the
//     DuckDB install command sluice printed is run as printed: it must install (no ETARGET)
//     without an ERESOLVE peer warning, and the same pipeline then loads into DuckDB.
//  2. A clone of this repository, `npm ci` then `npm prune --omit=dev`, has a working command.
// Usage: node scripts/check-package.mjs   (needs the npm registry, as npm ci does)
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'sluice-package-'));
const npm = (args, cwd) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, npm_config_update_notifier: 'false' },
  }).toString();
const step = (text) => console.log(`check-package: ${text}`);

function run(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

try {
  step('npm pack');
  npm(['pack', '--pack-destination', work], root);
  const tarball = join(
    work,
    readdirSync(work).find((f) => f.endsWith('.tgz')),
  );
  const app = join(work, 'app');
  execFileSync('mkdir', ['-p', app]);
  writeFileSync(
    join(app, 'package.json'),
    '{ "name": "app", "private": true, "type": "module" }\n',
  );
  step('install the tarball with --omit=dev into an empty folder');
  npm(['install', tarball, '--omit=dev'], app);
  for (const tool of ['esbuild', 'fastify', 'typescript', '@duckdb/node-api']) {
    if (existsSync(join(app, 'node_modules', tool))) {
      throw new Error(
        `${tool} was installed with sluice: it is for development (or the emulator) only`,
      );
    }
  }
  step("the packed manifest's install scripts run where its scripts/ folder is not shipped");
  const installed = join(app, 'node_modules', 'sluice');
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
  for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) {
    if (manifest.scripts?.[hook] === undefined) continue;
    if (existsSync(join(installed, 'scripts'))) throw new Error('scripts/ was packed');
    const ran = await run('npm', ['run', hook, '--silent'], { cwd: installed });
    if (ran.code !== 0) {
      throw new Error(`the packed ${hook} script fails without scripts/:\n${ran.stderr}`);
    }
  }
  step('the emulator without fastify asks for it by name');
  writeFileSync(
    join(app, 'no-fastify.mjs'),
    "import { startEmulator } from 'sluice/emulator';\ntry { await startEmulator({ port: 0 }); console.log('started'); } catch (e) { console.log(e.code, e.message); }\n",
  );
  const asked = await run(process.execPath, ['no-fastify.mjs'], { cwd: app });
  if (!/SLUICE_USAGE .*npm install fastify@5/.test(asked.stdout)) {
    throw new Error(`the emulator without fastify: ${asked.stdout}${asked.stderr}`);
  }
  npm(['install', 'fastify@5'], app);

  step(
    "import('sluice') and import('sluice/emulator'), and run a pipeline with the installed command",
  );
  writeFileSync(
    join(app, 'pipeline.yaml'),
    `version: 1
name: packaged
source:
  api: v4
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
destination: sqlite:out.sqlite
jobs:
  homes: { type: properties, query: 'province:TX', records: 120, poll: { interval: 200ms } }
`,
  );
  writeFileSync(
    join(app, 'check.mjs'),
    `import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as sluice from 'sluice';
import { startEmulator } from 'sluice/emulator';
for (const name of ['runPipeline', 'loadPipeline', 'parsePipeline', 'createServiceClient', 'openDestination', 'SluiceError', 'silentLogger', 'noProgress']) {
  if (typeof sluice[name] !== 'function' && typeof sluice[name] !== 'object') throw new Error('sluice does not export ' + name);
}
const emulator = await startEmulator({ port: 0, queueMs: 50, rate: 100000 });
try {
  const env = { ...process.env, SLUICE_API_URL: emulator.v4Url, SLUICE_EMAIL: emulator.options.email, SLUICE_PASSWORD: emulator.options.password };
  const spec = await sluice.loadPipeline('pipeline.yaml', env);
  if (spec.jobs.length !== 1) throw new Error('loadPipeline');
  // DuckDB is optional (its binary is about 70 MB): a duckdb: destination asks for it by name,
  // with the command that installs it (run below, as printed).
  const duck = await sluice.openDestination('duckdb:out.duckdb').then(() => 'opened', (e) => e.code + ' ' + e.message);
  const install = /npm install @duckdb\\/node-api@\\S+/.exec(duck)?.[0];
  if (!duck.startsWith('SLUICE_USAGE ') || !install) throw new Error('duckdb without @duckdb/node-api: ' + duck);
  writeFileSync('duckdb-install.txt', install);
  // The installed command, as a user runs it, in a process of its own (the emulator answers here).
  const { spawn } = await import('node:child_process');
  const child = spawn('npx', ['sluice', 'run', 'pipeline.yaml', '--json', '--no-progress'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((r) => child.on('exit', r));
  const summary = JSON.parse(out);
  if (code !== 0 || summary.status !== 'succeeded' || summary.jobs[0].loaded !== 120) throw new Error('run: ' + out);
  console.log('check-package: the installed command loaded ' + summary.jobs[0].loaded + ' rows');
} finally {
  await emulator.close();
}
`,
  );
  const checked = await run(process.execPath, ['check.mjs'], { cwd: app });
  process.stdout.write(checked.stdout);
  if (checked.code !== 0) throw new Error(`the installed package failed:\n${checked.stderr}`);

  await checkDuckDbInstall(app);

  step('a clone of the repository, npm ci, then npm prune --omit=dev');
  const clone = join(work, 'clone');
  execFileSync('git', ['clone', '--quiet', root, clone]);
  npm(['ci'], clone);
  npm(['prune', '--omit=dev'], clone);
  const started = Date.now();
  const fields = await run(process.execPath, ['bin/sluice.js', 'fields', 'properties', '--json'], {
    cwd: clone,
  });
  if (fields.code !== 0 || JSON.parse(fields.stdout).type !== 'properties') {
    throw new Error(`sluice pruned to its dependencies failed:\n${fields.stderr}`);
  }
  const viaNpx = await run('npx', ['sluice', '--version'], { cwd: clone });
  if (viaNpx.code !== 0) throw new Error(`npx sluice failed:\n${viaNpx.stderr}`);
  step(`pruned to its dependencies, a working command (first run ${Date.now() - started} ms)`);
} finally {
  rmSync(work, { recursive: true, force: true });
}

/**
 * The install command sluice printed for DuckDB, run as a user would copy it (npm at its usual
 * log level, so that a peer warning shows): it must install, with no ERESOLVE warning, and the
 * installed `sluice` must then load a pipeline into a DuckDB file.
 */
async function checkDuckDbInstall(app) {
  const command = readFileSync(join(app, 'duckdb-install.txt'), 'utf8').trim();
  step(`the printed DuckDB install command: ${command}`);
  const [tool, ...args] = command.split(' ');
  const installed = await run(tool, [...args, '--no-audit', '--no-fund'], {
    cwd: app,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  const said = installed.stdout + installed.stderr;
  if (installed.code !== 0) throw new Error(`${command} failed:\n${said}`);
  if (/ERESOLVE|peer dep|ETARGET/i.test(said)) throw new Error(`${command} warned:\n${said}`);
  writeFileSync(
    join(app, 'duck.yaml'),
    readFileSync(join(app, 'pipeline.yaml'), 'utf8').replace(
      'sqlite:out.sqlite',
      'duckdb:out.duckdb',
    ),
  );
  writeFileSync(
    join(app, 'duck.mjs'),
    `import { spawn } from 'node:child_process';
import { startEmulator } from 'sluice/emulator';
const emulator = await startEmulator({ port: 0, queueMs: 50, rate: 100000 });
try {
  const env = { ...process.env, SLUICE_API_URL: emulator.v4Url, SLUICE_EMAIL: emulator.options.email, SLUICE_PASSWORD: emulator.options.password };
  const child = spawn('npx', ['sluice', 'run', 'duck.yaml', '--json', '--no-progress'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((r) => child.on('exit', r));
  const summary = JSON.parse(out);
  if (code !== 0 || summary.status !== 'succeeded' || summary.jobs[0].loaded !== 120) throw new Error('run into duckdb: ' + out);
  console.log('check-package: the installed command loaded ' + summary.jobs[0].loaded + ' rows into DuckDB');
} finally {
  await emulator.close();
}
`,
  );
  const loaded = await run(process.execPath, ['duck.mjs'], { cwd: app });
  process.stdout.write(loaded.stdout);
  if (loaded.code !== 0) throw new Error(`DuckDB after ${command}:\n${loaded.stderr}`);
}
