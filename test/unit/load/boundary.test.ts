/**
 * The destination boundary (docs/design.md, "Adding a destination"): the code of `src/` names a
 * destination only in its own folder (`src/load/NAME/`) and the registry, and the test helpers
 * never. Names in text (messages, help, comments) are the user's and the docs' business and are
 * left alone: only the code's own words are read, with TypeScript's scanner.
 */
import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { PipelineSpecError } from '../../../src/errors.js';
import { destinations, openDestination } from '../../../src/load/index.js';
import { parsePipeline } from '../../../src/pipeline/spec/spec.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const KINDS = destinations().map((d) => d.name);

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** The identifiers of a file's code, or its string literals (texts of templates aside). */
function codeWords(file: string, kind: 'identifiers' | 'strings'): string[] {
  const source = ts.createSourceFile(
    file,
    readFileSync(join(ROOT, file), 'utf8'),
    ts.ScriptTarget.Latest,
  );
  const words: string[] = [];
  const visit = (node: ts.Node): void => {
    if (kind === 'identifiers' && ts.isIdentifier(node)) words.push(node.text);
    if (kind === 'strings' && ts.isStringLiteral(node)) words.push(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return words;
}

/** The identifiers that name a kind (`sqliteTarget`), or the strings that are one (`'duckdb'`). */
function naming(words: string[], whole: boolean): string[] {
  return words.filter((w) =>
    KINDS.some((k) => (whole ? w.toLowerCase() === k : w.toLowerCase().includes(k))),
  );
}

describe('the destination boundary', () => {
  test('src/ names a destination in code only in its folder and the registry', () => {
    const own = new RegExp(`^src/load/(${KINDS.join('|')})/|^src/load/registry\\.ts$`);
    const found = filesUnder('src')
      .filter((f) => !own.test(f))
      .flatMap((f) => naming(codeWords(f, 'identifiers'), false).map((w) => `${f}: ${w}`));
    assert.deepEqual(found, []);
  });

  test('the test helpers never branch on which destination a target is', () => {
    const found = filesUnder('test/helpers').flatMap((f) =>
      naming(codeWords(f, 'strings'), true).map((w) => `${f}: '${w}'`),
    );
    assert.deepEqual(found, []);
  });

  test("a destination's variables of the environment are read in its folder only", () => {
    const found = destinations().flatMap((d) =>
      Object.keys(d.environment ?? {}).flatMap((variable) =>
        filesUnder('src')
          .filter((f) => !f.startsWith(`src/load/${d.name}/`))
          .filter((f) => readFileSync(join(ROOT, f), 'utf8').includes(variable))
          .map((f) => `${f}: ${variable}`),
      ),
    );
    assert.deepEqual(found, []);
  });

  test('every destination makes its own test targets', () => {
    assert.deepEqual(
      destinations()
        .filter((d) => d.testTargets === undefined)
        .map((d) => d.name),
      [],
    );
  });
});

describe("a destination's own settings", () => {
  const file = (destination: string) => `version: 1
name: t
source: { api: v4, url: 'http://127.0.0.1:1/v4', token: t }
destination: ${destination}
jobs:
  homes: { type: properties, query: 'city:Austin' }
`;
  const problems = (destination: string) => {
    try {
      parsePipeline(file(destination), 'p.yaml', {});
    } catch (error) {
      if (error instanceof PipelineSpecError) return error.message;
      throw error;
    }
    return '';
  };

  test('are checked in the pipeline file by the kind that declares them', () => {
    const spec = parsePipeline(file("{ url: 'postgres://u@h/db', schema: sales }"), 'p.yaml', {});
    assert.deepEqual(spec.destination, { url: 'postgres://u@h/db', settings: { schema: 'sales' } });
    assert.match(
      problems("{ url: 'postgres://u@h/db', schema: 'no good' }"),
      /destination\.schema: expected a name of letters/,
    );
    assert.match(problems("{ url: 'postgres://u@h/db', shema: x }"), /shema/);
  });

  test('are refused when no kind takes them, by openDestination too', async () => {
    await assert.rejects(
      openDestination('sqlite::memory:', { settings: { shema: 'x' } }),
      /destination shema: no destination takes it \(settings: schema\)/,
    );
  });
});
