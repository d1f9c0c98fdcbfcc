import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { PipelineSpecError } from '../../../src/errors.js';
import { searchRequestOf } from '../../../src/pipeline/guard/estimate.js';
import { parsePipeline } from '../../../src/pipeline/spec/spec.js';

/**
 * Pipeline keys as the service names them: `only_traceable` (the autotrace guide's name; the
 * old `require_people_data` still read, with a warning naming its line), and autotrace's view
 * rule (a view used with autotrace has the people keys), checked offline.
 */

const env = { SLUICE_API_URL: 'http://x.test/v4', SLUICE_EMAIL: 'a@b.c', SLUICE_PASSWORD: 'pw' };

function pipeline(job: string, views = '', api = 'v4'): string {
  return `version: 1
name: p
source:
  api: ${api}
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
  token: \${SLUICE_API_TOKEN:-t}
${views}jobs:
  homes:
    type: properties
    query: 'province:TX'
${job}`;
}

function parse(text: string) {
  return parsePipeline(text, 'p.yaml', env, { views: 'offline' });
}

function specError(text: string): PipelineSpecError {
  try {
    parse(text);
  } catch (error) {
    if (error instanceof PipelineSpecError) return error;
    throw error;
  }
  throw new Error('expected a PipelineSpecError');
}

describe('only_traceable', () => {
  test('is the key, and what the search sends', () => {
    const spec = parse(pipeline('    only_traceable: true\n'));
    assert.deepEqual(spec.warnings, []);
    assert.equal(searchRequestOf(spec.jobs[0]!).onlyTraceable, true);
  });

  test('require_people_data is read as it, with a warning that names the file and line', () => {
    const spec = parse(pipeline('    require_people_data: true\n'));
    assert.equal(spec.jobs[0]!.only_traceable, true);
    assert.equal('require_people_data' in spec.jobs[0]!, false);
    assert.deepEqual(spec.warnings, [
      'p.yaml:13: jobs.homes.require_people_data: require_people_data is deprecated: the service calls it only_traceable; rename it',
    ]);
  });

  test('both, saying different things, is a mistake; a download started under the old name re-attaches', () => {
    const both = specError(pipeline('    only_traceable: true\n    require_people_data: false\n'));
    assert.equal(both.line, 14);
    assert.match(both.message, /says false, only_traceable true: keep only_traceable/);
    const renamed = parse(pipeline('    only_traceable: true\n')).jobs[0]!;
    const old = parse(pipeline('    require_people_data: true\n')).jobs[0]!;
    assert.equal(renamed.downloadHash, old.downloadHash);
  });

  test('properties on v4 only', () => {
    assert.match(
      specError(pipeline('    only_traceable: true\n').replace('properties', 'businesses')).message,
      /only_traceable applies to properties only/,
    );
    assert.match(
      specError(pipeline('    only_traceable: true\n', '', 'v3')).message,
      /only_traceable needs the v4 API/,
    );
  });
});

describe("autotrace's view", () => {
  const views = (fields: string) => `views:\n  mine:\n    fields: [${fields}]\n`;

  test("a declared view without the people keys is refused at the job's view line", () => {
    const error = specError(
      pipeline('    auto_trace: true\n    view: mine\n', views('id, address')),
    );
    assert.equal(error.line, 17);
    assert.equal(error.path, 'jobs.homes.view');
    assert.match(error.message, /view 'mine' has no people keys \(people\.people_keys:\*\)/);
  });

  test('people, or its keys, in the view; or no view at all', () => {
    for (const fields of [
      'id, people',
      'id, "people:*"',
      'id, people.people_keys',
      'id, "people.people_keys:*"',
    ]) {
      assert.equal(
        parse(pipeline('    auto_trace: true\n    view: mine\n', views(fields))).jobs.length,
        1,
        fields,
      );
    }
    assert.equal(parse(pipeline('    auto_trace: true\n')).jobs.length, 1);
    // Without autotrace, a view needs no people keys.
    assert.equal(parse(pipeline('    view: mine\n', views('id, address'))).jobs.length, 1);
  });

  test('a pre-made view has none', () => {
    const error = specError(pipeline('    auto_trace: true\n    view: property_preview\n'));
    assert.match(
      error.message,
      /view 'property_preview' has no people keys.*declare one under views:/,
    );
  });
});
