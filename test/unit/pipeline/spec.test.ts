import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PREMADE_VIEWS } from '../../../src/catalog.js';
import { PipelineSpecError } from '../../../src/errors.js';
import { rangeOf, rangeQuery } from '../../../src/pipeline/load/incremental.js';
import {
  type LoadOptions,
  loadPipeline,
  parseDuration,
  parsePipeline,
  pipelineJsonSchema,
} from '../../../src/pipeline/spec/spec.js';

const env = {
  SLUICE_API_URL: 'http://127.0.0.1:8787/v4',
  SLUICE_EMAIL: 'a@b.c',
  SLUICE_PASSWORD: 'pw',
  SLUICE_API_TOKEN: 't',
};

const BASE = `version: 1
name: test
source:
  api: v4
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
destination: sqlite:data/t.sqlite
views:
  basic:
    fields: [id, address, city]
jobs:
  homes:
    type: properties
    query: 'city:Austin'
    view: basic
`;

function specError(
  text: string,
  environment: NodeJS.ProcessEnv = env,
  options: LoadOptions = {},
): PipelineSpecError {
  try {
    parsePipeline(text, 'p.yaml', environment, options);
  } catch (error) {
    if (!(error instanceof PipelineSpecError)) throw error;
    return error;
  }
  throw new Error('expected a PipelineSpecError');
}

describe('pipeline files: an open catalogue', () => {
  const DOCUMENTED_VIEW =
    '[id, buildingName, taxID, mlsNumber, absenteeOwner, architecturalStyles, brandTenant, deposits, availableDates, brokers.licenseType, transactions.ownerType]';
  const AUTOTRACE_QUERY =
    'transactions.buyerFirstName:* AND transactions.buyerLastName:* AND transactions.ownerType:individual';

  test("the vendor's documented fields and autotrace query are valid, with no warning", () => {
    const text = BASE.replace('[id, address, city]', DOCUMENTED_VIEW).replace(
      'city:Austin',
      AUTOTRACE_QUERY,
    );
    for (const strictFields of [false, true]) {
      const spec = parsePipeline(text, 'p.yaml', env, { strictFields, views: 'offline' });
      assert.deepEqual(spec.warnings, []);
      assert.equal(spec.jobs[0]!.query, AUTOTRACE_QUERY);
    }
  });

  test('fields the catalogue lacks are warnings naming the nearest field, and pass unchanged', () => {
    const text = `${BASE.replace('[id, address, city]', '[id, adress, solarPanels]').replace(
      'city:Austin',
      'cty:Austin AND solarPanels:true',
    )}    columns: { roofArea: double }\n`;
    const spec = parsePipeline(text, 'p.yaml', env);
    assert.equal(spec.strictFields, false);
    assert.equal(spec.jobs[0]!.query, 'cty:Austin AND solarPanels:true');
    assert.deepEqual(spec.views.basic!.fields, ['id', 'adress', 'solarPanels']);
    const keyed = parsePipeline(
      BASE.replace('    view: basic\n', '    key: parcelKey\n'),
      'p.yaml',
      env,
    );
    assert.deepEqual(keyed.jobs[0]!.key, ['parcelKey']);
    const warnings = [...spec.warnings, ...keyed.warnings];
    const patterns = [
      /^jobs\.homes\.query: fields 'cty' \(did you mean 'city'\?\), 'solarPanels' are not in sluice's catalogue of properties: the query is sent as written and the service decides; strict_fields: true refuses such fields$/,
      /^views\.basic\.fields: fields 'adress' \(did you mean 'address'\?\), 'solarPanels' are not in sluice's catalogue of properties: the view is sent as written/,
      /^jobs\.homes\.key: field 'parcelKey' is not in sluice's catalogue of properties.*: rows merge on it as the data has it/,
      /^jobs\.homes\.columns\.roofArea: not a field of properties; the type applies if the data has it/,
    ];
    for (const pattern of patterns) {
      assert.equal(warnings.filter((w) => pattern.test(w)).length, 1, String(pattern));
    }
    assert.equal(warnings.length, 4);
  });

  test('a merge key outside a view is still refused: it would reject every row', () => {
    const error = specError(`${BASE}    key: solarPanels\n`);
    assert.match(error.message, /merge key 'solarPanels' is not a field of view 'basic'/);
  });

  test('strict_fields: true, or --strict-fields, refuses each of them (exit 2)', () => {
    const strictly = (text: string, options: LoadOptions = {}) =>
      specError(text, env, options).message;
    const inFile = (text: string) => text.replace('views:', 'strict_fields: true\nviews:');
    const query = BASE.replace('city:Austin', 'solarPanels:true');
    assert.match(
      strictly(inFile(query)),
      /field 'solarPanels' does not exist in the property schema/,
    );
    assert.match(strictly(query, { strictFields: true }), /'solarPanels' does not exist/);
    const view = BASE.replace('[id, address, city]', '[id, solarPanels]');
    assert.match(strictly(inFile(view)), /'solarPanels' of view 'basic' is not a field/);
    const key = BASE.replace('    view: basic\n', '    key: parcelKey\n');
    assert.match(strictly(inFile(key)), /merge key 'parcelKey' is not a field of properties/);
    const column = `${BASE}    columns: { roofArea: double }\n`;
    assert.match(strictly(inFile(column)), /columns\.roofArea: not a field of properties/);
    assert.equal(parsePipeline(inFile(BASE), 'p.yaml', env).strictFields, true);
  });
});

