import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, runCli } from '../helpers/pipeline.js';

/**
 * The analyst's commands (health, account, views, count, preview, targeted updates, scrape)
 * run in-process through `main()` against a real emulator on v4, in text and --json form, and
 * the user mistakes each must report in one clear line with the right exit code.
 */

let h: EmulatorHarness;
let env: NodeJS.ProcessEnv;

before(async () => {
  h = await EmulatorHarness.start({ scale: 0.05 });
  env = emulatorEnv(h);
});
after(() => h.close());

async function sluice(...argv: string[]) {
  return runCli(argv, env);
}

/** Runs a command that must succeed and returns its parsed --json document. */
async function json<T = Record<string, unknown>>(...argv: string[]): Promise<T> {
  const r = await sluice(...argv, '--json');
  assert.equal(r.code, 0, `sluice ${argv.join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

function assertNoStack(text: string): void {
  assert.doesNotMatch(text, /\n\s+at /, 'no stack trace');
  assert.doesNotMatch(text, /internal error/);
}

function assertNoSecrets(text: string): void {
  const { password, token } = h.credentials;
  assert.ok(!text.includes(password), 'the password is never printed');
  assert.ok(!text.includes(token), 'the token is never printed');
}

describe('health', () => {
  test('text and json', async () => {
    const r = await sluice('health');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ok \(http:\/\/127\.0\.0\.1:\d+\/v4, API v4\)\n$/);
    assert.deepEqual(await json('health'), { status: 'ok', api: 'v4', url: h.v4Url });
  });

  test('flags override the environment', async () => {
    const { email, password } = h.credentials;
    const r = await runCli(
      ['health', '--url', h.v4Url, '--email', email, '--password', password],
      {},
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ok /);
  });
});

describe('account', () => {
  test('json: credits per data type, allotted - used = remaining', async () => {
    const doc = await json<{
      email: string;
      credits: Record<string, { allotted: number; used: number; remaining: number }>;
      total_used: number | null;
    }>('account');
    assert.equal(doc.email, h.credentials.email);
    assert.deepEqual(Object.keys(doc.credits).sort(), [
      'business',
      'people',
      'product',
      'property',
    ]);
    for (const c of Object.values(doc.credits)) {
      assert.equal(c.remaining, c.allotted - c.used);
    }
    assert.ok('total_used' in doc);
  });

  test('text: a table of credits', async () => {
    const r = await sluice('account');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^Account ${h.credentials.email.replace('.', '\\.')}`));
    assert.match(r.stdout, /credits\s+allotted\s+used\s+remaining/);
    for (const type of ['business', 'people', 'product', 'property'])
      assert.match(r.stdout, new RegExp(`\\n${type}\\s+[\\d,]+`));
  });

  test('update: names, then email and password; the password is never echoed', async () => {
    try {
      const named = await json<{
        changed: string[];
        account: { first_name: string; last_name: string };
      }>('account', 'update', '--first-name', 'Ada', '--last-name', 'Lovelace');
      assert.deepEqual(named.changed, ['first_name', 'last_name']);
      assert.equal(named.account.first_name, 'Ada');
      assert.equal(named.account.last_name, 'Lovelace');

      const r = await sluice(
        'account',
        'update',
        '--new-email',
        'ada@example.test',
        '--new-password',
        'n3w-secret-pw',
      );
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /email is now ada@example\.test; password changed/);
      assert.ok(!r.stdout.includes('n3w-secret-pw') && !r.stderr.includes('n3w-secret-pw'));
      const mail = await h.outbox();
      assert.ok(
        mail.some((m) => m.to === h.credentials.email),
        'notice sent to the previous address',
      );

      // The old credentials no longer work: a refusal to fix, exit 2, one line, no secrets.
      const refused = await sluice('account');
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /401/);
      assertNoStack(refused.stderr);
      assertNoSecrets(refused.stderr);
      const fresh = await runCli(['account', '--json'], {
        ...env,
        SLUICE_EMAIL: 'ada@example.test',
        SLUICE_PASSWORD: 'n3w-secret-pw',
      });
      assert.equal(fresh.code, 0, fresh.stderr);
      assert.equal(JSON.parse(fresh.stdout).email, 'ada@example.test');
    } finally {
      await h.reset();
    }
  });

  test('update with nothing to change is a usage error', async () => {
    const r = await sluice('account', 'update');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /nothing to change/);
  });
});

