import { strict as assert } from 'node:assert';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, test } from 'node:test';
import type { FileToRead } from '../../../src/load/destination.js';
import { Spools } from '../../../src/load/duckdb/spools.js';
import { tempDir } from '../../helpers/pipeline.js';

/**
 * The result files DuckDB reads itself (src/load/duckdb/spools.ts): the job's next file is
 * fetched while one is read, and taken only if it is the one asked for next.
 */

const root = tempDir('sluice-spools-');
after(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;
/** A scratch folder of the test's own. */
function folder(): string {
  const dir = join(root, String(++folders));
  mkdirSync(dir);
  return dir;
}

/** A file whose text is `text`, counting its fetches; a fetch fails while `fail` is set. */
function fileOf(name: string, text: string) {
  const file = {
    name,
    fetches: 0,
    fail: false,
    open: async () => {
      file.fetches++;
      if (file.fail) {
        return new Readable({
          read() {
            this.destroy(new Error('connection reset'));
          },
        });
      }
      return Readable.from([Buffer.from(text)]);
    },
    format: 'json' as const,
    fields: {},
    constants: {},
    maxRecordBytes: 1000,
  };
  return file satisfies FileToRead;
}

test('a file fetched ahead is taken once, with what was begun on it', async () => {
  const dir = folder();
  const spools = new Spools<string>(() => dir);
  const [a, b] = [fileOf('a', '{"x":1}\n'), fileOf('b', '\ufeff{"x":2}\n')];
  const first = await spools.take(a);
  assert.equal(readFileSync(first.spooled.path, 'utf8'), '{"x":1}\n');
  assert.equal(first.begun, undefined);
  spools.fetchAhead(b, async (spooled) => readFileSync(spooled.path, 'utf8'));
  const second = await spools.take(b);
  assert.equal(await second.begun, '\ufeff{"x":2}\n');
  assert.deepEqual([second.spooled.bytes, second.spooled.bom], [11, true]);
  assert.equal(b.fetches, 1);
  await spools.close();
  assert.deepEqual(readdirSync(dir).sort(), ['file-1.ndjson', 'file-2.ndjson']);
});

test('a file fetched ahead that is not the next asked for, or that failed, is fetched again', async () => {
  const dir = folder();
  const spools = new Spools<string>(() => dir);
  const [b, c] = [fileOf('b', 'b\n'), fileOf('c', 'c\n')];
  spools.fetchAhead(b, async () => 'begun');
  const taken = await spools.take(c);
  assert.equal(readFileSync(taken.spooled.path, 'utf8'), 'c\n');
  assert.equal(taken.begun, undefined);
  rmSync(taken.spooled.path);
  // The dropped file is removed.
  assert.deepEqual(readdirSync(dir), []);
  c.fail = true;
  spools.fetchAhead(c, async () => 'begun');
  c.fail = false;
  const again = await spools.take(c);
  assert.equal(readFileSync(again.spooled.path, 'utf8'), 'c\n');
  assert.equal(again.begun, undefined);
  assert.equal(c.fetches, 3);
  rmSync(again.spooled.path);
  await spools.close();
});

test('closed, a file fetched ahead and not read is removed', async () => {
  const dir = folder();
  const spools = new Spools<string>(() => dir);
  let resolve: (fetched: boolean) => void = () => {};
  const fetched = new Promise<boolean>((r) => {
    resolve = r;
  });
  spools.fetchAhead(fileOf('d', 'd\n'), async (spooled) => {
    resolve(existsSync(spooled.path));
    return 'begun';
  });
  assert.ok(await fetched);
  await spools.close();
  assert.deepEqual(readdirSync(dir), []);
});

test('a file that cannot be made is not fetched; a fetch that fails leaves no file', async () => {
  const gone = new Spools<string>(() => join(root, 'no such folder'));
  const a = fileOf('a', 'a\n');
  await assert.rejects(gone.take(a), { code: 'ENOENT' });
  assert.equal(a.fetches, 0);
  const dir = folder();
  const spools = new Spools<string>(() => dir);
  const b = fileOf('b', 'b\n');
  b.fail = true;
  await assert.rejects(spools.take(b), /connection reset/);
  assert.deepEqual(readdirSync(dir), []);
});
