import { strict as assert } from 'node:assert';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { docPages, pageName } from '../helpers/readme.js';

/**
 * The README's and docs/' relative links work, in the repository and in the npm package: each
 * points at a file that exists and that the package ships (package.json `files`), and each
 * `#anchor` at a heading of the page it names, as GitHub makes heading anchors.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHIPPED: string[] = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).files;

/** The page's text outside fenced code blocks, where links and headings are. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

/** GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as dashes. */
function anchors(text: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = heading!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    found.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return found;
}

/** The targets of a page's inline links `[text](target)`, outside code. */
function links(text: string): string[] {
  const body = prose(text).replace(/`[^`\n]*`/g, '');
  return [...body.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

const shipped = (file: string) => {
  const path = relative(ROOT, file);
  return SHIPPED.some((entry) => path === entry || path.startsWith(`${entry}/`));
};

describe('links of the README and docs/', () => {
  test('the README stays a page for users: under 450 lines, the rest in docs/', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length - 1;
    assert.ok(lines < 450, `README.md has ${lines} lines: move the detail to docs/`);
  });

  test('the pages are README.md and docs/*.md, and the package ships docs/', () => {
    const names = docPages().map(pageName);
    assert.equal(names[0], 'README.md');
    assert.ok(names.includes('docs/speed.md'), names.join(', '));
    assert.ok(SHIPPED.includes('docs'), 'package.json files lists docs');
  });

  for (const page of docPages()) {
    const name = pageName(page);
    const text = readFileSync(page, 'utf8');

    test(`${name}: every relative link points at a shipped file, and its anchor at a heading`, () => {
      const broken: string[] = [];
      for (const target of links(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? page : resolve(dirname(page), decodeURIComponent(path));
        if (!existsSync(file)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (!shipped(file)) broken.push(`${target}: not in the npm package (package.json files)`);
        if (anchor !== undefined && statSync(file).isFile() && file.endsWith('.md')) {
          if (!anchors(readFileSync(file, 'utf8')).has(anchor)) {
            broken.push(`${target}: no heading #${anchor} in ${relative(ROOT, file)}`);
          }
        }
      }
      assert.deepEqual(broken, [], `${name} has broken links`);
    });

    test(`${name} never points outside the repository (../shared)`, () => {
      assert.doesNotMatch(text, /\.\.\/shared/);
      for (const target of links(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const file = resolve(dirname(page), target.split('#')[0]!);
        assert.ok(!relative(ROOT, file).startsWith('..'), `${target} leaves the repository`);
      }
    });
  }

  test('anchors are made as GitHub makes them', () => {
    const made = anchors(
      '# Speed\n## What `run` does, per job\n```\n# not a heading\n```\n## Speed\n### Airflow, Dagster, Prefect\n## The credit guard: accounts and budgets',
    );
    assert.deepEqual(
      [...made],
      [
        'speed',
        'what-run-does-per-job',
        'speed-1',
        'airflow-dagster-prefect',
        'the-credit-guard-accounts-and-budgets',
      ],
    );
  });
});
