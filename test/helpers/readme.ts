/**
 * The docs' example sessions are real: every ```console block that follows a line
 * `<!-- example -->`, in README.md and in docs/*.md, is run, command by command, against a fresh
 * emulator (the same data as `npx sluice emulator`; a new one for each page), and what sluice
 * prints must be what the page shows. The test (test/e2e/readme.test.ts) fails when they
 * differ; `npm run readme` writes the outputs anew, and the exit-code tables.
 *
 * In a block, a line `$ npx sluice ...` is a command (its stdout, then its stderr, follow it);
 * `$ export A=B C=D` sets variables for the commands after it, in that page; any other line is
 * run by /bin/sh in the repository's folder, with the page's variables (a file the reader writes
 * before a command, `printf 'A=b\n' > .env`), and its output is compared the same way. The emulator's
 * address in the docs is http://127.0.0.1:8787 and stands for the test emulator's, and the
 * folder /tmp/sluice-readme for a new temporary folder of each page's run (made with mkdtemp,
 * so two test runs on one machine never share one). Ids, run ids, times and durations are
 * compared as placeholders, and runs of spaces as one; an output that differs only in those is
 * kept as the page shows it, so `npm run readme` does not rewrite it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitCodeTable } from '../../src/error-codes.js';
import { EmulatorHarness } from './emulator.js';
import { runCli } from './pipeline.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADDRESS = 'http://127.0.0.1:8787';
const FOLDER = '/tmp/sluice-readme';

/** README.md and every page of docs/, as absolute paths. */
export function docPages(): string[] {
  const docs = join(ROOT, 'docs');
  const pages = readdirSync(docs)
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join(docs, name));
  return [join(ROOT, 'README.md'), ...pages];
}

/** A page's path as the repository names it: `README.md`, `docs/speed.md`. */
export function pageName(page: string): string {
  return relative(ROOT, page);
}

export interface ExampleResult {
  /** The page, e.g. `docs/scheduling.md`. */
  page: string;
  /** The page as it should be, every example output as sluice prints it now. */
  text: string;
  /** Commands whose output differs from the page's (after normalising). */
  stale: { command: string; expected: string; actual: string }[];
}

/** Splits a shell command line the way sh would for the simple quoting the docs use. */
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

const EXAMPLE = /<!-- example -->\n```console\n([\s\S]*?)```/g;

/** Whether a page has example sessions to run. */
function hasExamples(text: string): boolean {
  return new RegExp(EXAMPLE.source).test(text);
}

/** Runs one page's example sessions against a fresh emulator, in a new temporary folder. */
async function runPageExamples(page: string): Promise<ExampleResult> {
  const original = readFileSync(page, 'utf8');
  const name = pageName(page);
  const harness = await EmulatorHarness.start({ queueMs: 0, rate: 1_000_000 });
  const folder = mkdtempSync(join(tmpdir(), 'sluice-readme-'));
  const stale: ExampleResult['stale'] = [];
  const local = (text: string) => text.replaceAll(ADDRESS, harness.url).replaceAll(FOLDER, folder);
  const shown = (text: string) =>
    text.replaceAll(harness.url, ADDRESS).replaceAll(folder, FOLDER).replaceAll(ROOT, '');
  try {
    const blocks = new RegExp(EXAMPLE.source, 'g');
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
        // The emulator's time moves with the run's waits: polling takes no real time.
        const result =
          words[0] === 'npx' && words[1] === 'sluice'
            ? await runCli(words.slice(2), env, undefined, harness.clock())
            : shell(local(line.slice(2)), env);
        const actual = shown(`${result.stdout}${result.stderr}`).replace(/\n+$/, '');
        const want = expected.join('\n').replace(/\n+$/, '');
        if (normalise(want) !== normalise(actual)) {
          stale.push({ command: line, expected: want, actual });
          if (actual !== '') out.push(actual);
        } else if (want !== '') {
          // The same but for ids and times: the page keeps what it shows.
          out.push(want);
        }
      }
      text += `${original.slice(last, match.index)}<!-- example -->\n\`\`\`console\n${out.join('\n')}\n\`\`\``;
      last = match.index + match[0].length;
    }
    text += original.slice(last);
    return { page: name, text, stale };
  } finally {
    await harness.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

/** A line of an example that is not sluice's: what the reader types in their shell. */
function shell(line: string, env: NodeJS.ProcessEnv): { stdout: string; stderr: string } {
  const result = spawnSync('/bin/sh', ['-c', line], { cwd: ROOT, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`example line failed: ${line}\n${result.stderr}`);
  return result;
}

/** Runs the example sessions of README.md and of every page of docs/ that has some. */
export async function runDocExamples(): Promise<ExampleResult[]> {
  const results: ExampleResult[] = [];
  for (const page of docPages()) {
    if (hasExamples(readFileSync(page, 'utf8'))) results.push(await runPageExamples(page));
  }
  return results;
}

/**
 * The tables `src/error-codes.ts` writes, each between its markers: the exit codes
 * (`<!-- exit-codes -->`) and every error code with its exit code (`<!-- error-codes -->`).
 */
function codeTables(): Record<'exit-codes' | 'error-codes', string> {
  const [exits, errors] = exitCodeTable().split('\n\n');
  return { 'exit-codes': exits!, 'error-codes': errors! };
}

const marked = (name: string) => new RegExp(`<!-- ${name} -->\\n[\\s\\S]*?<!-- /${name} -->`, 'g');

/** The marked code tables a page shows, by marker, in order. */
export function shownCodeTables(text: string): { marker: string; table: string }[] {
  const found: { marker: string; table: string }[] = [];
  for (const name of Object.keys(codeTables())) {
    for (const [block] of text.matchAll(marked(name))) found.push({ marker: name, table: block });
  }
  return found;
}

/** A page with its marked code tables as `src/error-codes.ts` writes them. */
export function withCodeTables(text: string): string {
  let out = text;
  for (const [name, table] of Object.entries(codeTables())) {
    out = out.replace(marked(name), `<!-- ${name} -->\n${table}\n<!-- /${name} -->`);
  }
  return out;
}

// `npm run readme`: writes the pages with the outputs sluice prints now, and the code tables.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const results = new Map((await runDocExamples()).map((r) => [r.page, r]));
  for (const page of docPages()) {
    const original = readFileSync(page, 'utf8');
    const result = results.get(pageName(page));
    const text = withCodeTables(result?.text ?? original);
    if (text !== original) writeFileSync(page, text);
    if (result || text !== original) {
      console.log(
        `${pageName(page)}: ${result?.stale.length ?? 0} example output(s) updated${text !== original ? '' : ', unchanged'}`,
      );
    }
  }
}
