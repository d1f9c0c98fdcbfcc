import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { PipelineSpecError, SluiceError } from '../../../src/errors.js';
import type { TableOwnerRow } from '../../../src/load/destination.js';
import { settleClaims } from '../../../src/pipeline/load/table-claims.js';
import { loadPipeline, parsePipeline } from '../../../src/pipeline/spec/spec.js';
import { checkSharedTables } from '../../../src/pipeline/spec/table-names.js';

/**
 * The table-name rule: a job's table landed on the shared people table, or inside another job's
 * child tables, and `validate` said valid; `run` swapped paid people away, or failed after
 * buying with a raw SQL error. Every table now has one owner and role.
 */

const HEAD = `version: 1
name: p
source: { api: v4, url: 'http://x.test/v4', email: e, password: p }
destination: sqlite:data/t.sqlite
`;

function problems(text: string) {
  try {
    parsePipeline(text, 'p.yaml', {});
  } catch (error) {
    if (!(error instanceof PipelineSpecError)) throw error;
    return error.problems.map((p) => ({ line: p.line, field: p.path, message: p.message }));
  }
  return [];
}

const homes = (extra = '') =>
  `  homes:\n    type: properties\n    query: 'city:Austin'\n    auto_trace: true\n${extra}`;
const job = (name: string, type: string, extra = '') =>
  `  ${name}:\n    type: ${type}\n    query: 'city:Austin'\n${extra}`;

