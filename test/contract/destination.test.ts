/**
 * The destination contract: one suite, run against every destination named in
 * `SLUICE_TEST_DESTINATIONS` (comma list, default `sqlite,postgres`).
 *
 * PostgreSQL comes from `SLUICE_TEST_POSTGRES_URL` (default a local trust-auth server); each test
 * gets its own random schema, dropped afterwards. When PostgreSQL cannot be reached the postgres
 * part skips with one line, except with `CI=true`, where it fails.
 */

import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { Column, ColumnType, Destination, TableSpec } from '../../src/load/destination.js';
import { openPostgresDestination } from '../../src/load/postgres/postgres-destination.js';
import type { Row } from '../../src/records/types.js';
import {
  dropSchema,
  postgresSkipReason,
  postgresUrl,
  queryPostgres,
  randomSchemaName,
} from '../helpers/postgres.js';

interface Harness {
  kind: string;
  skip?: string;
  /** Opens a fresh, empty destination; `cleanup` closes it and removes what it made. */
  open(): Promise<{ dest: Destination; cleanup(): Promise<void> }>;
}

const kinds = (process.env.SLUICE_TEST_DESTINATIONS ?? 'sqlite,postgres')
  .split(',')
  .map((k) => k.trim())
  .filter((k) => k.length > 0);

async function harness(kind: string): Promise<Harness> {
  if (kind === 'sqlite') {
    return {
      kind,
      async open() {
        const { openSqliteDestination } = await import(
          '../../src/load/sqlite/sqlite-destination.js'
        );
        const dir = mkdtempSync(join(tmpdir(), 'sluice-contract-'));
        const dest = await openSqliteDestination(join(dir, 'contract.sqlite'));
        return {
          dest,
          async cleanup() {
            await dest.close();
            rmSync(dir, { recursive: true, force: true });
          },
        };
      },
    };
  }
  if (kind === 'postgres') {
    const url = postgresUrl();
    const skip = await postgresSkipReason(url);
    return {
      kind,
      ...(skip === undefined ? {} : { skip }),
      async open() {
        const schema = randomSchemaName();
        const dest = await openPostgresDestination(url, { schema });
        return {
          dest,
          async cleanup() {
            await dest.close();
            await dropSchema(schema, url);
          },
        };
      },
    };
  }
  throw new Error(
    `SLUICE_TEST_DESTINATIONS: unknown destination ${kind} (expected sqlite or postgres)`,
  );
}

const harnesses = await Promise.all(kinds.map(harness));

/** Kysely over any table, for reading data tables back through the destination's own db. */
type AnyDatabase = Record<string, Record<string, unknown>>;
function anyDb(dest: Destination): Kysely<AnyDatabase> {
  return dest.db as unknown as Kysely<AnyDatabase>;
}

async function readAll(
  dest: Destination,
  table: string,
  orderBy: string[],
): Promise<Record<string, unknown>[]> {
  let query = anyDb(dest).selectFrom(table).selectAll();
  for (const column of orderBy) query = query.orderBy(sql.id(column));
  return query.execute();
}

/** A value read back, in a form both destinations agree on for a column of `type`. */
function norm(type: ColumnType | undefined, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'boolean':
      return (
        value === true ||
        value === 1 ||
        value === 1n ||
        value === '1' ||
        value === 't' ||
        value === 'true'
      );
    case 'integer':
    case 'real':
      return Number(value);
    case 'timestamp':
      return new Date(value as string | Date).toISOString();
    case 'json':
      return typeof value === 'string' ? JSON.parse(value) : value;
    default:
      return typeof value === 'string' ? value : String(value);
  }
}

async function readNormalized(dest: Destination, table: string, orderBy: string[]) {
  const columns = (await dest.describeTable(table)) ?? [];
  const types = new Map(columns.map((c) => [c.name, c.type]));
  const rows = await readAll(dest, table, orderBy);
  return rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([name, value]) => [name, norm(types.get(name), value)]),
    ),
  );
}

function spec(name: string, columns: [string, ColumnType][], key: string[] = []): TableSpec {
  return { name, columns: columns.map(([n, type]) => ({ name: n, type })), key };
}

