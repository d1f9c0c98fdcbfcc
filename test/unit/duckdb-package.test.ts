import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DUCKDB_INSTALL, DUCKDB_NODE_API_VERSION } from '../../src/load/duckdb/package.js';
import { docPages } from '../helpers/readme.js';

/**
 * The DuckDB package is named by the one version sluice is tested with: the command sluice and
 * its docs print installs exactly that version (every version the package publishes is a
 * prerelease, which `@1.5` never matched: npm said ETARGET), the version installed here for the
 * tests is that one, and the peer range takes it, so npm resolves it without an ERESOLVE
 * warning. scripts/check-package.mjs runs the printed command in a scratch project.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const json = (path: string) => JSON.parse(readFileSync(join(ROOT, path), 'utf8'));

describe('the DuckDB package, named right', () => {
  test('the install command names the tested version, which is the one installed here', () => {
    assert.equal(DUCKDB_INSTALL, `npm install @duckdb/node-api@${DUCKDB_NODE_API_VERSION}`);
    assert.equal(
      json('node_modules/@duckdb/node-api/package.json').version,
      DUCKDB_NODE_API_VERSION,
    );
    const lock = json('package-lock.json');
    assert.equal(lock.packages['node_modules/@duckdb/node-api'].version, DUCKDB_NODE_API_VERSION);
  });

  test('the peer range and the development range start at the tested version', () => {
    const pkg = json('package.json');
    const range = `^${DUCKDB_NODE_API_VERSION}`;
    assert.equal(pkg.peerDependencies['@duckdb/node-api'], range);
    assert.equal(pkg.devDependencies['@duckdb/node-api'], range);
    assert.equal(
      json('package-lock.json').packages[''].peerDependencies['@duckdb/node-api'],
      range,
    );
  });

  test('every page that says how to install it says the same command', () => {
    const said: string[] = [];
    for (const page of docPages()) {
      // A command may run over a line break in the text: read it as one line.
      const text = readFileSync(page, 'utf8').replace(/\s+/g, ' ');
      for (const [command] of text.matchAll(/npm install @duckdb\/node-api\S*/g))
        said.push(command);
    }
    assert.ok(said.length >= 3, `the README and docs/design.md say it: ${said.join(', ')}`);
    for (const command of said) assert.equal(command.replace(/[`),.;:]+$/, ''), DUCKDB_INSTALL);
  });

  test('sluice says the same command when the package is missing (no other spelling in src/)', () => {
    const source = readFileSync(join(ROOT, 'src/load/duckdb/connection.ts'), 'utf8');
    assert.match(source, /which is not installed here: \$\{DUCKDB_INSTALL\}/);
    assert.doesNotMatch(source, /npm install @duckdb/);
  });
});
