/**
 * The README's example sessions are real: every ```console block that follows a line
 * `<!-- example -->` is run, command by command, against a fresh emulator (the same data as
 * `npx sluice emulator`), and what sluice prints must be what the README shows. The test
 * (test/e2e/readme.test.ts) fails when they differ; `npm run readme` writes the outputs anew.
 *
 * In a block, a line `$ npx sluice ...` is a command (its stdout, then its stderr, follow it);
 * `$ export A=B C=D` sets variables for the commands after it. The emulator's address in the
 * README is http://127.0.0.1:8787 and stands for the test emulator's. Ids, run ids, times and
 * durations are compared as placeholders, and runs of spaces as one.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitCodeTable } from '../../src/error-codes.js';
import { EmulatorHarness } from './emulator.js';
import { runCli } from './pipeline.js';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADDRESS = 'http://127.0.0.1:8787';
const FOLDER = '/tmp/sluice-readme';

export interface ExampleResult {
  /** The README as it should be, every example output as sluice prints it now. */
  text: string;
  /** Commands whose output differs from the README's (after normalising). */
  stale: { command: string; expected: string; actual: string }[];
}

/** Splits a shell command line the way sh would for the simple quoting the README uses. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: string | undefined;
  let started = false;
  for (const char of line) {
    if (quote) {
      if (char === quote) quote = undefined;
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      started = true;
    } else if (/\s/.test(char)) {
      if (started || word) words.push(word);
      word = '';
      started = false;
    } else word += char;
  }
  if (started || word) words.push(word);
  return words;
}

export function normalise(text: string): string {
  return (
    text
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
      .replace(/(?<![0-9a-f])[0-9a-f]{24}(?![0-9a-f])/g, '<id>')
      .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, '<time>')
      .replace(/\[\d{2}:\d{2}:\d{2}\]/g, '[<clock>]')
      .replace(/\b\d+(\.\d+)?s\b/g, '<s>s')
      // seconds in tables, which change from run to run
      .replace(/\b\d+\.\d{1,2}\b/g, '<n>')
      .replace(/[ \t]+/g, ' ')
      .replace(/ +$/gm, '')
      .trim()
      .split('\n')
      .reduce(sortedLogLines, [] as string[])
      .join('\n')
  );
}

/**
 * Log lines of jobs run at once come in the order their work ends, which may differ from run to
 * run: a run of log lines is compared as a set, in a stable order.
 */
function sortedLogLines(lines: string[], line: string): string[] {
  const isLog = (l: string | undefined) => l?.startsWith('[<clock>] ') === true;
  if (!isLog(line)) return [...lines, line];
  let start = lines.length;
  while (start > 0 && isLog(lines[start - 1])) start--;
  return [...lines.slice(0, start), ...[...lines.slice(start), line].sort()];
}

export async function runReadmeExamples(): Promise<ExampleResult> {
  const original = readFileSync(README, 'utf8');
  const harness = await EmulatorHarness.start({ queueMs: 0, rate: 1_000_000 });
  // The examples name FOLDER; each run of them works in a new temporary folder of its own, so
  // that two test runs on one machine never share it.
  const folder = mkdtempSync(join(tmpdir(), 'sluice-readme-'));
  const stale: ExampleResult['stale'] = [];
  const local = (text: string) => text.replaceAll(ADDRESS, harness.url).replaceAll(FOLDER, folder);
  const shown = (text: string) =>
    text.replaceAll(harness.url, ADDRESS).replaceAll(folder, FOLDER).replaceAll(ROOT, '');
  try {
    const blocks = /<!-- example -->\n```console\n([\s\S]*?)```/g;
    let text = '';
    let last = 0;
    let env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
    for (let match = blocks.exec(original); match; match = blocks.exec(original)) {
      const body = match[1]!;
      const out: string[] = [];
      const lines = body.split('\n');
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i]!;
        if (!line.startsWith('$ ')) continue;
        const expected: string[] = [];
        for (let j = i + 1; j < lines.length && !lines[j]!.startsWith('$ '); j++) {
          expected.push(lines[j]!);
        }
        out.push(line);
        const words = shellWords(local(line.slice(2)));
        if (words[0] === 'export') {
          for (const pair of words.slice(1)) {
            const at = pair.indexOf('=');
            env = { ...env, [pair.slice(0, at)]: pair.slice(at + 1) };
          }
          continue;
        }
        if (words[0] !== 'npx' || words[1] !== 'sluice') {
          throw new Error(`README example: only 'npx sluice' and 'export' lines run: ${line}`);
        }
        // The emulator's time moves with the run's waits: polling takes no real time.
        const result = await runCli(words.slice(2), env, undefined, harness.clock());
        const actual = shown(`${result.stdout}${result.stderr}`).replace(/\n+$/, '');
        if (actual !== '') out.push(actual);
        const want = expected.join('\n').replace(/\n+$/, '');
        if (normalise(want) !== normalise(actual))
          stale.push({ command: line, expected: want, actual });
      }
      text += `${original.slice(last, match.index)}<!-- example -->\n\`\`\`console\n${out.join('\n')}\n\`\`\``;
      last = match.index + match[0].length;
    }
    text += original.slice(last);
    return { text, stale };
  } finally {
    await harness.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

const EXIT_CODES = /<!-- exit-codes -->\n[\s\S]*?\n<!-- \/exit-codes -->/;

/** The README's exit-code table, between its markers, as `src/error-codes.ts` writes it. */
export function readmeExitCodes(readme: string): string | undefined {
  return EXIT_CODES.exec(readme)?.[0];
}

export function withExitCodes(readme: string): string {
  return readme.replace(
    EXIT_CODES,
    `<!-- exit-codes -->\n${exitCodeTable()}\n<!-- /exit-codes -->`,
  );
}

// `npm run readme`: writes the README with the outputs sluice prints now, and the exit codes.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { text, stale } = await runReadmeExamples();
  writeFileSync(README, withExitCodes(text));
  console.log(`README.md: ${stale.length} example output(s) updated`);
}
