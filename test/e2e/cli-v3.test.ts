import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createServiceClient } from '../../src/client/index.js';
import type { ServiceClient } from '../../src/client/types.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { pipelineHead, runCli, tempDir } from '../helpers/pipeline.js';

/**
 * The commands the v3 API supports (count, preview, downloads list/show/fetch), chosen with
 * `--api v3 --token ...`, and a clear refusal for the ones it does not have.
 */

const QUEUE_MS = 60_000;
let h: EmulatorHarness;
let client: ServiceClient;

before(async () => {
  h = await EmulatorHarness.start({ scale: 0.05, fileRecords: 200, queueMs: QUEUE_MS });
  client = createServiceClient({ url: h.v3Url, api: 'v3', token: h.credentials.token });
});
after(async () => {
  await client.close();
  await h.close();
});

/** The CLI with v3 settings from flags only: nothing in the environment. */
async function v3(...argv: string[]) {
  return runCli([...argv, '--url', h.v3Url, '--api', 'v3', '--token', h.credentials.token], {});
}

async function json<T = Record<string, unknown>>(...argv: string[]): Promise<T> {
  const r = await v3(...argv, '--json');
  assert.equal(r.code, 0, `sluice ${argv.join(' ')} failed: ${r.stderr}`);
  assert.ok(!r.stdout.includes(h.credentials.token), 'the token is never printed');
  return JSON.parse(r.stdout) as T;
}

describe('v3', () => {
  test('health (text and json)', async () => {
    const r = await v3('health');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `ok (${h.v3Url}, API v3)\n`);
    assert.deepEqual(await json('health'), { status: 'ok', api: 'v3', url: h.v3Url });
  });

  test('count (text and json)', async () => {
    const r = await v3('count', 'businesses', 'city:Austin');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\d+\n$/);
    assert.ok(Number(r.stdout) > 0);
    assert.deepEqual(await json('count', 'businesses', 'city:Austin'), {
      type: 'businesses',
      query: 'city:Austin',
      num_found: Number(r.stdout),
    });
  });

  test('preview (text and json), with a pre-made view', async () => {
    const r = await v3('preview', 'products', '*', '--records', '2', '--columns', 'id,name,brand');
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Found [\d,]+ products matching \*; showing 2 \(cost: 2 credits\)\.\nid\s+name\s+brand\n/,
    );
    const doc = await json<{ records: Record<string, unknown>[]; total_cost: number }>(
      'preview',
      'products',
      '*',
      '--records',
      '1',
      '--view',
      'products_basicFields',
    );
    assert.equal(doc.records.length, 1);
    assert.ok(!('prices' in doc.records[0]!), 'the view decides the fields');
  });

  test('a bad query: exit 2 with a caret', async () => {
    const r = await v3('count', 'businesses', 'name:"Open');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /name:"Open\n\s*\^/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  test('downloads list, show and fetch', async () => {
    const start = await client.startDownload({
      type: 'businesses',
      query: '*',
      numRecords: 450,
      format: 'csv',
    });
    await h.advanceClock(QUEUE_MS + 1000);

    const list = await json<{ downloads: { id: string; state: string; query: string | null }[] }>(
      'downloads',
      'list',
    );
    const mine = list.downloads.find((d) => d.id === start.id);
    assert.equal(mine?.state, 'completed');
    assert.equal(mine?.query, '*');
    const text = await v3('downloads', 'list');
    assert.match(text.stdout, /^id\s+state\s+records\s+found\s+files\s+created\s+type\s+query\n/);

    const shown = await v3('downloads', 'show', start.id);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /state +completed\n {2}records +450 of [\d,]+ found\n/);
    assert.match(shown.stdout, /type +businesses\n {2}query +\*\n {2}format +csv\n/);

    const dir = tempDir();
    const doc = await json<{ files: { name: string; path: string }[] }>(
      'downloads',
      'fetch',
      start.id,
      '--out',
      dir,
    );
    assert.equal(doc.files.length, 3);
    const info = await client.getDownload(start.id);
    for (const file of info.files) {
      const served = Buffer.from(await (await fetch(file.url)).arrayBuffer());
      assert.ok(readFileSync(join(dir, file.name)).equals(served), `${file.name} matches`);
    }
    assert.equal(readdirSync(dir).length, 3);
  });

  test('operations v3 does not have: exit 2, naming the API', async () => {
    for (const argv of [
      ['views', 'list'],
      ['account'],
      ['targeted-updates', 'list'],
      ['count', 'people', '*'],
      ['preview', 'properties', '*', '--auto-trace'],
    ]) {
      const r = await v3(...argv);
      assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /v3 API has no/);
    }
  });

  test('validate refuses a v3 people job and a view v3 does not have, before any request', async () => {
    const dir = tempDir();
    const file = join(dir, 'v3.yaml');
    const head = `${pipelineHead('v3', 'sqlite:v3.sqlite', 'v3')}jobs:
`;
    const from = (await h.requests()).length;
    writeFileSync(file, `${head}  owners:\n    type: people\n    query: 'city:Austin'\n`);
    const people = await runCli(['validate', file], {});
    assert.equal(people.code, 2);
    assert.equal(
      people.stderr,
      `sluice: ${file}:10: jobs.owners.type: the v3 API has no people data: use api: v4 for people jobs\n`,
    );
    writeFileSync(
      file,
      `${head}  homes:\n    type: properties\n    query: '*'\n    view: property_flat_prices\n`,
    );
    const view = await runCli(['validate', file], {});
    assert.equal(view.code, 2);
    assert.match(
      view.stderr,
      /:12: jobs\.homes\.view: view 'property_flat_prices' is not declared under views: nor a pre-made v3 view of properties \(properties_all, properties_all_nested\)/,
    );
    writeFileSync(
      file,
      `${head}  homes:\n    type: properties\n    query: '*'\n    view: properties_all\n`,
    );
    assert.equal((await runCli(['validate', file], {})).code, 0);
    assert.equal((await h.requests()).length, from, 'no request');
  });

  test('missing or wrong token', async () => {
    const missing = await runCli(['count', 'businesses', '*', '--url', h.v3Url, '--api', 'v3'], {});
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /SLUICE_API_TOKEN/);
    const wrong = await runCli(['count', 'businesses', '*'], {
      SLUICE_API_URL: h.v3Url,
      SLUICE_API_TOKEN: 'not-the-token',
    });
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /401/);
    assert.ok(!wrong.stderr.includes('not-the-token'));
  });
});