async function write(dest: Destination, table: TableSpec, rows: Row[], mode: 'append' | 'merge') {
  await dest.transaction((tx) => tx.writeRows(table, rows, mode));
}

function typesOf(columns: Column[] | undefined): Record<string, ColumnType> {
  return Object.fromEntries((columns ?? []).map((c) => [c.name, c.type]));
}

const STATE_TABLES = [
  '_sluice_runs',
  '_sluice_downloads',
  '_sluice_files',
  '_sluice_rejects',
] as const;

const fileRow = (fileIndex: number) => ({
  download_id: 'dl-1',
  file_index: fileIndex,
  file_name: `part-${fileIndex}.csv`,
  table_name: 'property',
  rows_loaded: 1234,
  rows_rejected: 2,
  bytes: 5_000_000_123,
  loaded_at: '2024-05-01T10:00:00.000Z',
  run_id: 'run-1',
});

for (const h of harnesses) {
  describe(`destination contract: ${h.kind}`, () => {
    if (h.skip !== undefined) {
      it(`${h.kind} destination`, (t) => {
        t.skip(h.skip);
      });
      return;
    }

    /** Runs `work` against a fresh destination, cleaned up afterwards. */
    async function use(work: (dest: Destination) => Promise<void>): Promise<void> {
      const { dest, cleanup } = await h.open();
      try {
        await work(dest);
      } finally {
        await cleanup();
      }
    }

    it('reports its kind and capabilities', () =>
      use(async (dest) => {
        assert.equal(dest.kind, h.kind);
        assert.equal(typeof dest.capabilities.transactionalDdl, 'boolean');
        assert.equal(typeof dest.capabilities.bulkLoad, 'boolean');
        assert.equal(typeof dest.capabilities.alterColumnType, 'boolean');
        assert.ok(dest.description.length > 0);
      }));

    it('creates the state tables idempotently, with numbers as numbers', () =>
      use(async (dest) => {
        await dest.ensureStateTables();
        await dest.ensureStateTables();
        for (const table of STATE_TABLES) assert.equal(await dest.tableExists(table), true, table);

        await dest.db.insertInto('_sluice_files').values(fileRow(0)).execute();
        await dest.db.insertInto('_sluice_files').values(fileRow(1)).execute();
        await assert.rejects(dest.db.insertInto('_sluice_files').values(fileRow(0)).execute());
        const files = await dest.db
          .selectFrom('_sluice_files')
          .selectAll()
          .orderBy('file_index')
          .execute();
        assert.deepEqual(files, [fileRow(0), fileRow(1)]);

        await dest.db
          .insertInto('_sluice_downloads')
          .values({
            attempt_id: 'a-1',
            pipeline: 'p',
            job: 'j',
            spec_hash: 'h',
            api: 'v4',
            download_id: null,
            status: 'requested',
            target_table: 'property',
            load_table: 'property',
            num_found: 42,
            num_records: null,
            requested_at: '2024-05-01T10:00:00.000Z',
            started_at: null,
            updated_at: '2024-05-01T10:00:00.000Z',
            finished_at: null,
            run_id: 'run-1',
            message: null,
          })
          .execute();
        const download = await dest.db
          .selectFrom('_sluice_downloads')
          .selectAll()
          .executeTakeFirstOrThrow();
        assert.equal(download.num_found, 42);
        assert.equal(download.num_records, null);

        await dest.db
          .insertInto('_sluice_rejects')
          .values({
            download_id: 'dl-1',
            job: 'j',
            file_name: 'part-0.csv',
            line: 17,
            raw: 'a,"b',
            reason: 'unclosed quote',
            created_at: '2024-05-01T10:00:00.000Z',
          })
          .execute();
        const reject = await dest.db
          .selectFrom('_sluice_rejects')
          .select('line')
          .executeTakeFirstOrThrow();
        assert.equal(reject.line, 17);
        const count = await dest.db
          .selectFrom('_sluice_files')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(count.n), 2);

        await dest.ensureStateTables();
        const again = await dest.db.selectFrom('_sluice_files').selectAll().execute();
        assert.equal(again.length, 2, 'ensureStateTables keeps existing state');
      }));

    it('append creates the table with its types and reads values back', () =>
      use(async (dest) => {
        const table = spec('things', [
          ['id', 'integer'],
          ['flag', 'boolean'],
          ['price', 'real'],
          ['seen', 'timestamp'],
          ['doc', 'json'],
          ['name', 'text'],
        ]);
        const rows: Row[] = [
          {
            id: 1,
            flag: true,
            price: 0.1,
            seen: '2024-02-29T12:34:56.789Z',
            doc: '{"a":[1,2,{"b":"x\\ty"}],"s":"q\\"uote \\\\ back"}',
            name: 'tab\there',
          },
          {
            id: 2,
            flag: false,
            price: -2.5e-10,
            seen: '2024-01-01T00:00:00+02:00',
            doc: '[]',
            name: 'line\nbreak\r\nend',
          },
          { id: 3, flag: null, price: null, seen: null, doc: null, name: null },
          {
            id: 4,
            flag: true,
            price: 1e300,
            seen: '1999-12-31T23:59:59Z',
            doc: '"just text"',
            name: 'back\\slash \\N and \\t',
          },
          {
            id: 5,
            flag: false,
            price: 3,
            seen: '2024-06-01T08:00:00.000Z',
            doc: '{"n":null}',
            name: `quotes " and ' and ,;|`,
          },
          {
            id: 6,
            flag: true,
            price: 42.125,
            seen: '2024-06-01T08:00:00Z',
            doc: '{"u":"日本"}',
            name: 'unicode: café 日本 🐘',
          },
          { id: 7, flag: null, price: 0, seen: null, doc: '{}', name: '' },
          { id: 8, flag: null, price: null, seen: null, doc: null, name: '\\N' },
          {
            id: -9_007_199_254_740_991,
            flag: null,
            price: null,
            seen: null,
            doc: null,
            name: 'min safe',
          },
          {
            id: 9_007_199_254_740_991,
            flag: null,
            price: null,
            seen: null,
            doc: null,
            name: 'max safe',
          },
        ];
        assert.equal(await dest.tableExists('things'), false);
        assert.equal(await dest.describeTable('things'), undefined);
        await write(dest, table, rows, 'append');
        assert.equal(await dest.tableExists('things'), true);
        assert.deepEqual(await dest.describeTable('things'), table.columns);

        const back = await readNormalized(dest, 'things', ['id']);
        const expected = [...rows]
          .sort((a, b) => (a.id as number) - (b.id as number))
          .map((row) =>
            Object.fromEntries(
              table.columns.map((c) => {
                const v = row[c.name] ?? null;
                if (v === null) return [c.name, null];
                if (c.type === 'timestamp') return [c.name, new Date(v as string).toISOString()];
                if (c.type === 'json') return [c.name, JSON.parse(v as string)];
                return [c.name, v];
              }),
            ),
          );
        assert.deepEqual(back, expected);
      }));

    it('append with no rows still creates the table; rows missing a column get null', () =>
      use(async (dest) => {
        const table = spec('empty', [
          ['id', 'integer'],
          ['note', 'text'],
        ]);
        await write(dest, table, [], 'append');
        assert.deepEqual(await dest.describeTable('empty'), table.columns);
        await write(dest, table, [{ id: 1 }], 'append');
        assert.deepEqual(await readNormalized(dest, 'empty', ['id']), [{ id: 1, note: null }]);
      }));

    it('adds new columns on a later batch', () =>
      use(async (dest) => {
        await write(
          dest,
          spec('grow', [
            ['id', 'integer'],
            ['a', 'text'],
          ]),
          [{ id: 1, a: 'x' }],
          'append',
        );
        await write(
          dest,
          spec('grow', [
            ['id', 'integer'],
            ['a', 'text'],
            ['b', 'text'],
            ['c', 'boolean'],
          ]),
          [{ id: 2, a: 'y', b: 'new', c: true }],
          'append',
        );
        // A batch that names only some columns leaves the others alone.
        await write(
          dest,
          spec('grow', [
            ['id', 'integer'],
            ['d', 'real'],
          ]),
          [{ id: 3, d: 1.5 }],
          'append',
        );
        assert.deepEqual(typesOf(await dest.describeTable('grow')), {
          id: 'integer',
          a: 'text',
          b: 'text',
          c: 'boolean',
          d: 'real',
        });
        assert.deepEqual(await readNormalized(dest, 'grow', ['id']), [
          { id: 1, a: 'x', b: null, c: null, d: null },
          { id: 2, a: 'y', b: 'new', c: true, d: null },
          { id: 3, a: null, b: null, c: null, d: 1.5 },
        ]);
      }));

    it('widens integer -> real -> text and keeps the old values', () =>
      use(async (dest) => {
        const at = (type: ColumnType) =>
          spec('wide', [
            ['id', 'integer'],
            ['v', type],
          ]);
        await write(
          dest,
          at('integer'),
          [
            { id: 1, v: 1 },
            { id: 2, v: 5 },
          ],
          'append',
        );
        await write(dest, at('real'), [{ id: 3, v: 2.5 }], 'append');
        if (dest.capabilities.alterColumnType) {
          assert.equal(typesOf(await dest.describeTable('wide')).v, 'real');
        }
        const asReal = await readAll(dest, 'wide', ['id']);
        assert.deepEqual(
          asReal.map((r) => Number(r.v)),
          [1, 5, 2.5],
        );
        // A narrower type arriving later does not narrow the column.
        await write(dest, at('integer'), [{ id: 4, v: 7 }], 'append');
        await write(dest, at('text'), [{ id: 5, v: 'abc' }], 'append');
        if (dest.capabilities.alterColumnType) {
          assert.equal(typesOf(await dest.describeTable('wide')).v, 'text');
        }
        const asText = await readAll(dest, 'wide', ['id']);
        assert.deepEqual(
          asText.slice(0, 4).map((r) => Number(r.v)),
          [1, 5, 2.5, 7],
        );
        assert.equal(asText[4]?.v, 'abc');

        // boolean -> integer, and timestamp / json -> text.
        await write(
          dest,
          spec('wide2', [
            ['id', 'integer'],
            ['b', 'boolean'],
            ['t', 'timestamp'],
            ['j', 'json'],
          ]),
          [{ id: 1, b: true, t: '2024-03-04T05:06:07.000Z', j: '{"k":[1,2]}' }],
          'append',
        );
        await write(
          dest,
          spec('wide2', [
            ['id', 'integer'],
            ['b', 'integer'],
            ['t', 'text'],
            ['j', 'text'],
          ]),
          [{ id: 2, b: 10, t: 'not a date', j: 'not json' }],
          'append',
        );
        if (dest.capabilities.alterColumnType) {
          assert.deepEqual(typesOf(await dest.describeTable('wide2')), {
            id: 'integer',
            b: 'integer',
            t: 'text',
            j: 'text',
          });
        }
        const mixed = await readAll(dest, 'wide2', ['id']);
        assert.deepEqual(
          mixed.map((r) => Number(r.b)),
          [1, 10],
        );
        assert.equal(new Date(String(mixed[0]?.t)).toISOString(), '2024-03-04T05:06:07.000Z');
        assert.deepEqual(JSON.parse(String(mixed[0]?.j)), { k: [1, 2] });
        assert.equal(mixed[1]?.t, 'not a date');
        assert.equal(mixed[1]?.j, 'not json');
      }));

    it('merge upserts: updates, inserts, and the last duplicate of a batch wins', () =>
      use(async (dest) => {
        const table = spec(
          'people',
          [
            ['id', 'integer'],
            ['name', 'text'],
            ['age', 'integer'],
          ],
          ['id'],
        );
        await write(
          dest,
          table,
          [
            { id: 1, name: 'ann', age: 30 },
            { id: 2, name: 'bob', age: 40 },
          ],
          'merge',
        );
        await write(
          dest,
          table,
          [
            { id: 2, name: 'bobby', age: 41 },
            { id: 3, name: 'cy', age: 1 },
            { id: 3, name: 'cyd', age: 2 },
            { id: 3, name: 'cydney', age: 3 },
          ],
          'merge',
        );
        assert.deepEqual(await readNormalized(dest, 'people', ['id']), [
          { id: 1, name: 'ann', age: 30 },
          { id: 2, name: 'bobby', age: 41 },
          { id: 3, name: 'cydney', age: 3 },
        ]);

        // Several batches in one transaction, one of them adding a column.
        await dest.transaction(async (tx) => {
          await tx.writeRows(
            table,
            [
              { id: 1, name: 'anne', age: 31 },
              { id: 4, name: 'dee', age: 5 },
            ],
            'merge',
          );
          await tx.writeRows(table, [{ id: 4, name: 'deedee', age: 6 }], 'merge');
          const wider = spec(
            'people',
            [
              ['id', 'integer'],
              ['name', 'text'],
              ['email', 'text'],
            ],
            ['id'],
          );
          await tx.writeRows(
            wider,
            [
              { id: 2, name: 'rob', email: 'rob@example.com' },
              { id: 2, name: 'robert', email: 'r@e.com' },
            ],
            'merge',
          );
        });
        assert.deepEqual(await readNormalized(dest, 'people', ['id']), [
          { id: 1, name: 'anne', age: 31, email: null },
          { id: 2, name: 'robert', age: 41, email: 'r@e.com' },
          { id: 3, name: 'cydney', age: 3, email: null },
          { id: 4, name: 'deedee', age: 6, email: null },
        ]);
      }));

    it('merge works on a composite key', () =>
      use(async (dest) => {
        const table = spec(
          'sales',
          [
            ['region', 'text'],
            ['id', 'integer'],
            ['amount', 'real'],
          ],
          ['region', 'id'],
        );
        await write(
          dest,
          table,
          [
            { region: 'north', id: 1, amount: 10 },
            { region: 'south', id: 1, amount: 20 },
          ],
          'merge',
        );
        await write(
          dest,
          table,
          [
            { region: 'south', id: 1, amount: 21 },
            { region: 'north', id: 2, amount: 30 },
            { region: 'south', id: 1, amount: 22 },
          ],
          'merge',
        );
        assert.deepEqual(await readNormalized(dest, 'sales', ['region', 'id']), [
          { region: 'north', id: 1, amount: 10 },
          { region: 'north', id: 2, amount: 30 },
          { region: 'south', id: 1, amount: 22 },
        ]);
      }));

    it('a transaction that throws leaves nothing behind', () =>
      use(async (dest) => {
        await dest.ensureStateTables();
        const kept = spec('kept', [['id', 'integer']]);
        await write(dest, kept, [{ id: 1 }], 'append');
        const boom = new Error('boom');
        await assert.rejects(
          dest.transaction(async (tx) => {
            await tx.writeRows(kept, [{ id: 2 }, { id: 3 }], 'append');
            await tx.writeRows(
              spec('kept', [
                ['id', 'integer'],
                ['extra', 'text'],
              ]),
              [{ id: 4, extra: 'x' }],
              'append',
            );
            await tx.writeRows(spec('fresh', [['id', 'integer']], ['id']), [{ id: 1 }], 'merge');
            await tx.db.insertInto('_sluice_files').values(fileRow(0)).execute();
            const inside = await tx.db.selectFrom('_sluice_files').selectAll().execute();
            assert.equal(inside.length, 1, 'tx.db sees the transaction');
            throw boom;
          }),
          (error) => error === boom,
        );
        assert.deepEqual(await readNormalized(dest, 'kept', ['id']), [{ id: 1 }]);
        assert.deepEqual(typesOf(await dest.describeTable('kept')), { id: 'integer' });
        assert.equal(await dest.tableExists('fresh'), false);
        assert.deepEqual(await dest.db.selectFrom('_sluice_files').selectAll().execute(), []);

        // And the value returned by a committed transaction comes back.
        const result = await dest.transaction(async (tx) => {
          await tx.db.insertInto('_sluice_files').values(fileRow(5)).execute();
          return 'done';
        });
        assert.equal(result, 'done');
        assert.equal((await dest.db.selectFrom('_sluice_files').selectAll().execute()).length, 1);
      }));

    it('swapTable replaces the target, and later merges into it still work', () =>
      use(async (dest) => {
        const target = spec(
          'homes',
          [
            ['id', 'integer'],
            ['city', 'text'],
          ],
          ['id'],
        );
        await write(
          dest,
          target,
          [
            { id: 1, city: 'old' },
            { id: 9, city: 'gone' },
          ],
          'merge',
        );
        const staging = { ...target, name: 'homes__load' };
        await dest.transaction(async (tx) => {
          await tx.writeRows(
            staging,
            [
              { id: 1, city: 'new' },
              { id: 2, city: 'two' },
            ],
            'merge',
          );
          await dest.swapTable('homes__load', 'homes', tx);
        });
        assert.equal(await dest.tableExists('homes__load'), false);
        assert.deepEqual(await readNormalized(dest, 'homes', ['id']), [
          { id: 1, city: 'new' },
          { id: 2, city: 'two' },
        ]);
        await write(
          dest,
          target,
          [
            { id: 2, city: 'TWO' },
            { id: 3, city: 'three' },
          ],
          'merge',
        );
        assert.deepEqual(await readNormalized(dest, 'homes', ['id']), [
          { id: 1, city: 'new' },
          { id: 2, city: 'TWO' },
          { id: 3, city: 'three' },
        ]);
        if (dest.kind === 'postgres') {
          const indexes = await queryPostgres<{ indexname: string }>(
            `SELECT indexname FROM pg_indexes WHERE tablename = 'homes' AND schemaname = $1 ORDER BY indexname`,
            [schemaOf(dest)],
          );
          assert.deepEqual(
            indexes.map((i) => i.indexname),
            ['homes__sluice_key'],
          );
        }

        // A swap into a target that does not exist yet.
        await dest.transaction(async (tx) => {
          await tx.writeRows(spec('brand_new__load', [['id', 'integer']]), [{ id: 7 }], 'append');
          await dest.swapTable('brand_new__load', 'brand_new', tx);
        });
        assert.deepEqual(await readNormalized(dest, 'brand_new', ['id']), [{ id: 7 }]);

        // A swap rolled back leaves the old target in place.
        await assert.rejects(
          dest.transaction(async (tx) => {
            await tx.writeRows(
              spec('homes__load', [
                ['id', 'integer'],
                ['city', 'text'],
              ]),
              [{ id: 100, city: 'x' }],
              'append',
            );
            await dest.swapTable('homes__load', 'homes', tx);
            throw new Error('abort swap');
          }),
          /abort swap/,
        );
        assert.equal((await readAll(dest, 'homes', ['id'])).length, 3);
        assert.equal(await dest.tableExists('homes__load'), false);
      }));

    it('deleteWhereIn deletes matching rows only', () =>
      use(async (dest) => {
        const table = spec('kids', [
          ['id', 'integer'],
          ['parent', 'text'],
        ]);
        await write(
          dest,
          table,
          [1, 2, 3, 4, 5].map((id) => ({ id, parent: 'abcab'[id - 1] ?? null })),
          'append',
        );
        await dest.transaction(async (tx) => {
          await tx.deleteWhereIn('kids', 'parent', ['a', 'c']);
          await tx.deleteWhereIn('kids', 'id', [5]);
          await tx.deleteWhereIn('kids', 'id', []);
        });
        assert.deepEqual(await readNormalized(dest, 'kids', ['id']), [{ id: 2, parent: 'b' }]);
        await assert.rejects(
          dest.transaction(async (tx) => {
            await tx.deleteWhereIn('kids', 'id', [2]);
            throw new Error('undo');
          }),
          /undo/,
        );
        assert.equal((await readAll(dest, 'kids', ['id'])).length, 1);
      }));

    it('dropTable drops, and tolerates a missing table', () =>
      use(async (dest) => {
        await write(dest, spec('doomed', [['id', 'integer']]), [{ id: 1 }], 'append');
        await dest.dropTable('doomed');
        assert.equal(await dest.tableExists('doomed'), false);
        await dest.dropTable('doomed');
      }));

    it('lock: a second non-waiting lock fails until the first is released', () =>
      use(async (dest) => {
        const first = await dest.lock('pipeline-a', false);
        assert.ok(first, 'first lock taken');
        assert.equal(await dest.lock('pipeline-a', false), undefined);
        const other = await dest.lock('pipeline-b', false);
        assert.ok(other, 'another name is independent');
        await other.release();
        await first.release();
        const third = await dest.lock('pipeline-a', false);
        assert.ok(third, 'free again after release');

        let acquired = false;
        const waiting = dest.lock('pipeline-a', true).then((handle) => {
          acquired = true;
          return handle;
        });
        await new Promise((resolve) => setTimeout(resolve, 100));
        assert.equal(acquired, false, 'a waiting lock waits');
        await third.release();
        const fourth = await waiting;
        assert.ok(fourth);
        await fourth.release();
        await fourth.release();
      }));

    it('odd table and column names are quoted safely', () =>
      use(async (dest) => {
        const table = spec(
          'we"ird table',
          [
            ['Mixed Case', 'integer'],
            ['quo"te', 'text'],
            ['select', 'text'],
          ],
          ['Mixed Case'],
        );
        await write(dest, table, [{ 'Mixed Case': 1, 'quo"te': 'a', select: 'b' }], 'merge');
        await write(dest, table, [{ 'Mixed Case': 1, 'quo"te': 'c', select: 'd' }], 'merge');
        assert.deepEqual(await readNormalized(dest, 'we"ird table', ['Mixed Case']), [
          { 'Mixed Case': 1, 'quo"te': 'c', select: 'd' },
        ]);
      }));

    if (h.kind === 'postgres') {
      it('every pooled connection starts in the schema, in UTC, keeping the URL options', async () => {
        const schema = `${randomSchemaName()} odd "name"`;
        const url = new URL(postgresUrl());
        url.searchParams.set('options', '-c statement_timeout=123456');
        const dest = await openPostgresDestination(url.toString(), { schema });
        try {
          const db = dest.db as unknown as Kysely<AnyDatabase>;
          // Several connections at once, so that more than one pooled client is checked.
          const settings = await Promise.all(
            [1, 2, 3].map(() =>
              sql<{
                path: string;
                tz: string;
                timeout: string;
              }>`SELECT current_schema() AS path, current_setting('TimeZone') AS tz, current_setting('statement_timeout') AS timeout, pg_sleep(0.05)`.execute(
                db,
              ),
            ),
          );
          for (const { rows } of settings) {
            assert.deepEqual(
              { ...rows[0], pg_sleep: undefined },
              { path: schema, tz: 'UTC', timeout: '123456ms', pg_sleep: undefined },
            );
          }
        } finally {
          await dest.close();
          await dropSchema(schema);
        }
      });

      it('description and errors never contain the password', async () => {
        const secret = 'S3cr3t-pa55word';
        const base = new URL(postgresUrl());
        const withPassword = new URL(base);
        withPassword.password = secret;
        const schema = randomSchemaName();
        // With trust auth the password is not asked for; the description must still drop it.
        let dest: Destination | undefined;
        try {
          dest = await openPostgresDestination(withPassword.toString(), { schema });
        } catch (error) {
          assert.ok(!String((error as Error).message).includes(secret));
        }
        if (dest !== undefined) {
          try {
            assert.ok(!dest.description.includes(secret), dest.description);
            assert.ok(dest.description.includes(base.hostname));
            assert.ok(dest.description.includes(schema));
          } finally {
            await dest.close();
            await dropSchema(schema);
          }
        }
        const unreachable = new URL(withPassword);
        unreachable.hostname = '127.0.0.1';
        unreachable.port = '1';
        const error = await openPostgresDestination(unreachable.toString(), {}).then(
          () => assert.fail('expected a connection error'),
          (e: unknown) => e as Error,
        );
        assert.ok(!error.message.includes(secret), error.message);
        assert.ok(!String(error.stack).includes(secret));
        assert.ok(!JSON.stringify({ ...error }).includes(secret));
        assert.match(error.message, /127\.0\.0\.1:1/);
      });
    }
  });
}

/** The schema a postgres destination was opened on, from its description. */
function schemaOf(dest: Destination): string {
  const match = /\(schema (.*)\)$/.exec(dest.description);
  assert.ok(match, dest.description);
  return match[1]!;
}