describe('views', () => {
  test('create, list, show, update, delete (text)', async () => {
    let r = await sluice(
      'views',
      'create',
      'austin homes',
      '--fields',
      'id,address, city',
      '--fields',
      'yearBuilt',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      "Created view 'austin homes' with 4 fields: id, address, city, yearBuilt\n",
    );

    r = await sluice('views', 'list');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^name\s+fields\s+created\n/);
    assert.match(r.stdout, /austin homes\s+id, address, city, yearBuilt\s+\d{4}-/);

    r = await sluice('views', 'show', 'austin homes');
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^View 'austin homes', created \S+\n4 fields:\n {2}id\n {2}address\n {2}city\n {2}yearBuilt\n$/,
    );

    r = await sluice('views', 'update', 'austin homes', '--rename', 'homes', '--fields', 'id,city');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      "Updated view 'austin homes': renamed to 'homes'; fields are now id, city\n",
    );

    r = await sluice('views', 'delete', 'homes');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "Deleted view 'homes'\n");

    r = await sluice('views', 'list');
    assert.equal(
      r.stdout,
      'No views yet: create one with sluice views create <name> --fields a,b,c\n',
    );
  });

  test('create, list, show, update, delete (json)', async () => {
    const created = await json('views', 'create', 'v1', '--fields', 'id,name');
    assert.deepEqual(
      { ...created, created_at: typeof created.created_at },
      {
        name: 'v1',
        fields: ['id', 'name'],
        created_at: 'string',
      },
    );
    assert.deepEqual(await json('views', 'list'), { views: [created] });
    assert.deepEqual(await json('views', 'show', 'v1'), created);
    const updated = await json('views', 'update', 'v1', '--fields', 'id');
    assert.deepEqual(updated.fields, ['id']);
    assert.deepEqual(await json('views', 'delete', 'v1'), { deleted: 'v1' });
  });

  test('pre-made views can be shown, with a real creation date', async () => {
    const view = await json<{ fields: string[]; created_at: string }>(
      'views',
      'show',
      'products_basicFields',
    );
    assert.ok(view.fields.includes('brand'));
    assert.ok(Date.parse(view.created_at) > Date.parse('2020-01-01'), view.created_at);
    const r = await sluice('views', 'show', 'products_basicFields');
    assert.match(r.stdout, /^View 'products_basicFields', created \d{4}-\d\d-\d\dT/);
    assert.doesNotMatch(r.stdout, /1970/);
  });

  test('unknown view: the service says so, exit 2, one line', async () => {
    const r = await sluice('views', 'show', 'nosuch');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /view 'nosuch' not found/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assertNoStack(r.stderr);
  });

  test('invalid fields and missing arguments', async () => {
    let r = await sluice('views', 'create', 'bad', '--fields', 'id,colour');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /field 'colour' is not in sluice's catalogue.*did you mean 'colors'/);
    // Said once: the service's details only repeat it (it was printed twice).
    assert.match(r.stderr, /failed with 400: unknown field in view: colour\n/);
    r = await sluice('views', 'create', 'bad', '--fields', 'id,colour', '--strict-fields');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown field in view: colour; did you mean 'colors'/);
    r = await sluice('views', 'create', 'bad');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--fields/);
    r = await sluice('views', 'update', 'bad');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /nothing to change/);
    r = await sluice('views');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /list, show, create, update or delete/);
  });
});