describe('the API version and the URL disagree', () => {
  test("validate says so offline, at the URL's line, for a v3 file with a /v4 URL and the reverse", async () => {
    const dir = tempDir();
    for (const [api, url, named] of [
      ['v3', h.v4Url, 'v4'],
      ['v4', h.v3Url, 'v3'],
    ] as const) {
      const file = join(dir, `${api}-at-${named}.yaml`);
      writeFileSync(
        file,
        `version: 1\nname: mixed\nsource:\n  api: ${api}\n  url: ${url}\n  token: \${SLUICE_API_TOKEN}\njobs:\n  shops: { type: businesses, query: "city:Austin", records: 5 }\n`,
      );
      const r = await runCli(['validate', file], { SLUICE_API_TOKEN: h.credentials.token });
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `:5: source\\.url: the URL names the ${named} API but api: is ${api}, .*make them agree \\(api: ${named}, or the ${api} root URL\\)`,
        ),
      );
      // run stops there too, before anything is asked of the service.
      const run = await runCli(['run', file, '--no-progress'], {
        SLUICE_API_TOKEN: h.credentials.token,
      });
      assert.equal(run.code, 2);
      assert.match(run.stderr, /the URL names the/);
    }
  });

  test("the service's 404 to a v3 call at a /v4 URL says the two disagree", async () => {
    const r = await runCli(
      ['count', 'businesses', 'city:Austin', '--url', h.v4Url, '--api', 'v3'],
      { SLUICE_API_TOKEN: h.credentials.token },
    );
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /failed with 404/);
    assert.match(
      r.stderr,
      new RegExp(`the service URL ${h.v4Url} names the v4 API, but sluice speaks v3 to it`),
    );
    // A 404 with the URL and the version in agreement has no such hint.
    const agreed = await v3('downloads', 'show', 'nosuch');
    assert.equal(agreed.code, 2);
    assert.doesNotMatch(agreed.stderr, /names the/);
  });
});
