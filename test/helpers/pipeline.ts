import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Clock } from '../../src/pipeline/clock.js';
import { shapePlanOf } from '../../src/pipeline/context.js';
import { parsePipeline } from '../../src/pipeline/spec/spec.js';
import type { ShapePlan } from '../../src/records/tables.js';
import type { EmulatorHarness } from './emulator.js';

/** A Writable that keeps what was written, for reading a command's output in tests. */
export class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }
}

export function tempDir(prefix = 'sluice-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Writes a pipeline file into `dir` whose source is the harness's emulator. */
export function writePipeline(dir: string, name: string, body: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, body);
  return file;
}

/**
 * A pipeline file's opening lines, with the emulator of `emulatorEnv` as its source: v4 with a
 * login, or v3 with its API token.
 */
export function pipelineHead(
  name: string,
  destinationYaml: string,
  api: 'v4' | 'v3' = 'v4',
): string {
  const credentials =
    api === 'v4'
      ? '  email: ${SLUICE_EMAIL}\n  password: ${SLUICE_PASSWORD}\n'
      : '  token: ${SLUICE_API_TOKEN}\n';
  return `version: 1
name: ${name}
source:
  api: ${api}
  url: \${SLUICE_API_URL}
${credentials}destination: ${destinationYaml}
`;
}

/** Environment for the CLI pointing at the harness's emulator (v4). */
export function emulatorEnv(
  harness: EmulatorHarness,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const { email, password, token } = harness.credentials;
  return {
    PATH: process.env.PATH,
    SLUICE_API_URL: harness.v4Url,
    SLUICE_EMAIL: email,
    SLUICE_PASSWORD: password,
    SLUICE_API_TOKEN: token,
    // Lets a test run choose where parsing happens (e.g. SLUICE_PARSE_WORKERS=2 forces workers).
    ...(process.env.SLUICE_PARSE_WORKERS === undefined
      ? {}
      : { SLUICE_PARSE_WORKERS: process.env.SLUICE_PARSE_WORKERS }),
    // PostgreSQL appends load two files at once, as they do on four cores or more, whatever
    // this machine's (SQLite, and jobs that merge, load one at a time whatever this says).
    SLUICE_FILES_AT_ONCE: process.env.SLUICE_FILES_AT_ONCE ?? '2',
    ...extra,
  };
}

/** The built CLI: the end-to-end tests run what ships (`npm test` builds it first). */
const DIST_CLI = new URL('../../dist/cli/index.js', import.meta.url);

type Cli = typeof import('../../src/cli/index.js');
let cli: Promise<Cli> | undefined;

function builtCli(): Promise<Cli> {
  cli ??= import(DIST_CLI.href).catch((error: unknown) => {
    throw new Error(`${DIST_CLI.pathname} is missing: run npm run build (npm test does)`, {
      cause: error,
    });
  }) as Promise<Cli>;
  return cli;
}

/** Runs the built CLI in this process and returns its exit code and output. */
export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
  clock?: Clock,
) {
  const { main } = await builtCli();
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await main(argv, {
    io: { stdout, stderr },
    env,
    signal: signal ?? new AbortController().signal,
    ...(clock ? { clock } : {}),
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** The installed command (`bin/sluice.js`, which runs the built CLI), for tests in a subprocess. */
export const SLUICE_BIN = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));

/** How the records of one properties job (`query: '*'`, these settings besides) become rows. */
export function propertiesPlan(settings: string): ShapePlan {
  const job = settings
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
  const spec = parsePipeline(
    `version: 1
name: p
source: { api: v4, url: 'http://x.test/v4', email: e, password: p }
jobs:
  homes:
    type: properties
    query: '*'
${job}
`,
    'p.yaml',
    {},
  );
  return shapePlanOf(spec.jobs[0]!, spec);
}
