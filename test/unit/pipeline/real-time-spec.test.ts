import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { PipelineSpecError } from '../../../src/errors.js';
import {
  destinationPassword,
  type OneJob,
  oneJobPipeline,
  oneJobRunKey,
} from '../../../src/pipeline/spec/one-job.js';
import { selectJobs } from '../../../src/pipeline/spec/select.js';
import { parsePipeline } from '../../../src/pipeline/spec/spec.js';

const env = {
  SLUICE_API_URL: 'http://127.0.0.1:8787/v4',
  SLUICE_EMAIL: 'a@b.c',
  SLUICE_PASSWORD: 'pw',
  SLUICE_API_TOKEN: 't',
};

function head(api: 'v4' | 'v3' = 'v4'): string {
  const credentials =
    api === 'v4'
      ? '  email: ${SLUICE_EMAIL}\n  password: ${SLUICE_PASSWORD}\n'
      : '  token: ${SLUICE_API_TOKEN}\n';
  return `version: 1
name: test
source:
  api: ${api}
  url: http://127.0.0.1:8787/${api}
${credentials}destination: sqlite:data/t.sqlite
jobs:
`;
}

function specError(text: string): PipelineSpecError {
  try {
    parsePipeline(text, 'p.yaml', env);
  } catch (error) {
    if (!(error instanceof PipelineSpecError)) throw error;
    return error;
  }
  throw new Error('expected a PipelineSpecError');
}

describe('pipeline files: refresh steps and scrapes', () => {
  test('refresh: true makes a targeted-update step before its job, with the job query and records', () => {
    const spec = parsePipeline(
      `${head()}  homes:
    type: properties
    query: 'city:Austin'
    records: 300
    refresh: true
`,
      'p.yaml',
      env,
    );
    assert.deepEqual(
      spec.jobs.map((j) => [j.name, j.kind, j.query, j.records, j.refreshes, j.refreshedBy]),
      [
        ['homes.refresh', 'targeted_update', 'city:Austin', 300, 'homes', undefined],
        ['homes', 'download', 'city:Austin', 300, undefined, 'homes.refresh'],
      ],
    );
  });

  test('a refresh says its own query, records and max_credits; the download hash of its job is unchanged', () => {
    const job = `  homes:
    type: properties
    query: 'city:Austin'
    records: 300
`;
    const plain = parsePipeline(`${head()}${job}`, 'p.yaml', env);
    const spec = parsePipeline(
      `${head()}${job}    refresh: { query: 'city:Austin AND dateUpdated:[* TO 2025-01-01]', records: all, max_credits: 50 }
`,
      'p.yaml',
      env,
    );
    const [step, homes] = spec.jobs;
    assert.equal(step!.query, 'city:Austin AND dateUpdated:[* TO 2025-01-01]');
    assert.equal(step!.records, undefined, 'all: every record the query matches');
    assert.equal(step!.max_credits, 50);
    assert.equal(homes!.downloadHash, plain.jobs[0]!.downloadHash, 'the download buys the same');
    assert.notEqual(step!.downloadHash, homes!.downloadHash);
  });

  test('--job NAME brings the job refresh step along; the step alone can be named', () => {
    const spec = parsePipeline(
      `${head()}  homes:
    type: properties
    query: 'city:Austin'
    refresh: true
  shops:
    type: businesses
    query: 'city:Austin'
`,
      'p.yaml',
      env,
    );
    assert.deepEqual(
      selectJobs(spec, ['homes']).map((j) => j.name),
      ['homes.refresh', 'homes'],
    );
    assert.deepEqual(
      selectJobs(spec, ['homes.refresh']).map((j) => j.name),
      ['homes.refresh'],
    );
  });

  test('scrape: true makes a scrape job; its hash differs from the download of the same query', () => {
    const job = (scrape: string) => `${head()}  listings:
    type: businesses
    query: 'city:Austin'
    records: 40
${scrape}`;
    const scrape = parsePipeline(job('    scrape: true\n'), 'p.yaml', env).jobs[0]!;
    const download = parsePipeline(job(''), 'p.yaml', env).jobs[0]!;
    assert.equal(scrape.kind, 'scrape');
    assert.equal(download.kind, 'download');
    assert.notEqual(scrape.downloadHash, download.downloadHash);
  });

  test('what a scrape cannot take is refused with its line: all records, csv, a view, incremental, refresh', () => {
    const cases: [string, string, RegExp][] = [
      ['records: all\n', 'jobs.listings.records', /a scrape needs a number of records/],
      ['records: 5\n    format: csv\n', 'jobs.listings.format', /JSON records/],
      ['records: 5\n    view: businesses_all\n', 'jobs.listings.view', /takes no view/],
      [
        'records: 5\n    write: merge\n    incremental: { cursor: dateUpdated }\n',
        'jobs.listings.incremental',
        /no cursor/,
      ],
      ['records: 5\n    refresh: true\n', 'jobs.listings.refresh', /fresh already/],
    ];
    for (const [extra, path, message] of cases) {
      const error = specError(`${head()}  listings:
    type: businesses
    query: 'city:Austin'
    scrape: true
    ${extra}`);
      assert.equal(error.path, path, extra);
      assert.match(error.message, message);
      assert.ok(error.line !== undefined, 'the line is named');
    }
  });

  test('v3 has neither scrapes nor targeted updates; an owner lookup takes no refresh', () => {
    const v3 = specError(`${head('v3')}  shops:
    type: businesses
    query: 'city:Austin'
    records: 5
    scrape: true
`);
    assert.equal(v3.path, 'jobs.shops.scrape');
    assert.match(v3.message, /needs the v4 API/);
    const v3refresh = specError(`${head('v3')}  shops:
    type: businesses
    query: 'city:Austin'
    refresh: true
`);
    assert.equal(v3refresh.path, 'jobs.shops.refresh');
    const lookup = specError(`${head()}  homes:
    type: properties
    query: 'city:Austin'
  owners:
    type: people
    people_keys_from: homes
    refresh: true
`);
    assert.equal(lookup.path, 'jobs.owners.refresh');
    assert.match(lookup.message, /refresh the properties job instead/);
  });

  test('a refresh query is checked as a job query is; an unknown key under refresh is named', () => {
    const syntax = specError(`${head()}  homes:
    type: properties
    query: 'city:Austin'
    refresh: { query: 'city:(Austin' }
`);
    assert.equal(syntax.path, 'jobs.homes.refresh.query');
    const unknown = parsePipeline(
      `${head()}  homes:
    type: properties
    query: 'city:Austin'
    refresh: { query: 'cty:Austin' }
`,
      'p.yaml',
      env,
    );
    assert.match(unknown.warnings.join('\n'), /jobs\.homes\.refresh\.query: .*'city'/);
    const strict = specError(`${head().replace('jobs:\n', 'strict_fields: true\njobs:\n')}  homes:
    type: properties
    query: 'city:Austin'
    refresh: { query: 'cty:Austin' }
`);
    assert.equal(strict.path, 'jobs.homes.refresh.query');
    assert.match(strict.message, /'city'/);
    const key = specError(`${head()}  homes:
    type: properties
    query: 'city:Austin'
    refresh: { recods: 5 }
`);
    assert.equal(key.path, 'jobs.homes.refresh.recods');
    assert.match(key.message, /did you mean 'records'/);
  });
});

