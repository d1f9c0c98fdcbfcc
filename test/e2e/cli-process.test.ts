import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, SLUICE_BIN } from '../helpers/pipeline.js';

/** The CLI as a user runs it: a separate process, settings from the environment. */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let h: EmulatorHarness;

before(async () => {
  h = await EmulatorHarness.start({ scale: 0.05 });
});
after(() => h.close());

function sluice(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('count in a subprocess prints the number and exits 0', async () => {
  const r = await sluice(['count', 'properties', 'city:Austin'], emulatorEnv(h));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^\d+\n$/);
  assert.ok(Number(r.stdout) > 0);
  assert.equal(r.stderr, '');
});

test('a user mistake in a subprocess: exit 2, one message, no stack trace', async () => {
  // No email and no API token (which v4 also takes): nothing to log in with.
  const { SLUICE_EMAIL: _, SLUICE_API_TOKEN: __, ...env } = emulatorEnv(h);
  const r = await sluice(['count', 'properties', 'city:Austin'], env);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^sluice: .*SLUICE_EMAIL/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.ok(!r.stderr.includes(h.credentials.password));

  const bad = await sluice(['count', 'properties', 'city:Austin AND'], emulatorEnv(h));
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /\^/);
  assert.doesNotMatch(bad.stderr, /\n\s+at /);
});

/**
 * `sluice fields properties | head -1`: the reader goes after the first line (or before the
 * first write), and sluice drops the rest of its output quietly, exit 0, no stack trace.
 */
function readFirstLineThenClose(
  args: string[],
  env: NodeJS.ProcessEnv,
  closeAtOnce: boolean,
): Promise<{ code: number | null; signal: string | null; first: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE_BIN, ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let first = '';
    let stderr = '';
    if (closeAtOnce) child.stdout.destroy();
    child.stdout.on('data', (chunk) => {
      first += chunk;
      if (first.includes('\n')) {
        first = first.slice(0, first.indexOf('\n'));
        child.stdout.destroy();
      }
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, first, stderr }));
  });
}

test('a reader that goes away (| head -1) ends the output quietly, exit 0', async () => {
  for (const closeAtOnce of [false, true]) {
    for (const args of [
      ['fields', 'properties'],
      ['fields', 'properties', '--json'],
    ]) {
      const r = await readFirstLineThenClose(args, emulatorEnv(h), closeAtOnce);
      const what = `${args.join(' ')}${closeAtOnce ? ', reader gone before the first line' : ''}`;
      assert.equal(r.stderr, '', what);
      assert.equal(r.code, 0, what);
      if (!closeAtOnce) assert.notEqual(r.first, '', what);
    }
  }
});

test('help shows a required list argument as required, with no default', async () => {
  for (const args of [
    ['run', '--help'],
    ['count', '--help'],
    ['get', '--help'],
  ]) {
    const r = await sluice(args, emulatorEnv(h));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\[array\] \[required\]\n/, args.join(' '));
    assert.doesNotMatch(r.stdout, /\[default: \[\]\]/, args.join(' '));
  }
});