describe('the table-name rule in a pipeline file', () => {
  test("a people job named people beside an autotrace job: its table is the shared people table, refused at the job's line", () => {
    const [found, ...more] = problems(`${HEAD}jobs:\n${homes()}${job('people', 'people')}`);
    assert.deepEqual(more, []);
    assert.equal(found!.line, 10);
    assert.equal(found!.field, 'jobs.people.table');
    assert.match(
      found!.message,
      /^table 'people' \(the job's name, its table by default\) is also the people table of job 'homes': a job's own rows there would take the place of the people records \(paid people credits\)/,
    );
    // So with a table: of its own, or autotrace's people table elsewhere.
    assert.deepEqual(
      problems(`${HEAD}jobs:\n${homes()}${job('people', 'people', '    table: people_records\n')}`),
      [],
    );
    assert.deepEqual(
      problems(`${HEAD}jobs:\n${homes('    people_table: owners\n')}${job('people', 'people')}`),
      [],
    );
  });

  test('an autotrace job whose own table is its people table', () => {
    const [found] = problems(
      `${HEAD}jobs:\n${job('people', 'properties', '    auto_trace: true\n')}`,
    );
    assert.equal(found!.field, 'jobs.people.auto_trace');
    assert.match(
      found!.message,
      /people table 'people' \(autotrace's by default\) is also the table of job 'people'/,
    );
  });

  test("a table inside another job's names (homes__prices beside homes; a people table among them), either order", () => {
    const [inside] = problems(
      `${HEAD}jobs:\n${job('homes', 'properties')}${job('homes__prices', 'properties')}`,
    );
    assert.equal(inside!.field, 'jobs.homes__prices.table');
    assert.match(
      inside!.message,
      /table 'homes__prices' .*is inside the tables of job 'homes' \('homes__\*': its child, link and staging tables\)/,
    );
    const [before] = problems(
      `${HEAD}jobs:\n${job('prices', 'properties', '    table: homes__prices\n')}${job('homes', 'properties')}`,
    );
    assert.equal(before!.field, 'jobs.prices.table', 'the inner name is the one to change');
    const [people] = problems(`${HEAD}jobs:\n${homes('    people_table: homes__people\n')}`);
    assert.equal(people!.field, 'jobs.homes.people_table');
    assert.match(
      people!.message,
      /people table 'homes__people' is inside the tables of job 'homes'/,
    );
    const [phones] = problems(
      `${HEAD}jobs:\n${homes()}${job('phones', 'people', '    table: people__phone_numbers\n')}`,
    );
    assert.match(phones!.message, /is inside the tables of job 'homes' \('people__\*'/);
  });

  test('names one table apart from case, or from naming: snake_case', () => {
    const [cased] = problems(
      `${HEAD}jobs:\n${job('homes', 'properties')}${job('Homes', 'properties')}`,
    );
    assert.match(
      cased!.message,
      /table 'Homes' .*is also the table of job 'homes' \(one table where names are compared case aside/,
    );
    const [snake] = problems(
      `${HEAD}naming: snake_case\njobs:\n${homes()}${job('peopleTable', 'people', '    table: People\n')}`,
    );
    assert.equal(snake!.field, 'jobs.peopleTable.table');
    assert.match(snake!.message, /is also the people table of job 'homes'/);
  });

  test('sharing that is meant: autotrace and owner lookups fill one people table', () => {
    const shared = `${HEAD}jobs:\n${homes()}${job('houses', 'properties', '    auto_trace: true\n')}  owners:\n    type: people\n    people_keys_from: homes\n  more_owners:\n    type: people\n    people_keys_from: houses\n`;
    assert.deepEqual(problems(shared), []);
    const spec = parsePipeline(shared, 'p.yaml', {});
    assert.deepEqual(
      spec.tables.map((t) => `${t.table} ${t.role} ${t.job} ${t.path.join('.')}:${t.line}`),
      [
        'homes table homes jobs.homes.table:6',
        'people people homes jobs.homes.auto_trace:9',
        'houses table houses jobs.houses.table:10',
        'people people houses jobs.houses.auto_trace:13',
        'people people owners jobs.owners.people_keys_from:16',
        'people people more_owners jobs.more_owners.people_keys_from:19',
      ],
    );
    // An owner lookup's people table is a people table: no job may take it as its own.
    const [taken] = problems(
      `${HEAD}jobs:\n${job('homes', 'properties')}  owners:\n    type: people\n    people_keys_from: homes\n    table: owners\n${job('shops', 'businesses', '    table: owners\n')}`,
    );
    assert.match(taken!.message, /table 'owners' is also the people table of job 'owners'/);
  });
});

describe('the table-name rule across the files of one run', () => {
  function files(destinations: [string, string], jobs: [string, string]) {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-shared-'));
    return Promise.all(
      (['a', 'b'] as const).map((name, i) => {
        const folder = join(dir, name);
        mkdirSync(folder);
        const file = join(folder, `${name}.yaml`);
        writeFileSync(
          file,
          `${HEAD.replace('name: p', `name: ${name}`).replace('sqlite:data/t.sqlite', destinations[i]!)}jobs:\n${jobs[i]}`,
        );
        return loadPipeline(file, {});
      }),
    );
  }

  test("a file's people job on another file's people table, in one destination: refused, naming both files", async () => {
    const specs = await files(
      ['sqlite:/tmp/one.sqlite', 'sqlite:/tmp/one.sqlite'],
      [homes(), job('people', 'people')],
    );
    assert.throws(
      () => checkSharedTables(specs, {}),
      (error: PipelineSpecError) => {
        assert.equal(error.code, 'SLUICE_SPEC');
        assert.equal(error.file, specs[1]!.file);
        assert.equal(error.line, 6);
        assert.match(
          error.message,
          /b\.yaml:6: jobs\.people\.table: table 'people' .*is also the people table of job 'homes' of pipeline 'a' \(.*a\.yaml:9\)/,
        );
        return true;
      },
    );
  });

  test('one database however it is named (a relative path; SLUICE_DESTINATION); two databases share nothing', async () => {
    const jobs: [string, string] = [
      job('homes', 'properties'),
      job('homes', 'properties', '    write: replace\n'),
    ];
    // Relative paths start at each file's folder: data/t.sqlite of a/ and of b/ are two files.
    assert.doesNotThrow(() => checkSharedTables([], {}));
    const apart = await files(['sqlite:data/t.sqlite', 'sqlite:data/t.sqlite'], jobs);
    assert.doesNotThrow(() => checkSharedTables(apart, {}));
    assert.throws(
      () => checkSharedTables(apart, { SLUICE_DESTINATION: 'sqlite:/tmp/x.sqlite' }),
      /is also the table of job 'homes' of pipeline 'a'/,
    );
    const same = await files(['sqlite:../shared.sqlite', 'sqlite:../shared.sqlite'], jobs);
    assert.throws(() => checkSharedTables(same, {}), SluiceError);
    const servers = await files(['postgresql://u@db:5432/w', 'postgres://other@db/w'], jobs);
    assert.throws(() => checkSharedTables(servers, {}), /pipeline 'a'/, 'one server and database');
    const schemas = await files(
      ["{ url: 'postgres://u@db/w', schema: a }", "{ url: 'postgres://u@db/w', schema: b }"],
      jobs,
    );
    assert.doesNotThrow(() => checkSharedTables(schemas, {}), 'two schemas');
    assert.doesNotThrow(() => checkSharedTables([apart[0]!, apart[0]!], {}), 'one file twice');
  });
});

describe('claims of tables in the destination', () => {
  const owner = (table: string, pipeline: string, job: string, role = 'table'): TableOwnerRow => ({
    table_name: table,
    role,
    pipeline,
    job,
    claimed_at: '2026-11-01T00:00:00.000Z',
    run_id: `run-${pipeline}`,
  });
  const want = (table: string, job: string, role: 'table' | 'people' = 'table') => ({
    claim: { table, role, job, path: ['jobs', job, 'table'], line: 7 },
    row: owner(table, 'b', job, role),
  });
  const spec = { file: 'b.yaml', name: 'b' };
  const settle = (owners: TableOwnerRow[], wanted: ReturnType<typeof want>[]) =>
    settleClaims(owners, wanted, spec, 'sqlite:/x.sqlite');

  test('another pipeline has the table, its people table, or the names around or inside: refused, nothing written', () => {
    const a = [owner('homes', 'a', 'homes'), owner('people', 'a', 'homes', 'people')];
    for (const [wanted, said] of [
      [want('Homes', 'houses'), /table 'Homes' is the table of job 'homes' of pipeline 'a'/],
      [
        want('people', 'people'),
        /table 'people' is the people table of job 'homes' of pipeline 'a' in sqlite:\/x\.sqlite \(recorded in _sluice_tables by run run-a at 2026-11-01T00:00:00\.000Z\): a job's own rows/,
      ],
      [
        want('homes__prices', 'prices'),
        /is inside the tables of job 'homes' of pipeline 'a' \('homes__\*'/,
      ],
      [want('home', 'home'), undefined],
      [want('ho', 'ho'), undefined],
    ] as const) {
      if (said === undefined) {
        assert.deepEqual(settle(a, [wanted]).drop, []);
        continue;
      }
      assert.throws(
        () => settle(a, [wanted]),
        (error: SluiceError) => {
          assert.equal(error.code, 'SLUICE_TABLE_OWNED');
          assert.match(error.message, /^b\.yaml:7: jobs\.\w+\.table: /);
          assert.match(error.message, said);
          assert.match(
            error.message,
            /Nothing was bought: set table: of job '\w+' to another name; or, if pipeline 'a' no longer loads it, drop its tables, then its row: DELETE FROM _sluice_tables WHERE table_name = '\w+' AND pipeline = 'a' AND job = 'homes'/,
          );
          return true;
        },
      );
    }
    const around = [owner('homes__prices', 'a', 'prices')];
    assert.throws(
      () => settle(around, [want('homes', 'homes')]),
      /would take in table 'homes__prices' of job 'prices' of pipeline 'a'/,
    );
  });

  test("shared by design: a people table of any pipeline's jobs, a pipeline's own rerun, a job renamed; new tables adopted", () => {
    const owners = [owner('people', 'a', 'homes', 'people'), owner('homes', 'b', 'homes')];
    const again = settle(owners, [want('homes', 'homes'), want('people', 'homes', 'people')]);
    assert.deepEqual(again.drop, []);
    assert.deepEqual(
      again.add.map((r) => `${r.table_name} ${r.pipeline} ${r.job} ${r.role}`),
      ['people b homes people'],
    );
    const renamed = settle(owners, [want('homes', 'houses')]);
    assert.deepEqual(
      renamed.drop.map((r) => `${r.table_name} ${r.job}`),
      ['homes homes'],
    );
    assert.deepEqual(
      renamed.add.map((r) => `${r.table_name} ${r.job}`),
      ['homes houses'],
    );
    // A role never changes hands, even within one pipeline: the people stay people.
    assert.throws(
      () => settle([owner('people', 'b', 'homes', 'people')], [want('people', 'people')]),
      /if job 'homes' no longer loads it/,
    );
    assert.deepEqual(settle([], [want('homes', 'homes')]).add.length, 1, 'adopted');
  });
});