describe('sluice get: the pipeline of one job', () => {
  const job: OneJob = {
    type: 'properties',
    query: 'city:Austin',
    records: 500,
    into: 'duckdb:data/austin.duckdb',
    format: 'json',
    write: 'merge',
    source: { api: 'v4', url: 'http://127.0.0.1:8787/v4', login: true, email: 'a@b.c' },
  };

  test('the same command is the same data type, query, records, view, format and table', () => {
    const key = oneJobRunKey(job);
    assert.equal(oneJobRunKey({ ...job }), key);
    assert.equal(oneJobRunKey({ ...job, write: 'replace' }), key, 'how rows land buys nothing');
    assert.equal(oneJobRunKey({ ...job, into: 'duckdb:other.duckdb' }), key);
    for (const other of [
      { query: 'city:Dallas' },
      { records: 501 },
      { records: 'all' as const },
      { view: 'properties_basic' },
      { format: 'csv' as const },
      { table: 'homes' },
      { type: 'businesses' as const },
    ]) {
      assert.notEqual(oneJobRunKey({ ...job, ...other }), key, JSON.stringify(other));
    }
  });

  test('the saved file parses to the job, its destination seen from its own folder, no secret in it', () => {
    const text = oneJobPipeline(
      { ...job, into: 'postgresql://loader:s3cret@db:5432/w', schema: 'x' },
      'p.yaml',
      '/work',
    );
    assert.doesNotMatch(text, /s3cret|pw/);
    assert.match(text, /\$\{PGPASSWORD\}/);
    assert.equal(destinationPassword('postgresql://loader:s3cret@db:5432/w'), 's3cret');
    const saved = oneJobPipeline(job, 'pipelines/austin.yaml', '/work');
    assert.match(saved, /^# sluice get properties city:Austin --records 500 --into duckdb:data/);
    const spec = parsePipeline(saved, '/work/pipelines/austin.yaml', env);
    assert.equal(spec.name, 'get.properties');
    assert.equal(spec.destination.url, 'duckdb:../data/austin.duckdb');
    assert.equal(spec.source.password, 'pw', 'the password is the environment one');
    const [only] = spec.jobs;
    assert.deepEqual(
      [only!.name, only!.type, only!.query, only!.records, only!.table, only!.write],
      ['properties', 'properties', 'city:Austin', 500, 'properties', 'merge'],
    );
  });
});