describe('count and preview', () => {
  test('count prints the number and costs nothing', async () => {
    const before = await json<{ credits: { property: { used: number } } }>('account');
    const r = await sluice('count', 'properties', 'city:Austin');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\d+\n$/);
    const n = Number(r.stdout);
    assert.ok(n > 0, 'the emulator has Austin properties');
    assert.deepEqual(await json('count', 'properties', 'city:Austin'), {
      type: 'properties',
      query: 'city:Austin',
      num_found: n,
    });
    // An unquoted query is one query.
    const words = await json<{ query: string; num_found: number }>(
      'count',
      'properties',
      'city:Austin',
      'AND',
      'city:Austin',
    );
    assert.equal(words.query, 'city:Austin AND city:Austin');
    assert.equal(words.num_found, n);
    const afterCount = await json<{ credits: { property: { used: number } } }>('account');
    assert.equal(afterCount.credits.property.used, before.credits.property.used);
  });

  test('preview: a table of the chosen columns, what was found and what it cost', async () => {
    const r = await sluice(
      'preview',
      'properties',
      'city:Austin',
      '--records',
      '3',
      '--columns',
      'id,address,city,people.name',
    );
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(
      lines[0]!,
      /^Found [\d,]+ properties matching city:Austin; showing 3 \(cost: 3 credits\)\.$/,
    );
    assert.match(lines[1]!, /^id\s+address\s+city\s+people\.name$/);
    assert.match(lines[2]!, /^-+ {2}-+/);
    assert.equal(lines.length, 6);
    for (const line of lines.slice(3)) assert.match(line, /Austin/);
  });

  test('preview --json: the records whole', async () => {
    const doc = await json<{
      num_found: number;
      total_cost: number;
      records: Record<string, unknown>[];
    }>('preview', 'businesses', 'city:Austin', '--records', '2');
    assert.equal(doc.records.length, Math.min(2, doc.num_found));
    assert.equal(doc.total_cost, doc.records.length);
    assert.equal(doc.records[0]?.city, 'Austin');
    assert.ok('name' in doc.records[0]!);
  });

  test('preview with a view and with autotrace', async () => {
    await json('views', 'create', 'slim', '--fields', 'id,city');
    try {
      const doc = await json<{ records: Record<string, unknown>[] }>(
        'preview',
        'properties',
        'city:Austin',
        '--records',
        '2',
        '--view',
        'slim',
      );
      for (const record of doc.records)
        assert.deepEqual(Object.keys(record).sort(), ['city', 'id']);
      const r = await sluice(
        'preview',
        'properties',
        'city:Austin',
        '--records',
        '1',
        '--view',
        'slim',
      );
      assert.match(r.stdout, /\nid\s+city\n/);
    } finally {
      await json('views', 'delete', 'slim');
    }
    const traced = await json<{
      total_cost: number;
      records: { people?: { title?: string; emails?: string[] }[] }[];
    }>('preview', 'properties', '*', '--records', '2', '--auto-trace');
    assert.ok(traced.records.length > 0, 'some properties have an owner to trace');
    assert.equal(traced.total_cost, traced.records.length * 2);
    for (const record of traced.records) assert.ok(record.people?.some((p) => p.title === 'owner'));
  });

  test('count and preview take the search options of a job: format, view, autotrace, address matching', async () => {
    const n = async (...argv: string[]) =>
      (await json<{ num_found: number }>('count', 'properties', ...argv)).num_found;
    const all = await n('city:Austin');
    const withPeople = await n('city:Austin', '--require-people-data');
    const traced = await n('city:Austin', '--auto-trace');
    assert.ok(withPeople > 0 && withPeople < all, `${withPeople} of ${all} have people data`);
    assert.ok(traced > 0 && traced <= withPeople, `${traced} have an owner to trace`);

    // An address as written differently: the service's normalization finds it, exact does not.
    const [home] = (
      await json<{ records: { address: string }[] }>(
        'preview',
        'properties',
        'city:Austin',
        '--records',
        '1',
      )
    ).records;
    const address = `address:"${home!.address.toLowerCase()}"`;
    assert.equal(await n(address, '--address-matching', 'on'), 1);
    assert.equal(await n(address, '--address-matching', 'off'), 0);
    assert.equal(await n(address, '--address-matching', 'retry'), 1);
    const exact = await json<{ num_found: number; records: unknown[] }>(
      'preview',
      'properties',
      address,
      '--address-matching',
      'off',
    );
    assert.deepEqual([exact.num_found, exact.records.length], [0, 0]);

    // CSV: the records as a CSV download holds them, lists as text.
    const shops = async (...argv: string[]) =>
      (
        await json<{ records: { categories?: unknown }[] }>(
          'preview',
          'businesses',
          'city:Austin',
          '--records',
          '1',
          ...argv,
        )
      ).records[0]!;
    assert.ok(Array.isArray((await shops()).categories));
    assert.equal(typeof (await shops('--format', 'csv')).categories, 'string');
    const shown = await sluice('preview', 'businesses', 'city:Austin', '--format', 'csv');
    assert.equal(shown.code, 0, shown.stderr);

    // The view goes with the count too: the service refuses one it does not have.
    const view = await sluice('count', 'businesses', '*', '--view', 'nosuch');
    assert.equal(view.code, 2);
    assert.match(view.stderr, /view does not exist: nosuch/);

    for (const argv of [
      ['count', 'businesses', '*', '--address-matching', 'off'],
      ['count', 'products', '*', '--auto-trace', '--require-people-data'],
      ['preview', 'businesses', '*', '--require-people-data'],
    ]) {
      const r = await sluice(...argv);
      assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
      assert.match(
        r.stderr,
        /(--[a-z-]+(, )?)+ works? on properties only, not (businesses|products)/,
      );
      assertNoStack(r.stderr);
    }
    const choice = await sluice('count', 'properties', '*', '--address-matching', 'fuzzy');
    assert.equal(choice.code, 2);
    assert.match(choice.stderr, /Invalid values:[\s\S]*address-matching/);
  });

  test('a bad query: exit 2, the query with a caret under the problem, nothing spent', async () => {
    const before = await json<{ credits: { property: { used: number } } }>('account');
    const r = await sluice('preview', 'properties', 'city:Austin AND (province:TX');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /city:Austin AND \(province:TX\n\s*\^/);
    assertNoStack(r.stderr);
    const value = await sluice('preview', 'properties', 'yearBuilt:old');
    assert.equal(value.code, 2);
    assert.match(
      value.stderr,
      /field 'yearBuilt' holds numbers, not 'old'\n\s+yearBuilt:old\n\s+\^\^\^/,
    );
    const field = await sluice('count', 'properties', 'cty:Austin', '--strict-fields');
    assert.equal(field.code, 2);
    assert.match(field.stderr, /cty/);
    assert.match(field.stderr, /\n\s+\^\^\^/);
    // Without --strict-fields the service hears it, and refuses it before charging anything.
    const sent = await sluice('preview', 'properties', 'cty:Austin');
    assert.equal(sent.code, 2);
    assert.match(sent.stderr, /did you mean 'city'/);
    const afterBad = await json<{ credits: { property: { used: number } } }>('account');
    assert.equal(afterBad.credits.property.used, before.credits.property.used);
  });

  test('user mistakes in arguments: exit 2, one clear message', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['count', 'propertys', 'city:Austin'],
        /unknown data type 'propertys'.*did you mean properties/,
      ],
      [
        ['preview', 'properties', 'city:Austin', '--records', '11'],
        /--records must be a whole number from 0 to 10/,
      ],
      [
        ['preview', 'properties', 'city:Austin', '--columns', 'adress', '--strict-fields'],
        /unknown column 'adress'.*did you mean address/,
      ],
      [
        ['preview', 'businesses', 'city:Austin', '--auto-trace'],
        /--auto-trace works on properties only/,
      ],
      [['count', 'properties'], /sluice count properties: needs 2 arguments here, got 1/],
      [['nosuch'], /Unknown argument: nosuch/],
    ];
    for (const [argv, message] of cases) {
      const r = await sluice(...argv);
      assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assertNoStack(r.stderr);
    }
  });

  test('an unknown view in a search: exit 2 with what the service said', async () => {
    const r = await sluice('preview', 'properties', 'city:Austin', '--view', 'nosuch');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /view does not exist: nosuch/);
    assertNoStack(r.stderr);
  });

  test('missing credentials: exit 2, naming SLUICE_EMAIL', async () => {
    const r = await runCli(['count', 'properties', 'city:Austin'], { SLUICE_API_URL: h.v4Url });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /SLUICE_EMAIL/);
    assert.equal(r.stdout, '');
    assertNoStack(r.stderr);
  });

  test('a wrong password: exit 2, the service refused, the password not shown', async () => {
    const r = await runCli(['account'], { ...env, SLUICE_PASSWORD: 'wrong-password-123' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /401/);
    assert.ok(!r.stderr.includes('wrong-password-123'));
    assertNoStack(r.stderr);
  });
});