describe('pipeline files', () => {
  test('a valid file resolves with defaults filled in', () => {
    const spec = parsePipeline(BASE, 'p.yaml', env);
    assert.equal(spec.name, 'test');
    assert.equal(spec.source.url, 'http://127.0.0.1:8787/v4');
    const [job] = spec.jobs;
    assert.equal(job!.table, 'homes');
    assert.deepEqual(job!.key, ['id']);
    assert.equal(job!.records, undefined);
    assert.equal(job!.write, 'merge');
    assert.equal(job!.poll.interval, 5000);
    assert.equal(job!.poll.on_timeout, 'leave');
    assert.match(job!.downloadHash, /^[0-9a-f]{16}$/);
  });

  test('the download hash changes with what is downloaded, not with how it is loaded', () => {
    const hash = (text: string) => parsePipeline(text, 'p.yaml', env).jobs[0]!.downloadHash;
    const base = hash(BASE);
    assert.equal(hash(`${BASE}    write: append\n    table: other\n`), base);
    assert.notEqual(hash(BASE.replace('city:Austin', 'city:Dallas')), base);
    assert.notEqual(hash(BASE.replace('[id, address, city]', '[id, address]')), base);
  });

  test('an unknown key names its line and suggests the right one', () => {
    const error = specError(`${BASE}    recods: 10\n`);
    assert.equal(error.line, 17);
    assert.equal(error.path, 'jobs.homes.recods');
    assert.match(
      error.message,
      /^p\.yaml:17: jobs\.homes\.recods: unknown key 'recods'; did you mean 'records'\?$/,
    );
  });

  test('a wrong enum value names the choices and a close one', () => {
    const error = specError(`${BASE}    write: marge\n`);
    assert.equal(error.line, 17);
    assert.match(
      error.message,
      /expected one of 'append', 'replace', 'merge', got 'marge'; did you mean 'merge'\?/,
    );
  });

  test('every mistake of a file is reported at once, in the order of its lines', () => {
    const text = BASE.replace('  api: v4\n', '  api: v4\n  retires: 3\n')
      .replace("    query: 'city:Austin'\n", "    query: 'city:Austin'\n    records: lots\n")
      .concat(
        '    write: marge\n  other:\n    type: properties\n    query: city:Dallas\n    view: basik\n',
      );
    const error = specError(text);
    assert.deepEqual(
      error.problems.map((p) => [p.line, p.path]),
      [
        [5, 'source.retires'],
        [17, 'jobs.homes.records'],
        [19, 'jobs.homes.write'],
      ],
    );
    assert.match(error.problems[1]!.message, /expected a whole number of records.*or 'all'/);
    // One line each in the message, first at the error's own line.
    assert.equal(error.message.split('\n').length, 3);
    assert.equal(error.line, 5);
    // The shape is right: the checks of each job run, and report each job's first mistake.
    const later = specError(
      BASE.concat(
        '    key: nosuch\n  other:\n    type: properties\n    query: city:Dallas\n    view: basik\n',
      ),
      env,
      { views: 'offline' },
    );
    assert.deepEqual(
      later.problems.map((p) => p.path),
      ['jobs.homes.key', 'jobs.other.view'],
    );
    assert.match(later.problems[1]!.message, /did you mean 'basic'\?/);
  });

  test('a missing field is reported at its parent', () => {
    const error = specError(BASE.replace('    type: properties\n', ''));
    assert.equal(error.path, 'jobs.homes.type');
    assert.equal(error.line, 13);
    assert.match(error.message, /is required/);
  });

  test('an unset environment variable names the variable and its line', () => {
    const error = specError(BASE, { ...env, SLUICE_PASSWORD: undefined });
    assert.equal(error.line, 7);
    assert.match(
      error.message,
      /source\.password: environment variable SLUICE_PASSWORD is not set/,
    );
    assert.ok(!error.message.includes('pw'));
  });

  test('a password or token written in the file is a warning that never shows it', () => {
    const literal = BASE.replace('${SLUICE_PASSWORD}', 'hunter2').replace(
      'sqlite:data/t.sqlite',
      'postgres://me:s3cret@db.example/test',
    );
    const { warnings } = parsePipeline(literal, 'p.yaml', env);
    assert.equal(warnings.length, 2);
    assert.match(
      warnings[0]!,
      /^p\.yaml:7: source\.password: the password is written in the file.*\$\{SLUICE_PASSWORD\}/,
    );
    assert.match(
      warnings[1]!,
      /^p\.yaml:8: destination: the database password is written in the file/,
    );
    assert.ok(!warnings.join('\n').includes('hunter2') && !warnings.join('\n').includes('s3cret'));
    // From the environment: nothing to say.
    assert.deepEqual(parsePipeline(BASE, 'p.yaml', env).warnings, []);
  });

  test('a v4 source takes the API token instead of email and password', () => {
    const tokenOnly = BASE.replace(
      '  email: ${SLUICE_EMAIL}\n  password: ${SLUICE_PASSWORD}\n',
      '  token: ${SLUICE_API_TOKEN}\n',
    );
    assert.notEqual(tokenOnly, BASE);
    const spec = parsePipeline(tokenOnly, 'p.yaml', env);
    assert.equal(spec.source.token, 't');
    assert.equal(spec.source.email, undefined);
    const neither = specError(
      BASE.replace('  email: ${SLUICE_EMAIL}\n  password: ${SLUICE_PASSWORD}\n', ''),
    );
    assert.equal(neither.path, 'source');
    assert.match(neither.message, /needs email and password .*, or token/);
  });

  test('${VAR:-default} falls back', () => {
    const spec = parsePipeline(
      BASE.replace('${SLUICE_API_URL}', '${NOPE:-http://x.test/v4}'),
      'p.yaml',
      env,
    );
    assert.equal(spec.source.url, 'http://x.test/v4');
  });

  test('invalid YAML names its line', () => {
    const error = specError(`${BASE}    query: [unclosed\n`);
    assert.match(error.message, /invalid YAML/);
    assert.ok(error.line !== undefined && error.line >= 17);
  });

  test('a query error shows a caret under the problem', () => {
    const error = specError(BASE.replace('city:Austin', 'yearBuilt:old'));
    assert.equal(error.line, 15);
    assert.match(error.message, /field 'yearBuilt' holds numbers, not 'old'/);
    assert.match(error.message, /\n\s+yearBuilt:old\n\s+\^+/);
    const strict = specError(BASE.replace('city:Austin', 'citty:Austin'), env, {
      strictFields: true,
    });
    assert.equal(strict.line, 15);
    assert.match(strict.message, /citty.*did you mean 'city'/);
    assert.match(strict.message, /\n\s+citty:Austin\n\s+\^+/);
  });

  test('an undeclared view is an error offline; a view field of another type is an error', () => {
    const offline: LoadOptions = { views: 'offline' };
    assert.match(
      specError(BASE.replace('view: basic', 'view: basc'), env, offline).message,
      /view 'basc' is not declared under views: nor a pre-made view of properties; did you mean 'basic'\?/,
    );
    // plan and run may ask the service, which may hold the view (made in its portal, say).
    const elsewhere = parsePipeline(
      BASE.replace('view: basic', 'view: portal_homes'),
      'p.yaml',
      env,
    );
    assert.equal(elsewhere.jobs[0]!.view, 'portal_homes');
    const error = specError(BASE.replace('[id, address, city]', '[id, brand]'), env, {
      strictFields: true,
    });
    assert.equal(error.path, 'views.basic.fields.1');
    assert.match(error.message, /'brand' of view 'basic' is not a field of properties/);
  });

  test("pre-made views: exactly the service's names, of the job's data type, with their fields", () => {
    const offline: LoadOptions = { views: 'offline' };
    const premade = (view: string, type = 'properties') =>
      BASE.replace('view: basic', `view: ${view}`).replace('type: properties', `type: ${type}`);
    for (const [name, view] of Object.entries(PREMADE_VIEWS)) {
      const query = view.type === 'properties' ? 'city:Austin' : 'id:x';
      const text = premade(name, view.type).replace("'city:Austin'", `'${query}'`);
      assert.equal(parsePipeline(text, 'p.yaml', env, offline).jobs[0]!.view, name);
    }
    // Suffixes are not names: these were once let through by their endings.
    for (const name of ['people_all', 'homes_all_nested', 'property_pricesFlat']) {
      assert.match(
        specError(premade(name), env, offline).message,
        /not declared under views: nor a pre-made view/,
      );
    }
    assert.match(
      specError(premade('property_flat_pricse'), env, offline).message,
      /did you mean 'property_flat_prices'\?/,
    );
    assert.match(
      specError(premade('business_basic')).message,
      /view 'business_basic' is a pre-made view of businesses, not properties/,
    );
    const key = specError(`${premade('property_preview')}    key: yearBuilt\n`);
    assert.match(key.message, /merge key 'yearBuilt' is not a field of view 'property_preview'/);
    const cursor = specError(
      `${premade('property_preview')}    incremental: { cursor: dateUpdated }\n`,
    );
    assert.match(cursor.message, /cursor 'dateUpdated' is not in view 'property_preview'/);
    const fine = parsePipeline(
      `${premade('property_flat_prices')}    incremental: { cursor: dateUpdated }\n`,
      'p.yaml',
      env,
      offline,
    );
    assert.equal(fine.jobs[0]!.incremental?.cursor, 'dateUpdated');
  });

  test('durations', () => {
    assert.equal(parseDuration('5s'), 5000);
    assert.equal(parseDuration('1h30m'), 5_400_000);
    assert.equal(parseDuration('250ms'), 250);
    assert.equal(parseDuration(2), 2000);
    assert.equal(parseDuration('soon'), undefined);
    assert.match(specError(`${BASE}    poll: { interval: soon }\n`).message, /expected a duration/);
  });

  test('v3 needs a token; property options on other types are refused', () => {
    assert.match(specError(BASE.replace('api: v4', 'api: v3')).message, /v3 API needs token/);
    const other = BASE.replace('type: properties', 'type: businesses').replace(
      '    view: basic\n',
      '    auto_trace: true\n',
    );
    assert.match(specError(other).message, /auto_trace applies to properties only/);
  });

  test('validate refuses what v3 cannot do, naming the line: people, v4 options, unknown views', () => {
    const V3 = `version: 1
name: v3
source:
  api: v3
  url: http://127.0.0.1:8787/v3
  token: \${SLUICE_API_TOKEN}
destination: sqlite:data/t.sqlite
views:
  mine:
    fields: [id, name]
jobs:
  goods:
    type: products
    query: '*'
`;
    // As validate reads it: nothing can be asked of the service.
    const load = (extra: string) =>
      parsePipeline(`${V3}${extra}`, 'v3.yaml', {}, { source: 'optional', views: 'offline' });
    const refused = (extra: string) => {
      try {
        load(extra);
      } catch (error) {
        if (error instanceof PipelineSpecError) return error;
        throw error;
      }
      throw new Error(`expected a PipelineSpecError for ${extra}`);
    };
    // What v3 has: its pre-made views of the job's type, and declared ones.
    for (const view of ['products_all', 'products_basicFields', 'products_pricesFlat', 'mine'])
      assert.equal(load(`    view: ${view}\n`).jobs[0]!.view, view);

    const people = refused('  owners:\n    type: people\n    query: "*"\n');
    assert.equal(people.path, 'jobs.owners.type');
    assert.equal(people.line, 16);
    assert.match(people.message, /^v3\.yaml:16: jobs\.owners\.type: the v3 API has no people data/);

    const v4Name = refused('    view: product_flat_prices\n');
    assert.equal(v4Name.path, 'jobs.goods.view');
    assert.equal(v4Name.line, 15);
    assert.match(
      v4Name.message,
      /view 'product_flat_prices' is not declared under views: nor a pre-made v3 view of products \(products_all, .*\); a view made in the web portal can be used once declared/,
    );
    assert.match(
      refused('    view: products_priceFlat\n').message,
      /did you mean 'products_pricesFlat'\?/,
    );
    assert.match(refused('    view: nosuch_all\n').message, /not .* a pre-made v3 view/);
    assert.match(
      refused('    view: businesses_all\n').message,
      /view 'businesses_all' is a pre-made v3 view of businesses, not products/,
    );
    const homes = V3.replace('type: products', 'type: properties');
    const options = (extra: string) => {
      try {
        parsePipeline(`${homes}${extra}`, 'v3.yaml', {}, { source: 'optional', views: 'offline' });
      } catch (error) {
        if (error instanceof PipelineSpecError) return error.message;
        throw error;
      }
      return 'valid';
    };
    assert.equal(options('    view: properties_all_nested\n'), 'valid');
    assert.match(
      options('    auto_trace: true\n'),
      /jobs\.goods\.auto_trace: auto_trace needs the v4 API/,
    );
    assert.match(options('    address_matching: retry\n'), /address_matching needs the v4 API/);
    assert.equal(options('    address_matching: "on"\n'), 'valid');
    assert.match(
      options('    require_people_data: true\n'),
      /require_people_data needs the v4 API/,
    );
    // plan and run leave a view they do not know to the service (one made in the portal, say);
    // what v3 cannot do at all is refused there too.
    const service = (extra: string) => parsePipeline(`${V3}${extra}`, 'v3.yaml', env);
    assert.equal(service('    view: portal_view\n').jobs[0]!.view, 'portal_view');
    assert.throws(
      () => service('  owners:\n    type: people\n    query: "*"\n'),
      /the v3 API has no people data/,
    );
  });

  test('a table name a destination reserves (sqlite_master, pg_*, _sluice_*) is refused, case aside, with its line', () => {
    const table = specError(`${BASE}    table: sqlite_master\n`);
    assert.equal(table.line, 17);
    assert.equal(table.path, 'jobs.homes.table');
    assert.match(
      table.message,
      /^p\.yaml:17: jobs\.homes\.table: table 'sqlite_master' is reserved: SQLite keeps names beginning sqlite_ for itself; choose another name$/,
    );
    for (const [name, owner] of [
      ['SQLite_Stat1', /SQLite keeps/],
      ['pg_homes', /PostgreSQL keeps names beginning pg_ for its catalogue/],
      ['PG_CLASS', /PostgreSQL keeps/],
      ['_sluice_runs', /sluice keeps names beginning _sluice for its state tables/],
      ['_Sluice_Files', /sluice keeps/],
    ] as const) {
      assert.match(specError(`${BASE}    table: ${name}\n`).message, owner, name);
    }
    // The job's name is its table's name unless `table:` says otherwise.
    const named = specError(BASE.replace('  homes:', '  sqlite_stat1:'));
    assert.equal(named.line, 13);
    assert.equal(named.path, 'jobs.sqlite_stat1.table');
    assert.match(
      named.message,
      /the job's name 'sqlite_stat1', its table's name by default, is reserved: SQLite .*; add table: with another name$/,
    );
    const renamed = parsePipeline(
      `${BASE.replace('  homes:', '  sqlite_stat1:')}    table: homes\n`,
      'p.yaml',
      env,
    );
    assert.equal(renamed.jobs[0]!.table, 'homes');
    // An autotrace view has the people keys (checked before the table names).
    const traced = BASE.replace('[id, address, city]', '[id, address, city, people]');
    const people = specError(`${traced}    auto_trace: true\n    people_table: pg_people\n`);
    assert.equal(people.line, 18);
    assert.equal(people.path, 'jobs.homes.people_table');
    assert.match(people.message, /people_table 'pg_people' is reserved: PostgreSQL/);
    // Names that only contain them, or begin with them without the underscore, are free.
    for (const name of ['my_sqlite_table', 'pgx', 'sqlitehomes', 'homes_pg_', 'sluice_homes']) {
      const spec = parsePipeline(
        `${traced}    table: ${name}\n    auto_trace: true\n    people_table: ${name}_people\n`,
        'p.yaml',
        env,
      );
      assert.equal(spec.jobs[0]!.table, name);
    }
  });

  test('incremental: a date field of the type, in the view, on a merge job; its line is named', () => {
    const inc = (extra: string, fields = '[id, address, city, dateUpdated]') =>
      BASE.replace('[id, address, city]', fields) + extra;
    const ok = parsePipeline(
      inc('    incremental: { cursor: dateUpdated, start: 2026-01-01, lookback: 1d }\n'),
      'p.yaml',
      env,
    );
    assert.deepEqual(ok.jobs[0]!.incremental, {
      cursor: 'dateUpdated',
      start: '2026-01-01',
      lookback: 86_400_000,
    });
    const replace = specError(
      inc('    write: replace\n    incremental: { cursor: dateUpdated }\n'),
    );
    assert.equal(replace.line, 18);
    assert.match(replace.message, /incremental needs write: merge: a replace keeps only/);
    assert.match(
      specError(inc('    write: append\n    incremental: { cursor: dateUpdated }\n')).message,
      /incremental needs write: merge: the lookback re-reads records/,
    );
    assert.match(
      specError(inc('    incremental: { cursor: city }\n')).message,
      /cursor 'city' is not a date field of properties; use one of .*dateUpdated/,
    );
    assert.match(
      specError(inc('    incremental: { cursor: dateUpdated }\n', '[id, address, city]')).message,
      /jobs\.homes\.incremental\.cursor: cursor 'dateUpdated' is not in view 'basic': add it/,
    );
    assert.match(
      specError(inc('    incremental: { cursor: dateUpdated, start: soon }\n')).message,
      /expected a date such as 2026-01-01/,
    );
  });

  test('incremental: the range starts at the cursor less the lookback, never before start', () => {
    const job = { incremental: { cursor: 'dateUpdated', lookback: 86_400_000 } };
    const saved = {
      pipeline: 'p',
      job: 'homes',
      field: 'dateUpdated',
      value: '2026-11-20T10:00:00Z',
      updated_at: '',
      run_id: '',
      download_id: null,
    };
    assert.deepEqual(rangeOf(job, undefined, false), {
      cursor: 'dateUpdated',
      from: null,
      last: null,
      full_refresh: false,
    });
    const range = rangeOf(job, saved, false)!;
    assert.equal(range.from, '2026-11-19T10:00:00Z');
    assert.equal(
      rangeQuery('province:TX OR city:Austin', range),
      '(province:TX OR city:Austin) AND dateUpdated:[2026-11-19T10:00:00Z TO *]',
    );
    assert.equal(rangeQuery('*:*', range), 'dateUpdated:[2026-11-19T10:00:00Z TO *]');
    const started = { incremental: { ...job.incremental, start: '2026-11-20' } };
    assert.equal(rangeOf(started, saved, false)!.from, '2026-11-20');
    assert.equal(rangeOf(started, undefined, false)!.from, '2026-11-20');
    assert.equal(rangeOf(started, saved, true)!.from, '2026-11-20', '--full-refresh: since start');
    assert.equal(rangeOf(job, saved, true)!.from, null, '--full-refresh: everything');
    assert.equal(rangeOf({}, saved, false), undefined);
  });

  test('a missing file is a spec error, not a crash', async () => {
    await assert.rejects(loadPipeline('/nonexistent/p.yaml', env), /no such file/);
  });

  test('the JSON Schema describes the format', () => {
    const schema = pipelineJsonSchema() as {
      properties: Record<string, unknown>;
      required: string[];
    };
    assert.ok(schema.properties.jobs && schema.properties.source);
    assert.ok(schema.required.includes('jobs'));
  });
});

describe('example pipelines', () => {
  const dir = fileURLToPath(new URL('../../../pipelines/', import.meta.url));
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    test(`${name} is valid`, async () => {
      // Each at the root of its own API version, as SLUICE_API_URL would be set for it.
      const v3 = readFileSync(join(dir, name), 'utf8').includes('api: v3');
      const spec = await loadPipeline(
        join(dir, name),
        v3 ? { ...env, SLUICE_API_URL: 'http://127.0.0.1:8787/v3' } : env,
      );
      assert.ok(spec.jobs.length > 0);
    });
  }
});