describe('targeted updates and scrape', () => {
  test('targeted-updates create and list (text and json)', async () => {
    const r = await sluice('targeted-updates', 'create', 'city:Austin', '--records', '2');
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Targeted update \S+ \w+: 2 properties matching city:Austin \(cost: 2 credits\)\./,
    );

    const created = await json<{ id: string; num_records: number; type: string; query: string }>(
      'targeted-updates',
      'create',
      'city:Austin',
      '--records',
      '1',
      '--type',
      'businesses',
    );
    assert.equal(created.num_records, 1);
    assert.equal(created.type, 'businesses');

    const list = await json<{ targeted_updates: { id: string; status: string }[] }>(
      'targeted-updates',
      'list',
    );
    assert.equal(list.targeted_updates.length, 2);
    assert.ok(list.targeted_updates.some((u) => u.id === created.id));

    const text = await sluice('targeted-updates', 'list');
    assert.match(text.stdout, /^id\s+status\s+type\s+records\s+updated\s+cost\s+created\s+query\n/);
    assert.match(text.stdout, new RegExp(`${created.id}\\s+\\w+\\s+businesses`));
  });

  test('targeted-updates mistakes', async () => {
    let r = await sluice('targeted-updates', 'create', 'city:Austin');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--records N/);
    r = await sluice('targeted-updates', 'create', 'city:Austin', '--records', '0');
    assert.equal(r.code, 2);
    r = await sluice(
      'targeted-updates',
      'create',
      'city:Austin',
      '--records',
      '1',
      '--type',
      'cars',
    );
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown data type 'cars'/);
  });

  test('scrape (text and json)', async () => {
    const r = await sluice('scrape', 'city:Austin', '--records', '2', '--columns', 'id,city');
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Scrape \S+ completed: 2 properties matching city:Austin \(cost: 2 credits\)\.\nid\s+city\n/,
    );
    const doc = await json<{ num_records: number; records: { city: string }[] }>(
      'scrape',
      'city:Austin',
      '--records',
      '1',
      '--type',
      'businesses',
    );
    assert.equal(doc.num_records, 1);
    assert.equal(doc.records[0]?.city, 'Austin');
  });
});
