/**
 * The destination contract: one suite, run against every destination named in
 * `SLUICE_TEST_DESTINATIONS` (comma list, default `sqlite,postgres`). The destination is used
 * through its sealed interface only; what it wrote is read back over a connection of the
 * test's own, as an analyst would.
 *
 * PostgreSQL comes from `SLUICE_TEST_POSTGRES_URL` (default a local trust-auth server); each test
 * gets its own random schema, dropped afterwards. When PostgreSQL cannot be reached the postgres
 * part skips with one line, except with `CI=true`, where it fails.
 */

import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import type { FieldMap } from '../../src/catalog.js';
import { SluiceError } from '../../src/errors.js';
import type {
  ColumnType,
  Destination,
  OpenDestinationOptions,
  Row,
  WriteTarget,
} from '../../src/load/destination.js';
import { destinations, openDestination, registerDestination } from '../../src/load/index.js';
import { STATE_VERSION } from '../../src/load/state-tables.js';
import { silentLogger } from '../../src/log.js';
import { loadPipeline, noProgress, runPipeline } from '../../src/pipeline/index.js';
import { encodeCopyText } from '../../src/schema/copy-text.js';
import { META_COLUMNS, packRows, type TableDef } from '../../src/schema/plan.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { activeResources, lingering } from '../helpers/resources.js';
import { fake } from './fake/index.js';

interface Opened {
  dest: Destination;
  /** Rows of a query, over the test's own connection. */
  all<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  /** Runs statements over the test's own writable connection. */
  raw(statements: string[]): Promise<void>;
  /** Names of the tables there are. */
  tables(): Promise<string[]>;
  /** Declared column types as the database reports them. */
  declared(table: string): Promise<Record<string, string>>;
  indexes(table: string): Promise<string[]>;
  /** Opens the same destination again (another process's view of it). */
  reopen(options?: OpenDestinationOptions): Promise<Destination>;
  /** PostgreSQL: the same destination, with these session settings in the URL's `options`. */
  withSettings?(settings: string): Promise<Destination>;
  /**
   * A session of the test's own that stays open between statements, where another session's
   * transaction can hold a table while the destination works (PostgreSQL).
   */
  session?(): Promise<{ query(sql: string): Promise<unknown>; end(): Promise<void> }>;
  /** The arguments of node for hold-lock.mjs (URL, lock name, settings). */
  lockHolder(name: string): string[];
  /** Takes the lock `name` away from the handle holding it (breakLock). */
  breakLock(name: string): Promise<void>;
}

/** What a destination is expected to be and do where destinations differ. */
interface Expects {
  maxIdentifierBytes: number;
  alterColumnType: 'in-place' | 'rebuild';
  maxColumns: number;
  /** The types the database declares for sluice's column types. */
  declared: Record<string, string>;
  /** The state tables of sluice 0.1 on this destination, where there were any. */
  v1State?: string[];
  /** The database itself refuses a value sluice's checks let through (a bad timestamp). */
  refusesValues: boolean;
  /** A table may hold columns that differ only in case (made by an earlier sluice). */
  caseTwins: boolean;
  /**
   * One process at a time opens the database (DuckDB): another process holding it makes the
   * open itself fail with SLUICE_LOCKED, or wait.
   */
  processExclusive?: boolean;
  /** It reads a result file itself (`FileTransaction.readFile`, DuckDB). */
  readsFiles: boolean;
}

interface Harness {
  kind: string;
  skip?: string;
  expects: Expects;
  open(): Promise<{ opened: Opened; cleanup(): Promise<void> }>;
}

// A destination of the tests' own, registered as a plugin would be (its one line): the suite
// runs on it too. A second process (hold-lock.mjs) registers it from the same module.
const PLUGIN = fileURLToPath(new URL('./fake/index.ts', import.meta.url));
registerDestination(fake);

/** Every registered destination, or those SLUICE_TEST_DESTINATIONS names (plugins too). */
const kinds = destinations()
  .map((d) => d.name)
  .filter((name) => {
    const chosen = process.env.SLUICE_TEST_DESTINATIONS;
    return (
      chosen === undefined || chosen.split(',').some((k) => k.trim() === name) || name === fake.name
    );
  });

const LOCK_SCRIPT = fileURLToPath(new URL('./hold-lock.mjs', import.meta.url));

/** The state tables of sluice 0.1, as each destination created them (they had drifted). */
const V1_STATE: Record<string, string[]> = {
  sqlite: [
    'create table "_sluice_runs" ("run_id" text primary key, "pipeline" text not null, "started_at" text not null, "finished_at" text, "status" text not null, "summary" text)',
    'create table "_sluice_downloads" ("attempt_id" text primary key, "pipeline" text not null, "job" text not null, "spec_hash" text not null, "api" text not null, "download_id" text, "status" text not null, "target_table" text not null, "load_table" text not null, "num_found" integer, "num_records" integer, "requested_at" text not null, "started_at" text, "updated_at" text not null, "finished_at" text, "run_id" text not null, "message" text)',
    'create index "_sluice_downloads_by_job" on "_sluice_downloads" ("pipeline", "job", "requested_at")',
    'create table "_sluice_files" ("download_id" text not null, "file_index" integer not null, "file_name" text not null, "table_name" text not null, "rows_loaded" integer not null, "rows_rejected" integer not null, "bytes" bigint not null, "loaded_at" text not null, "run_id" text not null, constraint "_sluice_files_pk" primary key ("download_id", "file_index"))',
    'create table "_sluice_rejects" ("download_id" text not null, "job" text not null, "file_name" text not null, "line" integer not null, "raw" text not null, "reason" text not null, "created_at" text not null)',
    'create index "_sluice_rejects_by_download" on "_sluice_rejects" ("download_id", "file_name")',
  ],
  postgres: [
    'CREATE TABLE "_sluice_runs" (run_id text PRIMARY KEY, pipeline text NOT NULL, started_at text NOT NULL, finished_at text, status text NOT NULL, summary text)',
    'CREATE TABLE "_sluice_downloads" (attempt_id text PRIMARY KEY, pipeline text NOT NULL, job text NOT NULL, spec_hash text NOT NULL, api text NOT NULL, download_id text, status text NOT NULL, target_table text NOT NULL, load_table text NOT NULL, num_found bigint, num_records bigint, requested_at text NOT NULL, started_at text, updated_at text NOT NULL, finished_at text, run_id text NOT NULL, message text)',
    'CREATE TABLE "_sluice_files" (download_id text NOT NULL, file_index bigint NOT NULL, file_name text NOT NULL, table_name text NOT NULL, rows_loaded bigint NOT NULL, rows_rejected bigint NOT NULL, bytes bigint NOT NULL, loaded_at text NOT NULL, run_id text NOT NULL, UNIQUE (download_id, file_index))',
    'CREATE TABLE "_sluice_rejects" (download_id text NOT NULL, job text NOT NULL, file_name text NOT NULL, line bigint NOT NULL, raw text NOT NULL, reason text NOT NULL, created_at text NOT NULL)',
    'CREATE INDEX "_sluice_downloads__pipeline" ON "_sluice_downloads" (pipeline, job)',
    'CREATE INDEX "_sluice_rejects__download" ON "_sluice_rejects" (download_id)',
  ],
};

/**
 * The suite's view of a kind: its entry's capabilities, and fresh targets as the entry makes
 * them (`testTargets`), read back over connections of the test's own.
 */
async function harness(kind: string): Promise<Harness> {
  const entry = destinations().find((d) => d.name === kind)!;
  const targets = await entry.testTargets?.();
  if (targets === undefined) {
    throw new Error(`destination ${kind} is registered, but its entry makes no testTargets()`);
  }
  const skip = await targets.skipReason();
  const d = targets.declared;
  const plugin = kind === fake.name ? PLUGIN : undefined;
  return {
    kind,
    ...(skip === undefined ? {} : { skip }),
    expects: {
      maxIdentifierBytes: entry.capabilities.maxIdentifierBytes,
      alterColumnType: entry.capabilities.alterColumnType,
      maxColumns: entry.capabilities.maxColumns,
      declared: {
        id: d.integer,
        flag: d.boolean,
        price: d.real,
        seen: d.timestamp,
        doc: d.json,
        name: d.text,
      },
      ...(V1_STATE[kind] === undefined ? {} : { v1State: V1_STATE[kind] }),
      refusesValues: targets.refusesValues,
      caseTwins: targets.caseTwins,
      processExclusive: targets.oneProcess,
      readsFiles: entry.capabilities.readsFiles === true,
    },
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'sluice-contract-'));
      const t = await targets.fresh(dir, 'contract');
      const open = (url: string, options: OpenDestinationOptions = {}) =>
        openDestination(url, { settings: t.settings, ...options });
      const dest = await open(t.url);
      const opened: Opened = {
        dest,
        all: (sql) => t.all(sql),
        declared: async (table) =>
          Object.fromEntries((await t.columns(table)).map((c) => [c.name, c.type])),
        indexes: (table) => t.indexes(table),
        raw: (statements) => t.exec(...statements),
        tables: () => t.tables(''),
        reopen: (options = {}) => open(t.url, options),
        ...(t.session ? { session: () => t.session!() } : {}),
        ...(t.urlWithSettings
          ? { withSettings: (settings: string) => open(t.urlWithSettings!(settings)) }
          : {}),
        lockHolder: (name) => [
          ...(plugin ? ['--import', 'tsx'] : []),
          LOCK_SCRIPT,
          t.url,
          name,
          JSON.stringify(t.settings),
          ...(plugin ? [plugin] : []),
        ],
        breakLock: (name) => t.breakLock(name),
      };
      return {
        opened,
        async cleanup() {
          await dest.close();
          await t.dispose();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

const harnesses = await Promise.all(kinds.map(harness));

/** A value read back, in a form both destinations agree on for a column of `type`. */
function norm(type: ColumnType | undefined, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'boolean':
      return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
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

async function readNormalized(o: Opened, table: string, orderBy: string[]) {
  const columns = (await o.dest.describeTable(table)) ?? [];
  const types = new Map(columns.map((c) => [c.name, c.type]));
  const order = orderBy.map((c) => `"${c}"`).join(', ');
  const rows = await o.all(`select * from "${table.replaceAll('"', '""')}" order by ${order}`);
  return rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([name, value]) => [name, norm(types.get(name), value)]),
    ),
  );
}

function target(table: string, key: string[] = [], extra: Partial<WriteTarget> = {}): WriteTarget {
  return { table, mode: key.length > 0 ? 'merge' : 'append', key, hints: {}, ...extra };
}

function def(
  name: string,
  columns: [string, ColumnType][],
  key: string[] = [],
  extra: Partial<TableDef> = {},
): TableDef {
  return {
    name,
    columns: columns.map(([n, type]) => ({ name: n, type })),
    key,
    hints: {},
    ...extra,
  };
}

async function write(dest: Destination, to: WriteTarget, rows: Row[]) {
  await dest.loadFile((tx) => tx.write(to, rows));
}

function typesOf(columns: { name: string; type: ColumnType }[] | undefined) {
  return Object.fromEntries((columns ?? []).map((c) => [c.name, c.type]));
}

/** Rows as plain objects (the load path uses null-prototype rows). */
function rows(...list: Record<string, unknown>[]): Row[] {
  return list.map((r) => Object.assign(Object.create(null), r) as Row);
}

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

const attempt = {
  attempt_id: 'a-1',
  pipeline: 'p',
  job: 'j',
  spec_hash: 'h',
  api: 'v4',
  download_id: 'dl-1',
  status: 'started',
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
  load_hash: 'l',
  write_mode: 'merge',
  data_type: 'properties',
  query: 'city:Austin',
  format: 'csv',
  num_requested: 42,
  cursor_from: null,
  credits: null,
  load_settings: null,
  stage: 'extract',
};

for (const h of harnesses) {
  describe(`destination contract: ${h.kind}`, () => {
    if (h.skip !== undefined) {
      it(`${h.kind} destination`, (t) => {
        t.skip(h.skip);
      });
      return;
    }

    /** Runs `work` against a fresh destination, cleaned up afterwards. */
    async function use(work: (o: Opened) => Promise<void>): Promise<void> {
      const { opened, cleanup } = await h.open();
      try {
        await work(opened);
      } finally {
        await cleanup();
      }
    }

    it('reports its kind and true capabilities', () =>
      use(async ({ dest }) => {
        assert.equal(dest.kind, h.kind);
        const c = dest.capabilities;
        assert.equal(c.maxIdentifierBytes, h.expects.maxIdentifierBytes);
        assert.equal(c.alterColumnType, h.expects.alterColumnType);
        assert.equal(c.concurrentWriters >= 1, true);
        assert.equal(c.maxColumns, h.expects.maxColumns);
        assert.equal(dest.naming.maxBytes, c.maxIdentifierBytes, 'naming reads the limit');
        assert.ok(dest.description.length > 0);
      }));

    it('creates the state tables idempotently, at the current version, numbers as numbers', () =>
      use(async (o) => {
        const { dest } = o;
        assert.equal(await dest.hasState(), false);
        await dest.ensureState();
        await dest.ensureState();
        assert.equal(await dest.hasState(), true);
        const [meta] = await o.all<{ value: string }>(
          `select value from _sluice_meta where key = 'state_version'`,
        );
        assert.equal(meta?.value, String(STATE_VERSION));
        await dest.state.insertAttempt({ ...attempt });
        await dest.loadFile(async (tx) => {
          await tx.recordFile(fileRow(0));
          await tx.recordFile(fileRow(1));
          await tx.addRejects([
            {
              download_id: 'dl-1',
              job: 'j',
              file_name: 'part-0.csv',
              line: 17,
              raw: 'a,"b',
              reason: 'unclosed quote',
              created_at: '2024-05-01T10:00:00.000Z',
            },
          ]);
        });
        await assert.rejects(
          dest.loadFile((tx) => tx.recordFile(fileRow(0))),
          'a file is loaded once',
        );
        const files = await dest.state.loadedFiles('dl-1');
        assert.deepEqual([...files.keys()], [0, 1]);
        assert.deepEqual(files.get(0), fileRow(0));
        const open = await dest.state.openAttempt('p', 'j');
        assert.equal(open?.num_found, 42);
        assert.equal(open?.num_records, null);
        const recent = await dest.state.recent('p', 5);
        assert.deepEqual(
          recent.rejects.map((r) => [r.download_id, Number(r.count)]),
          [['dl-1', 1]],
        );
        await dest.ensureState();
        assert.equal((await dest.state.loadedFiles('dl-1')).size, 2, 'existing state is kept');
      }));

    it('migrates the state tables of sluice 0.1 in place, keeping their rows', (t) =>
      use(async (o) => {
        const { dest } = o;
        if (h.expects.v1State === undefined) {
          t.skip('sluice 0.1 never wrote to this destination');
          return;
        }
        // Made as sluice 0.1 made them on this destination, with a row in each.
        await o.raw(h.expects.v1State);
        await o.raw([
          `insert into _sluice_runs values ('r0', 'p', '2024-01-01T00:00:00Z', null, 'succeeded', null)`,
          `insert into _sluice_downloads values ('a0', 'p', 'j', 'h', 'v4', 'd0', 'loading', 't', 't', 5, 5, '2024-01-01T00:00:00Z', null, '2024-01-01T00:00:00Z', null, 'r0', null)`,
          `insert into _sluice_files values ('d0', 0, 'd0_0.csv', 't', 5, 0, 100, '2024-01-01T00:00:00Z', 'r0')`,
        ]);
        assert.equal(await dest.hasState(), true);
        await dest.ensureState();
        const [meta] = await o.all<{ value: string }>(
          `select value from _sluice_meta where key = 'state_version'`,
        );
        assert.equal(meta?.value, String(STATE_VERSION));
        const open = await dest.state.openAttempt('p', 'j');
        assert.equal(open?.download_id, 'd0', 'the open attempt is still found');
        assert.equal(open?.load_hash, null, 'new columns are there, empty for old rows');
        assert.equal((await dest.state.loadedFiles('d0')).size, 1);
        await dest.state.saveJob({
          run_id: 'r0',
          pipeline: 'p',
          job: 'j',
          status: 'loaded',
          stage: 'finish',
          started_at: '2024-01-01T00:00:00Z',
          finished_at: null,
          download_ids: 'd0',
          error_code: null,
          error_message: null,
          summary: null,
          spec_hash: null,
          load_hash: null,
        });
        assert.equal((await dest.state.jobsOfRuns(['r0'])).length, 1, 'new tables are made');
        await dest.ensureState();
      }));

    it('migrates the state tables of version 3 in place: runs gain what they were asked for', () =>
      use(async (o) => {
        const { dest } = o;
        await dest.ensureState();
        await dest.state.startRun({
          runId: 'r3',
          pipeline: 'p',
          startedAt: '2026-11-26T00:00:00Z',
          resumes: null,
          runKey: '2026-11-26',
        });
        // As version 3 left them: no selected jobs, no batch (the index goes with the columns).
        await o.raw([
          'drop index _sluice_runs_by_pipeline',
          'alter table _sluice_runs drop column selected_jobs',
          'alter table _sluice_runs drop column batch_id',
          'alter table _sluice_runs drop column batch_members',
          `update _sluice_meta set value = '3' where key = 'state_version'`,
        ]);
        await dest.close();
        const again = await o.reopen();
        try {
          await again.ensureState();
          const [meta] = await o.all<{ value: string }>(
            `select value from _sluice_meta where key = 'state_version'`,
          );
          assert.equal(meta?.value, String(STATE_VERSION));
          const [old] = await again.state.runsByKey('p', '2026-11-26');
          assert.equal(old?.run_id, 'r3', 'the run of version 3 is kept');
          assert.equal(old?.selected_jobs, null, 'its unit is unknown');
          const members = '[["p",["homes"]]]';
          await again.state.startRun({
            runId: 'r4',
            pipeline: 'p',
            startedAt: '2026-11-27T00:00:00Z',
            resumes: null,
            selectedJobs: '["homes"]',
            batch: { id: 'b1', members },
          });
          const [run] = await again.state.runsOfBatches('p', members, 5);
          assert.deepEqual(
            [run?.run_id, run?.selected_jobs, run?.batch_id],
            ['r4', '["homes"]', 'b1'],
          );
          assert.ok(
            (await o.indexes('_sluice_runs')).includes('_sluice_runs_by_pipeline'),
            'the index is made again',
          );
        } finally {
          await again.close();
        }
      }));

    it('refuses state tables written by a newer sluice', () =>
      use(async (o) => {
        await o.dest.ensureState();
        await o.raw([
          `update _sluice_meta set value = '${STATE_VERSION + 1}' where key = 'state_version'`,
        ]);
        const fresh = await o.reopen();
        try {
          await assert.rejects(fresh.ensureState(), (e: Error & { code?: string }) => {
            assert.equal(e.code, 'SLUICE_STATE_VERSION');
            assert.match(e.message, /newer sluice.*upgrade sluice/);
            return true;
          });
        } finally {
          await fresh.close();
        }
      }));

    it('makes tables up front with their types, and reads values back', () =>
      use(async (o) => {
        const { dest } = o;
        const things = def('things', [
          ['id', 'integer'],
          ['flag', 'boolean'],
          ['price', 'real'],
          ['seen', 'timestamp'],
          ['doc', 'json'],
          ['name', 'text'],
        ]);
        assert.equal(await dest.describeTable('things'), undefined);
        await dest.prepareTables([things]);
        assert.deepEqual(await dest.describeTable('things'), things.columns);
        assert.deepEqual(await o.declared('things'), h.expects.declared);
        const input = rows(
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
            id: 6,
            flag: true,
            price: 42.125,
            seen: '2024-06-01T08:00:00Z',
            doc: '{"u":"日本"}',
            name: 'unicode: café 日本 🐘',
          },
          { id: 7, flag: null, price: 0, seen: null, doc: '{}', name: '' },
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
        );
        // The catalogue's hints say which text is a date and which is JSON.
        const hints: FieldMap = { seen: { kind: 'date' }, doc: { kind: 'objects', fields: {} } };
        await write(dest, target('things', [], { hints }), input);
        const back = await readNormalized(o, 'things', ['id']);
        const expected = [...input]
          .sort((a, b) => (a.id as number) - (b.id as number))
          .map((row) =>
            Object.fromEntries(
              things.columns.map((c) => {
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

    it('creates a table from the rows alone; later batches add columns; absent fields are NULL', () =>
      use(async (o) => {
        const { dest } = o;
        await write(dest, target('grow'), rows({ id: 1, a: 'x' }));
        await write(dest, target('grow'), rows({ id: 2, a: 'y', b: 'new', c: true }));
        await write(dest, target('grow'), rows({ id: 3, d: 1.5 }));
        assert.deepEqual(typesOf(await dest.describeTable('grow')), {
          id: 'integer',
          a: 'text',
          b: 'text',
          c: 'boolean',
          d: 'real',
        });
        assert.deepEqual(await readNormalized(o, 'grow', ['id']), [
          { id: 1, a: 'x', b: null, c: null, d: null },
          { id: 2, a: 'y', b: 'new', c: true, d: null },
          { id: 3, a: null, b: null, c: null, d: 1.5 },
        ]);
      }));

    it('widens integer -> real -> text and boolean, timestamp, json -> wider, on every destination', () =>
      use(async (o) => {
        const { dest } = o;
        await write(dest, target('wide'), rows({ id: 1, v: 1 }, { id: 2, v: 1999 }));
        await write(dest, target('wide'), rows({ id: 3, v: 2.5 }));
        assert.equal(typesOf(await dest.describeTable('wide')).v, 'real');
        assert.deepEqual(
          (await o.all<{ v: number }>('select v from wide order by id')).map((r) => Number(r.v)),
          [1, 1999, 2.5],
        );
        // A narrower type arriving later does not narrow the column.
        await write(dest, target('wide'), rows({ id: 4, v: 7 }));
        assert.equal(typesOf(await dest.describeTable('wide')).v, 'real');
        await write(dest, target('wide'), rows({ id: 5, v: 'abc' }, { id: 6, v: 2000 }));
        assert.equal(typesOf(await dest.describeTable('wide')).v, 'text');
        // Whole numbers read back as whole numbers once the column is text, written before the
        // widening or after it, the same on every destination.
        assert.deepEqual(
          (await o.all<{ v: string }>('select v from wide order by id')).map((r) => r.v),
          ['1', '1999', '2.5', '7', 'abc', '2000'],
        );

        await write(
          dest,
          target('wide2', [], {
            hints: { t: { kind: 'date' }, j: { kind: 'list', of: 'string' } } satisfies FieldMap,
          }),
          rows({ id: 1, b: true, t: '2024-03-04T05:06:07.000Z', j: '["k"]' }),
        );
        assert.deepEqual(typesOf(await dest.describeTable('wide2')), {
          id: 'integer',
          b: 'boolean',
          t: 'timestamp',
          j: 'json',
        });
        await write(dest, target('wide2'), rows({ id: 2, b: 10, t: 'not a date', j: 'not json' }));
        assert.deepEqual(typesOf(await dest.describeTable('wide2')), {
          id: 'integer',
          b: 'integer',
          t: 'text',
          j: 'text',
        });
        const mixed = await o.all<Record<string, unknown>>('select * from wide2 order by id');
        assert.deepEqual(
          mixed.map((r) => Number(r.b)),
          [1, 10],
        );
        assert.equal(new Date(String(mixed[0]?.t)).toISOString(), '2024-03-04T05:06:07.000Z');
        assert.deepEqual(JSON.parse(String(mixed[0]?.j)), ['k']);
        assert.equal(mixed[1]?.t, 'not a date');
        assert.equal(mixed[1]?.j, 'not json');
      }));

    it('a schema contract binds a table made before: freeze refuses new and wider columns, discard leaves new ones out', () =>
      use(async (o) => {
        const { dest } = o;
        const freeze = { newColumns: 'freeze', typeChanges: 'freeze' } as const;
        await write(dest, target('bound'), rows({ id: 1, v: 1 }));
        // A table the handle makes takes the columns of its data, whatever the contract.
        await write(dest, target('fresh', [], { contract: freeze }), rows({ id: 1 }));
        await write(dest, target('fresh', [], { contract: freeze }), rows({ id: 2, w: 'x' }));
        assert.equal(typesOf(await dest.describeTable('fresh')).w, 'text');
        const later = await o.reopen();
        try {
          const bound = (contract: WriteTarget['contract']) =>
            target('bound', [], contract === undefined ? {} : { contract });
          await assert.rejects(
            write(later, bound(freeze), rows({ id: 2, w: 'new' })),
            (e: Error) => {
              assert.equal((e as { code?: string }).code, 'SLUICE_SCHEMA_CONTRACT');
              assert.match(e.message, /no column for: w;/);
              return true;
            },
          );
          await assert.rejects(
            write(later, bound(freeze), rows({ id: 3, v: 2.5 })),
            /needs v \(integer -> real\)/,
          );
          const told: string[] = [];
          const discard = {
            newColumns: 'discard',
            typeChanges: 'widen',
            onDiscard: (table: string, fields: string[]) => told.push(`${table}: ${fields}`),
          } as const;
          await write(later, bound(discard), rows({ id: 4, v: 5, w: 'gone', x: 'too' }));
          assert.deepEqual(told, ['bound: w,x']);
          assert.deepEqual(typesOf(await later.describeTable('bound')), {
            id: 'integer',
            v: 'integer',
          });
          assert.deepEqual(
            (await o.all<{ id: number }>('select id from bound order by id')).map((r) =>
              Number(r.id),
            ),
            [1, 4],
          );
        } finally {
          await later.close();
        }
      }));

    it('widening a key column keeps the table mergeable', () =>
      use(async (o) => {
        const { dest } = o;
        await write(dest, target('keyed', ['id']), rows({ id: 1, v: 'a' }));
        await write(dest, target('keyed', ['id']), rows({ id: 'x-2', v: 'b' }, { id: 1, v: 'c' }));
        assert.equal(typesOf(await dest.describeTable('keyed')).id, 'text');
        assert.deepEqual(await readNormalized(o, 'keyed', ['id']), [
          { id: '1', v: 'c' },
          { id: 'x-2', v: 'b' },
        ]);
        assert.deepEqual(await o.indexes('keyed'), ['keyed__sluice_key']);
      }));

    it('merge upserts: updates, inserts, and the last duplicate of a batch wins', () =>
      use(async (o) => {
        const { dest } = o;
        const people = target('people', ['id']);
        await write(
          dest,
          people,
          rows({ id: 1, name: 'ann', age: 30 }, { id: 2, name: 'bob', age: 40 }),
        );
        await write(
          dest,
          people,
          rows(
            { id: 2, name: 'bobby', age: 41 },
            { id: 3, name: 'cy', age: 1 },
            { id: 3, name: 'cyd', age: 2 },
            { id: 3, name: 'cydney', age: 3 },
          ),
        );
        assert.deepEqual(await readNormalized(o, 'people', ['id']), [
          { id: 1, name: 'ann', age: 30 },
          { id: 2, name: 'bobby', age: 41 },
          { id: 3, name: 'cydney', age: 3 },
        ]);
        // Several batches in one transaction, one of them adding a column.
        await dest.loadFile(async (tx) => {
          await tx.write(
            people,
            rows({ id: 1, name: 'anne', age: 31 }, { id: 4, name: 'dee', age: 5 }),
          );
          await tx.write(people, rows({ id: 4, name: 'deedee', age: 6 }));
          await tx.write(
            people,
            rows(
              { id: 2, name: 'rob', age: 41, email: 'rob@example.com' },
              { id: 2, name: 'robert', age: 41, email: 'r@e.com' },
            ),
          );
        });
        assert.deepEqual(await readNormalized(o, 'people', ['id']), [
          { id: 1, name: 'anne', age: 31, email: null },
          { id: 2, name: 'robert', age: 41, email: 'r@e.com' },
          { id: 3, name: 'cydney', age: 3, email: null },
          { id: 4, name: 'deedee', age: 6, email: null },
        ]);
      }));

    it('merge works on a composite key', () =>
      use(async (o) => {
        const sales = target('sales', ['region', 'id']);
        await write(
          o.dest,
          sales,
          rows({ region: 'north', id: 1, amount: 10.5 }, { region: 'south', id: 1, amount: 20.5 }),
        );
        await write(
          o.dest,
          sales,
          rows(
            { region: 'south', id: 1, amount: 21.5 },
            { region: 'north', id: 2, amount: 30.5 },
            { region: 'south', id: 1, amount: 22.5 },
          ),
        );
        assert.deepEqual(await readNormalized(o, 'sales', ['region', 'id']), [
          { region: 'north', id: 1, amount: 10.5 },
          { region: 'north', id: 2, amount: 30.5 },
          { region: 'south', id: 1, amount: 22.5 },
        ]);
      }));

    it('rows a parse worker wrote as COPY text load as their values do, refused ones aside', () =>
      use(async (o) => {
        const { dest } = o;
        const hints: FieldMap = { j: { kind: 'list', of: 'string' }, at: { kind: 'date' } };
        const meta = { _sluice_download_id: 'dl-1', _sluice_loaded_at: '2024-05-01T10:00:00Z' };
        /** Writes `list` to both tables: as values to one, as COPY text to the other. */
        const both = async (list: Row[], types?: Record<string, ColumnType>) => {
          const made = packRows(list, hints);
          const columns = new Map([...made.columns, ...Object.entries(types ?? {})]);
          const known = new Map([
            ...columns,
            ...META_COLUMNS.map((c) => [c.name, c.type] as const),
          ]);
          const encoded = encodeCopyText(made.packed, columns, ['id']);
          assert.ok(encoded?.text, 'the rows are COPY text');
          const refused: unknown[][] = [];
          for (const [table, packed] of [
            ['as_values', made.packed],
            ['as_text', encoded],
          ] as const) {
            await dest.loadFile(async (tx) => {
              const to = target(table, ['id'], { hints });
              refused.push(await tx.write(to, { ...packed, constants: meta }, known));
            });
          }
          const reasons = refused.map((list) =>
            JSON.stringify(list).replaceAll('as_values:', 'as_text:'),
          );
          assert.equal(reasons[1], reasons[0], 'the same rows refused, for the same reasons');
          return refused[1]!;
        };
        await both(
          rows(
            { id: 1, note: 'tab\there', n: 2, ok: true, j: '["a"]', at: '2024-01-02' },
            { id: 2, note: 'new\nline \\ back \\N', n: null, ok: false, j: null, at: null },
            { id: 3, note: 'café ✓ 😀', n: 3, ok: null, j: '[1,2]', at: '2024-03-04T05:06:07Z' },
          ),
        );
        // Merged into, with a column made wider (text) and one whose cells change (a boolean
        // into a column made integer by values before it).
        for (const table of ['as_values', 'as_text']) {
          await write(dest, target(table, ['id'], { hints }), rows({ id: 4, n: 'x', ok: 10 }));
        }
        await both(rows({ id: 1, note: 'again', n: 5 }, { id: 5, n: 6 }));
        await both(rows({ id: 1, ok: false }, { id: 5, ok: true }));
        if (h.expects.refusesValues) {
          // A value only the database finds wrong: the rows are written one by one.
          const refused = await both(
            rows({ id: 6, note: 'fine' }, { id: 7, at: 'not a date' }, { id: 8, note: 'also' }),
            { at: 'timestamp' },
          );
          assert.deepEqual(
            refused.map((r) => (r as { index: number }).index),
            [1],
          );
        }
        assert.deepEqual(typesOf(await dest.describeTable('as_text')), {
          ...typesOf(await dest.describeTable('as_values')),
        });
        const read = await readNormalized(o, 'as_text', ['id']);
        assert.deepEqual(read, await readNormalized(o, 'as_values', ['id']));
        assert.deepEqual(
          read.map((r) => [r.id, r.note, r.n, r.ok]),
          [
            [1, null, null, 0],
            [2, 'new\nline \\ back \\N', null, 0],
            [3, 'café ✓ 😀', '3', null],
            [4, null, 'x', 10],
            [5, null, null, 1],
            ...(h.expects.refusesValues
              ? [
                  [6, 'fine', null, null],
                  [8, 'also', null, null],
                ]
              : []),
          ],
        );
      }));

    it('merging into a table that holds duplicate keys says so', () =>
      use(async (o) => {
        await write(o.dest, target('dups'), rows({ id: 1 }, { id: 1 }));
        await assert.rejects(
          write(o.dest, target('dups', ['id']), rows({ id: 2 })),
          (e: Error & { code?: string }) => {
            assert.equal(e.code, 'SLUICE_DESTINATION_DATA');
            assert.match(e.message, /already holds rows with the same id.*write: append/);
            return true;
          },
        );
      }));

    it('a file transaction that throws leaves nothing behind, columns included', () =>
      use(async (o) => {
        const { dest } = o;
        await dest.ensureState();
        await write(dest, target('kept'), rows({ id: 1 }));
        const boom = new Error('boom');
        await assert.rejects(
          dest.loadFile(async (tx) => {
            await tx.write(target('kept'), rows({ id: 2 }, { id: 3 }));
            await tx.write(target('kept'), rows({ id: 4, extra: 'x' }));
            await tx.write(target('fresh', ['id']), rows({ id: 1 }));
            await tx.recordFile(fileRow(0));
            throw boom;
          }),
          (error) => error === boom,
        );
        assert.deepEqual(await readNormalized(o, 'kept', ['id']), [{ id: 1 }]);
        assert.deepEqual(typesOf(await dest.describeTable('kept')), { id: 'integer' });
        assert.equal(await dest.describeTable('fresh'), undefined);
        assert.equal((await dest.state.loadedFiles('dl-1')).size, 0);
        // The rolled-back column is not believed to exist: writing it again adds it.
        await write(dest, target('kept'), rows({ id: 5, extra: 'y' }));
        assert.deepEqual(await readNormalized(o, 'kept', ['id']), [
          { id: 1, extra: null },
          { id: 5, extra: 'y' },
        ]);
        assert.equal(await dest.loadFile(async () => 'done'), 'done');
      }));

    it('a destination that reads a result file itself: a key twice keeps its last line; a line in doubt writes nothing', (t) => {
      if (h.expects.readsFiles !== true) return t.skip('it does not read result files itself');
      return use(async (o) => {
        const { dest } = o;
        await dest.ensureState();
        const hints: FieldMap = { id: { kind: 'string' }, price: { kind: 'number' } };
        const to = target('homes', ['id'], { hints });
        const own = { _sluice_download_id: 'dl-0', _sluice_loaded_at: '2024-05-01T10:00:00.000Z' };
        await write(dest, to, rows({ id: 'a', price: 1, ...own }));
        let why: string | undefined;
        const fileOf = (name: string, text: string, format: 'json' | 'csv' = 'json') => ({
          name,
          format,
          open: async () => Readable.from([Buffer.from(text)]),
          fields: hints,
          constants: { ...own, _sluice_download_id: 'dl-1' },
          maxRecordBytes: 10_000,
          sentBack: (reason: string) => {
            why = reason;
          },
        });
        const text = '{"id":"a","price":2}\n{"id":"b","price":3.5}\n{"id":"a","price":4}\n';
        const read = await dest.loadFile((tx) => tx.readFile!(to, fileOf('f0', text)));
        assert.deepEqual(read, { rows: 3, bytes: Buffer.byteLength(text) });
        const table = async () =>
          (await readNormalized(o, 'homes', ['id'])).map((r) => [
            r.id,
            r.price,
            r._sluice_download_id,
          ]);
        const kept = [
          ['a', 4, 'dl-1'],
          ['b', 3.5, 'dl-1'],
        ];
        assert.deepEqual(await table(), kept);
        // 1.0 is not as JSON.stringify writes it: the file goes back, nothing of it written.
        const doubted = '{"id":"c","price":1}\n{"id":"d","price":1.0}\n';
        assert.equal(
          await dest.loadFile((tx) => tx.readFile!(to, fileOf('f1', doubted))),
          undefined,
        );
        assert.match(why ?? '', /line 2/);
        assert.deepEqual(await table(), kept);
        // CSV: the header names the fields in its own order; the last line of a key wins; a
        // line in doubt (its line counted from the header's) writes nothing; a header alone
        // writes no row.
        const csv = 'price,id\n7,a\n8,"c"\n9,a\n';
        assert.deepEqual(await dest.loadFile((tx) => tx.readFile!(to, fileOf('c0', csv, 'csv'))), {
          rows: 3,
          bytes: Buffer.byteLength(csv),
        });
        const withCsv = [['a', 9, 'dl-1'], kept[1]!, ['c', 8, 'dl-1']];
        assert.deepEqual(await table(), withCsv);
        why = undefined;
        const csvDoubted = 'price,id\n1,d\n1e3,e\n';
        assert.equal(
          await dest.loadFile((tx) => tx.readFile!(to, fileOf('c1', csvDoubted, 'csv'))),
          undefined,
        );
        assert.match(why ?? '', /line 3: price/);
        assert.deepEqual(
          await dest.loadFile((tx) => tx.readFile!(to, fileOf('c2', 'id,price\n', 'csv'))),
          { rows: 0, bytes: 9 },
        );
        // A header that lacks a column of the table, or names one it has not: sent back.
        for (const header of ['id\na\n', 'id,price,rooms\na,1,2\n']) {
          why = undefined;
          assert.equal(
            await dest.loadFile((tx) => tx.readFile!(to, fileOf('c3', header, 'csv'))),
            undefined,
          );
          assert.match(why ?? '', /line 1: the (file lacks|header names)/);
        }
        assert.deepEqual(await table(), withCsv);
        // A job's files in turn, each fetched while the one before is read and checked by the
        // worker alone: each fetched once, the last line of a key kept, a line in doubt named.
        const opened: string[] = [];
        const chain = [
          '{"id":"f","price":1}\n',
          '{"id":"g","price":2}\n{"id":"f","price":3}\n{"id":"g","price":4}\n',
          '{"id":"h","price":5}\n{"id":"h","price":5.0}\n',
        ].map((text, i) => {
          const file = fileOf(`n${i}`, text);
          const open = () => {
            opened.push(file.name);
            return file.open();
          };
          return { ...file, open };
        });
        const linked = chain.map((file, i) => ({
          ...file,
          ...(i < 2 ? { next: chain[i + 1]! } : {}),
        }));
        const readLinked = (i: number) => dest.loadFile((tx) => tx.readFile!(to, linked[i]!));
        assert.deepEqual(await readLinked(0), { rows: 1, bytes: 21 });
        assert.deepEqual(await readLinked(1), { rows: 3, bytes: 63 });
        why = undefined;
        assert.equal(await readLinked(2), undefined);
        assert.match(why ?? '', /^line 2: /);
        assert.deepEqual(opened, ['n0', 'n1', 'n2']);
        const withChain = [...withCsv, ['f', 3, 'dl-1'], ['g', 4, 'dl-1']];
        assert.deepEqual(await table(), withChain);
        // CSV files the same way: a doubt in the file checked ahead counted from its header.
        const csvChain = ['price,id\n6,f\n', 'price,id\n9,f\n1e3,e\n'].map((text, i) =>
          fileOf(`m${i}`, text, 'csv'),
        );
        const readCsv = (i: number) =>
          dest.loadFile((tx) =>
            tx.readFile!(to, { ...csvChain[i]!, ...(i === 0 ? { next: csvChain[1]! } : {}) }),
          );
        assert.deepEqual(await readCsv(0), { rows: 1, bytes: 13 });
        why = undefined;
        assert.equal(await readCsv(1), undefined);
        assert.match(why ?? '', /^line 3: price/);
        withChain[3] = ['f', 6, 'dl-1'];
        assert.deepEqual(await table(), withChain);
        // One key twice however written: a text of UTF-8, one line of it left to the parsing
        // check (a key opening with a digit), and an integer as a number and as a text.
        const twice: FieldMap = { ...hints, n: { kind: 'integer' }, '3d': { kind: 'string' } };
        for (const [table2, key, text2, last] of [
          ['texts', 'id', '{"id":"é1","price":2}\n{"id":"é1","price":5,"3d":"y"}\n', ['é1', 5]],
          ['numbers', 'n', '{"n":1,"price":2}\n{"n":"1","price":6}\n', [1, 6]],
        ] as const) {
          const at = target(table2, [key], { hints: twice });
          await write(
            dest,
            at,
            rows({ [key]: key === 'n' ? 9 : 'z', price: 0, '3d': 'x', ...own }),
          );
          const file = { ...fileOf(`${table2}-0`, text2), fields: twice };
          assert.deepEqual(await dest.loadFile((tx) => tx.readFile!(at, file)), {
            rows: 2,
            bytes: Buffer.byteLength(text2),
          });
          const read = await readNormalized(o, table2, [key]);
          assert.deepEqual(
            new Set(read.map((r) => JSON.stringify([r[key], r.price]))),
            new Set([last, key === 'n' ? [9, 0] : ['z', 0]].map((r) => JSON.stringify(r))),
          );
        }
      });
    });

    it('a file loaded beside others writes to its tables as they are, and refuses to change them', () =>
      use(async (o) => {
        const { dest } = o;
        await dest.ensureState();
        await write(dest, target('side'), rows({ id: 1, b: true }));
        const beside = { besideOthers: () => true };
        const conflict = (error: unknown) =>
          (error as { code?: string }).code === 'SLUICE_DESTINATION_CONFLICT' &&
          /files loaded beside/.test((error as Error).message);
        // Rows the table takes as it is.
        await dest.loadFile(async (tx) => {
          await tx.write(target('side'), rows({ id: 2, b: false }));
          await tx.recordFile(fileRow(0));
        }, beside);
        // A new column, a wider one, a new table: refused, and the whole file with them.
        for (const [table, row] of [
          ['side', { id: 3, extra: 'x' }],
          ['side', { id: 3, b: 7 }],
          ['fresh', { id: 1 }],
        ] as const) {
          await assert.rejects(
            dest.loadFile(async (tx) => {
              await tx.write(target('side'), rows({ id: 3, b: true }));
              await tx.write(target(table), rows(row));
              await tx.recordFile(fileRow(1));
            }, beside),
            conflict,
          );
        }
        assert.deepEqual(typesOf(await dest.describeTable('side')), {
          id: 'integer',
          b: 'boolean',
        });
        assert.equal(await dest.describeTable('fresh'), undefined);
        assert.deepEqual([...(await dest.state.loadedFiles('dl-1')).keys()], [0]);
        // A change another process made already is looked at afresh, not refused.
        const other = await o.reopen();
        try {
          await write(other, target('side'), rows({ id: 9, extra: 'made elsewhere' }));
        } finally {
          await other.close();
        }
        await dest.loadFile((tx) => tx.write(target('side'), rows({ id: 4, extra: 'y' })), beside);
        // Alone, the same file changes the table; also when the files beside it ended while it
        // looked at the table again.
        await dest.loadFile((tx) => tx.write(target('side'), rows({ id: 5, b: 7 })));
        let asked = 0;
        await dest.loadFile((tx) => tx.write(target('side'), rows({ id: 6, more: 'z' })), {
          besideOthers: () => ++asked === 1,
        });
        assert.equal(asked, 2, 'asked before and after looking again');
        assert.deepEqual(await readNormalized(o, 'side', ['id']), [
          { id: 1, b: 1, extra: null, more: null },
          { id: 2, b: 0, extra: null, more: null },
          { id: 4, b: null, extra: 'y', more: null },
          { id: 5, b: 7, extra: null, more: null },
          { id: 6, b: null, extra: null, more: 'z' },
          { id: 9, b: null, extra: 'made elsewhere', more: null },
        ]);
      }));

    it('a table is looked at again as committed, whatever isolation the database defaults to', () =>
      use(async (o) => {
        // PostgreSQL only: SQLite has one writer, so no other one changes a table meanwhile.
        if (o.withSettings === undefined) return;
        const { dest } = o;
        await dest.ensureState();
        await write(dest, target('t'), rows({ id: 1 }));
        const strict = await o.withSettings('-c default_transaction_isolation=repeatable\\ read');
        const other = await o.reopen();
        try {
          await write(strict, target('u'), rows({ id: 1 }));
          await write(strict, target('t'), rows({ id: 2 }));
          await strict.loadFile(
            async (tx) => {
              await tx.write(target('u'), rows({ id: 2 })); // the transaction has begun
              await write(other, target('t'), rows({ id: 3, extra: 'x' }));
              // The column another session added since is seen: nothing to change, no refusal.
              await tx.write(target('t'), rows({ id: 4, extra: 'y' }));
            },
            { besideOthers: () => true },
          );
        } finally {
          await strict.close();
          await other.close();
        }
        assert.deepEqual(await readNormalized(o, 't', ['id']), [
          { id: 1, extra: null },
          { id: 2, extra: null },
          { id: 3, extra: 'x' },
          { id: 4, extra: 'y' },
        ]);
      }));

    it('replace: staged tables are swapped in with their indexes; later merges still work', () =>
      use(async (o) => {
        const { dest } = o;
        const homes = def(
          'homes',
          [
            ['id', 'integer'],
            ['city', 'text'],
          ],
          ['id'],
        );
        const kids = def(
          'homes__kids',
          [
            ['_parent_id', 'integer'],
            ['n', 'integer'],
          ],
          [],
          {
            parentColumn: '_parent_id',
          },
        );
        await dest.prepareTables([homes, kids]);
        await write(
          dest,
          target('homes', ['id']),
          rows({ id: 1, city: 'old' }, { id: 9, city: 'gone' }),
        );
        await write(dest, target('homes__kids'), rows({ _parent_id: 9, n: 1 }));
        // A replace: the new tables are built aside, under this pipeline's staging names.
        const staged = { stagedBy: 'pipe-a' };
        await dest.dropStaging(['homes', 'homes__kids'], 'pipe-a');
        await dest.prepareTables([{ ...homes, key: [] }, kids], 'pipe-a');
        await write(
          dest,
          target('homes', [], staged),
          rows({ id: 1, city: 'new' }, { id: 2, city: 'two' }),
        );
        await write(dest, target('homes__kids', [], staged), rows({ _parent_id: 2, n: 7 }));
        assert.equal((await o.all('select * from homes')).length, 2, 'readers see the old table');
        await dest.finishJob({ swap: { tables: ['homes', 'homes__kids'], stagedBy: 'pipe-a' } });
        assert.deepEqual(await readNormalized(o, 'homes', ['id']), [
          { id: 1, city: 'new' },
          { id: 2, city: 'two' },
        ]);
        assert.deepEqual(await readNormalized(o, 'homes__kids', ['n']), [{ _parent_id: 2, n: 7 }]);
        assert.deepEqual(await o.indexes('homes__kids'), ['homes__kids__sluice_parent']);
        const tables = await o.tables();
        assert.deepEqual(
          tables.filter((t) => t.includes('sluice_new')),
          [],
          'no staging table left',
        );
        await write(
          dest,
          target('homes', ['id']),
          rows({ id: 2, city: 'TWO' }, { id: 3, city: 'three' }),
        );
        assert.deepEqual(await readNormalized(o, 'homes', ['id']), [
          { id: 1, city: 'new' },
          { id: 2, city: 'TWO' },
          { id: 3, city: 'three' },
        ]);
        assert.deepEqual(await o.indexes('homes'), ['homes__sluice_key']);
      }));

    it('two pipelines replacing one table never share a staging table', () =>
      use(async (o) => {
        const { dest } = o;
        const t = def('shared', [
          ['id', 'integer'],
          ['by', 'text'],
        ]);
        await dest.prepareTables([t], 'pipe-a');
        await dest.prepareTables([t], 'pipe-b');
        await write(dest, target('shared', [], { stagedBy: 'pipe-a' }), rows({ id: 1, by: 'a' }));
        await write(
          dest,
          target('shared', [], { stagedBy: 'pipe-b' }),
          rows({ id: 2, by: 'b' }, { id: 3, by: 'b' }),
        );
        await dest.finishJob({ swap: { tables: ['shared'], stagedBy: 'pipe-b' } });
        assert.deepEqual(await readNormalized(o, 'shared', ['id']), [
          { id: 2, by: 'b' },
          { id: 3, by: 'b' },
        ]);
        await dest.finishJob({ swap: { tables: ['shared'], stagedBy: 'pipe-a' } });
        assert.deepEqual(await readNormalized(o, 'shared', ['id']), [{ id: 1, by: 'a' }]);
      }));

    it("names of every length: a staging table never takes a live table's name", () =>
      use(async (o) => {
        const { dest } = o;
        // Tables of 45 to 70 characters, so that `<table>__prices` and its staging and index
        // names fall on each side of PostgreSQL's 63 bytes.
        const lengths = [45, 48, 50, 52, 54, 56, 58, 60, 61, 62, 63, 64, 70];
        const pairs = lengths.map((length) => {
          const table = `t${'x'.repeat(length - 1)}`;
          return { table, child: `${table}__prices` };
        });
        const live = pairs.flatMap(({ table, child }) => [
          def(table, [['id', 'integer']], ['id']),
          def(
            child,
            [
              ['_parent_id', 'integer'],
              ['p', 'real'],
            ],
            [],
            { parentColumn: '_parent_id' },
          ),
        ]);
        const names = live.map((d) => d.name);
        await dest.prepareTables(live);
        await dest.loadFile(async (tx) => {
          for (const { table, child } of pairs) {
            await tx.write(target(table, ['id']), rows({ id: 1 }));
            await tx.write(target(child), rows({ _parent_id: 1, p: 2.5 }));
          }
        });
        // A replace starting over drops its staging tables: the live ones must survive it.
        await dest.dropStaging(names, 'pipe');
        await dest.prepareTables(
          live.map((d) => ({ ...d, key: [] })),
          'pipe',
        );
        for (const name of names) {
          const physical = dest.physicalName(name);
          assert.ok(Buffer.byteLength(physical) <= dest.capabilities.maxIdentifierBytes);
          assert.equal((await o.all(`select * from "${physical}"`)).length, 1, `${name} kept`);
        }
        await dest.loadFile(async (tx) => {
          for (const { table, child } of pairs) {
            const staged = { stagedBy: 'pipe' };
            await tx.write(target(table, [], staged), rows({ id: 5 }, { id: 6 }));
            await tx.write(
              target(child, [], staged),
              rows({ _parent_id: 5, p: 1.5 }, { _parent_id: 6, p: 1 }),
            );
          }
        });
        await dest.finishJob({ swap: { tables: names, stagedBy: 'pipe' } });
        for (const name of names) {
          assert.equal((await o.all(`select * from "${dest.physicalName(name)}"`)).length, 2, name);
        }
        const all = await o.tables();
        assert.deepEqual(
          all.filter((t) => t.includes('sluice_new')),
          [],
        );
        assert.equal(new Set(all).size, names.length, 'one physical table per logical one');
      }));

    it('child tables are indexed on their parent link, also when they predate sluice 0.2', () =>
      use(async (o) => {
        const { dest } = o;
        await write(dest, target('old__kids'), rows({ _parent_id: 1, n: 1 }));
        assert.deepEqual(await o.indexes('old__kids'), []);
        await dest.prepareTables([
          def('old__kids', [['_parent_id', 'integer']], [], { parentColumn: '_parent_id' }),
        ]);
        assert.deepEqual(await o.indexes('old__kids'), ['old__kids__sluice_parent']);
        // Also when a write meets it first (a table no definition lists: it came with the data).
        await write(dest, target('older__kids'), rows({ _parent_id: 1, n: 1 }));
        const linked = target('older__kids', [], { parentColumn: '_parent_id' });
        await write(dest, linked, rows({ _parent_id: 2, n: 2 }));
        assert.deepEqual(await o.indexes('older__kids'), ['older__kids__sluice_parent']);
      }));

    it("a parent link left to the job's end is indexed when the job ends, staged or not", () =>
      use(async (o) => {
        const { dest } = o;
        const kids = def('late__kids', [['_parent_id', 'integer']], [], {
          parentColumn: '_parent_id',
          parentIndexAtEnd: true,
        });
        const late = { parentColumn: '_parent_id', parentIndexAtEnd: true };
        await dest.prepareTables([kids]);
        await write(dest, target('late__kids', [], late), rows({ _parent_id: 1 }));
        // A table the write makes (one the catalogue did not list) waits too.
        await write(dest, target('late__new', [], late), rows({ _parent_id: 1 }));
        assert.deepEqual(await o.indexes('late__kids'), []);
        assert.deepEqual(await o.indexes('late__new'), []);
        const parentIndexes = [
          { table: 'late__kids', column: '_parent_id' },
          { table: 'late__new', column: '_parent_id' },
          { table: 'late__never_made', column: '_parent_id' },
        ];
        await dest.finishJob({ parentIndexes });
        assert.deepEqual(await o.indexes('late__kids'), ['late__kids__sluice_parent']);
        assert.deepEqual(await o.indexes('late__new'), ['late__new__sluice_parent']);
        await dest.finishJob({ parentIndexes }); // once made, left as it is
        assert.deepEqual(await o.indexes('late__kids'), ['late__kids__sluice_parent']);

        // A replace: the staging table is swapped in, then indexed under its live name.
        await dest.prepareTables([kids], 'pipe');
        await write(
          dest,
          target('late__kids', [], { ...late, stagedBy: 'pipe' }),
          rows({ _parent_id: 2 }),
        );
        await dest.finishJob({
          parentIndexes: [{ table: 'late__kids', column: '_parent_id' }],
          swap: { tables: ['late__kids'], stagedBy: 'pipe' },
        });
        assert.deepEqual(await readNormalized(o, 'late__kids', ['_parent_id']), [
          { _parent_id: 2 },
        ]);
        assert.deepEqual(await o.indexes('late__kids'), ['late__kids__sluice_parent']);
      }));

    it('deleteWhereIn deletes matching rows only, inside the transaction', () =>
      use(async (o) => {
        const { dest } = o;
        await write(
          dest,
          target('kids'),
          rows(...[1, 2, 3, 4, 5].map((id) => ({ id, parent: 'abcab'[id - 1] ?? null }))),
        );
        await dest.loadFile(async (tx) => {
          await tx.deleteWhereIn({ table: 'kids' }, 'parent', ['a', 'c']);
          await tx.deleteWhereIn({ table: 'kids' }, 'id', [5]);
          await tx.deleteWhereIn({ table: 'kids' }, 'id', []);
          await tx.deleteWhereIn({ table: 'nothing_here' }, 'id', [1]);
        });
        assert.deepEqual(await readNormalized(o, 'kids', ['id']), [{ id: 2, parent: 'b' }]);
        await assert.rejects(
          dest.loadFile(async (tx) => {
            await tx.deleteWhereIn({ table: 'kids' }, 'id', [2]);
            throw new Error('undo');
          }),
          /undo/,
        );
        assert.equal((await o.all('select * from kids')).length, 1);
      }));

    it('field names that are JavaScript builtins are ordinary columns', () =>
      use(async (o) => {
        const row = rows(
          JSON.parse(
            '{"id":1,"__proto__":"p","constructor":"c","toString":"t","hasOwnProperty":"h"}',
          ),
        )[0]!;
        await write(o.dest, target('builtins', ['id']), [row]);
        // Read with aliases: a reader's own row objects would take `__proto__` as a prototype.
        const [back] = await o.all<Record<string, unknown>>(
          'select id, "__proto__" as p, "constructor" as c, "toString" as t, "hasOwnProperty" as h from builtins',
        );
        assert.deepEqual({ ...back }, { id: 1, p: 'p', c: 'c', t: 't', h: 'h' });
      }));

    it('odd table and column names are quoted safely; names over the limit are shortened', () =>
      use(async (o) => {
        const t = target('we"ird table', ['Mixed Case']);
        await write(o.dest, t, rows({ 'Mixed Case': 1, 'quo"te': 'a', select: 'b' }));
        await write(o.dest, t, rows({ 'Mixed Case': 1, 'quo"te': 'c', select: 'd' }));
        assert.deepEqual(await readNormalized(o, 'we"ird table', ['Mixed Case']), [
          { 'Mixed Case': 1, 'quo"te': 'c', select: 'd' },
        ]);
        const long = 'aVeryLongFieldNameFromTheService'.repeat(3);
        const longer = `${long}Too`;
        await write(o.dest, target('longcols'), rows({ id: 1, [long]: 'a', [longer]: 'b' }));
        await write(o.dest, target('longcols'), rows({ id: 2, [long]: 'c' }));
        const back = await o.all<Record<string, unknown>>('select * from longcols order by id');
        assert.equal(Object.keys(back[0]!).length, 3, 'two long names stay two columns');
        assert.deepEqual(
          back.map((r) => Object.values(r)),
          [
            [1, 'a', 'b'],
            [2, 'c', null],
          ],
        );
      }));

    it('field names that differ only in case (City, city) keep a column each, run after run', () =>
      use(async (o) => {
        const { dest } = o;
        const cased = target('cased', ['id']);
        // Both in one batch, made from the rows alone; then each alone, in other files.
        await write(dest, cased, rows({ id: 1, City: 'Austin', city: 'austin' }));
        await write(dest, cased, rows({ id: 2, city: 'dallas' }));
        await write(dest, cased, rows({ id: 3, City: 'Houston' }));
        // A later run (another process's view of the table) finds the same columns, whatever
        // order the fields come in, also in a table made up front with the first of them.
        const later = await o.reopen();
        try {
          await later.loadFile(async (tx) => {
            await tx.write(cased, rows({ id: 4, city: 'waco', City: 'Waco' }));
            await tx.write(cased, rows({ id: 1, city: 'austin tx', City: 'Austin TX' }));
          });
          await later.prepareTables([
            def(
              'made',
              [
                ['id', 'integer'],
                ['city', 'text'],
              ],
              ['id'],
            ),
          ]);
          await later.loadFile((tx) =>
            tx.write(target('made', ['id']), rows({ id: 1, City: 'A', city: 'a' })),
          );
        } finally {
          await later.close();
        }
        await write(dest, target('made', ['id']), rows({ id: 2, City: 'B' }));
        for (const table of ['cased', 'made']) {
          const names = (await dest.describeTable(table))!.map((c) => c.name);
          const folded = names.map((n) => n.toLowerCase());
          assert.equal(new Set(folded).size, names.length, `${table}: ${names.join(', ')}`);
        }
        const names = (await dest.describeTable('cased'))!.map((c) => c.name);
        assert.deepEqual(names.slice(0, 2), ['id', 'City'], 'the first keeps its name');
        const other = names.find((n) => /^city__[0-9a-f]{6}$/.test(n));
        assert.ok(other, `city gets a column of its own: ${names.join(', ')}`);
        assert.deepEqual(
          (
            await o.all<Record<string, unknown>>(
              `select id, "City" as upper, "${other}" as lower from cased order by id`,
            )
          ).map((r) => [Number(r.id), r.upper, r.lower]),
          [
            [1, 'Austin TX', 'austin tx'],
            [2, null, 'dallas'],
            [3, 'Houston', null],
            [4, 'Waco', 'waco'],
          ],
        );
        // Read back by the names the rows had, as owner lookups and cursors read their tables.
        const pairs = await dest.readPairs('cased', ['id', 'city']);
        assert.deepEqual(pairs.map(([id, city]) => [Number(id), city]).sort(), [
          [1, 'austin tx'],
          [2, 'dallas'],
          [4, 'waco'],
        ]);
        const made = (await dest.describeTable('made'))!.map((c) => c.name);
        const upper = made.find((n) => /^City__[0-9a-f]{6}$/.test(n));
        assert.ok(upper, `City next to a city made before it: ${made.join(', ')}`);
        assert.deepEqual(
          (
            await o.all<Record<string, unknown>>(
              `select id, city, "${upper}" as upper from made order by id`,
            )
          ).map((r) => [Number(r.id), r.city, r.upper]),
          [
            [1, 'a', 'A'],
            [2, null, 'B'],
          ],
        );
        if (h.expects.caseTwins) {
          // A table of an earlier sluice, which PostgreSQL let hold both: loaded on as it is.
          await o.raw([
            'create table both_cases (id bigint, "City" text, city text, _sluice_download_id text, _sluice_loaded_at timestamptz)',
          ]);
          await write(dest, target('both_cases'), rows({ id: 1, City: 'X', city: 'x' }));
          assert.deepEqual(await readNormalized(o, 'both_cases', ['id']), [
            { id: 1, City: 'X', city: 'x', _sluice_download_id: null, _sluice_loaded_at: null },
          ]);
        }
      }));

    it('lock: a second run fails at once or waits; a signal stops the wait', () =>
      use(async (o) => {
        const { dest } = o;
        const first = await dest.lock('pipeline:a', { wait: false });
        await assert.rejects(
          dest.lock('pipeline:a', { wait: false }),
          (e: Error & { code?: string }) => {
            assert.equal(e.code, 'SLUICE_LOCKED');
            assert.ok(e.message.includes(first.where), 'the message says where the lock is');
            return true;
          },
        );
        const other = await dest.lock('pipeline:b', { wait: false });
        await other.release();
        let waitedAt: string | undefined;
        let acquired = false;
        const waiting = dest
          .lock('pipeline:a', { wait: true, pollMs: 20, onWait: (where) => (waitedAt = where) })
          .then((lock) => {
            acquired = true;
            return lock;
          });
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(acquired, false, 'a waiting lock waits');
        assert.equal(waitedAt, first.where);
        await first.release();
        const second = await waiting;
        const controller = new AbortController();
        const stopped = dest.lock('pipeline:a', {
          wait: true,
          pollMs: 20,
          signal: controller.signal,
        });
        setTimeout(() => controller.abort(), 50);
        await assert.rejects(stopped, { name: 'AbortError' });
        await second.release();
        await second.release();
      }));

    it('lock: released when the process holding it dies, whatever its pid', async () => {
      const { opened, cleanup } = await h.open();
      if (h.expects.processExclusive) {
        // The database itself is the process's: a second process cannot open it while this
        // one has it, so the holder opens it alone, and this process waits at the open.
        await opened.dest.close();
        const child = spawn(process.execPath, opened.lockHolder('pipeline:held'), {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        try {
          await new Promise<void>((resolve, reject) => {
            child.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
            child.on('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
          });
          await assert.rejects(opened.reopen(), (e: Error & { code?: string }) => {
            assert.equal(e.code, 'SLUICE_LOCKED');
            assert.match(e.message, /open in another process .*PID \d+/);
            return true;
          });
          let announce: () => void = () => {};
          const announced = new Promise<void>((resolve) => (announce = resolve));
          const waiting = openDestination(opened.dest.description, {
            wait: true,
            onWait: announce,
          });
          await announced;
          child.kill('SIGKILL');
          const again = await waiting;
          const lock = await again.lock('pipeline:held', { wait: true, pollMs: 50 });
          await lock.release();
          await again.close();
        } finally {
          child.kill('SIGKILL');
          await cleanup().catch(() => {});
        }
        return;
      }
      try {
        const child = spawn(process.execPath, opened.lockHolder('pipeline:held'), {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        await new Promise<void>((resolve, reject) => {
          child.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
          child.on('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
        });
        await assert.rejects(
          opened.dest.lock('pipeline:held', { wait: false }),
          /held by another run/,
        );
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
        const lock = await opened.dest.lock('pipeline:held', { wait: true, pollMs: 50 });
        await lock.release();
      } finally {
        await cleanup();
      }
    });

    it('lock lost: once another handle takes it over, the old holder writes nothing more (SLUICE_LOCK_LOST)', () =>
      use(async (o) => {
        const first = await o.dest.lock('pipeline:lost', { wait: false, holder: 'run-1' });
        await o.dest.state.insertAttempt({ ...attempt });
        await o.breakLock('pipeline:lost');
        const other = await o.reopen();
        try {
          const second = await other.lock('pipeline:lost', { wait: false, holder: 'run-2' });
          const lost = (e: Error & { code?: string }) => {
            assert.equal(e.code, 'SLUICE_LOCK_LOST');
            assert.match(e.message, /no longer holds pipeline 'lost'.*run run-2/);
            return true;
          };
          await assert.rejects(
            o.dest.state.updateAttempt(attempt.attempt_id, { status: 'x' }),
            lost,
          );
          await assert.rejects(o.dest.state.insertAttempt({ ...attempt, attempt_id: 'a2' }), lost);
          await assert.rejects(o.dest.prepareTables([def('lost_t', [['a', 'text']])]), lost);
          await assert.rejects(
            o.dest.loadFile(async () => {}),
            lost,
          );
          assert.equal(await o.dest.describeTable('lost_t'), undefined, 'nothing was made');
          // The holder now writes as before.
          await other.state.updateAttempt(attempt.attempt_id, { status: 'loading' });
          await other.prepareTables([def('lost_t', [['a', 'text']])]);
          assert.ok(await other.describeTable('lost_t'));
          await second.release();
          await first.release();
        } finally {
          await other.close();
        }
      }));

    it('lock lost while the holder commits: no takeover until it ends (SLUICE_LOCKED)', () =>
      use(async (o) => {
        const first = await o.dest.lock('pipeline:busy', { wait: false });
        const other = await o.reopen({ env: { SLUICE_SQLITE_BUSY_TIMEOUT_MS: '300' } });
        try {
          await other.ensureState();
          let finish: () => void = () => {};
          let begun: () => void = () => {};
          const inside = new Promise<void>((resolve) => (begun = resolve));
          const committing = o.dest.loadFile(async (tx) => {
            await tx.recordFile({ ...fileRow(0), download_id: 'busy' });
            begun();
            await new Promise<void>((resolve) => (finish = resolve));
          });
          // The holder is inside its transaction (not a timer's guess: under load that was late).
          await inside;
          await o.breakLock('pipeline:busy');
          await assert.rejects(
            other.lock('pipeline:busy', { wait: false }),
            (e: Error & { code?: string }) => {
              assert.equal(e.code, 'SLUICE_LOCKED');
              assert.match(e.message, /still committing/);
              return true;
            },
          );
          finish();
          await committing;
          assert.equal((await o.dest.state.loadedFiles('busy')).size, 1, 'the holder committed');
          await first.release();
        } finally {
          await other.close();
        }
      }));

    it("claims of tables: who owns each, recorded in one transaction; a refusal writes nothing; two claims at once see each other's", () =>
      use(async (o) => {
        const { dest } = o;
        const row = (table: string, pipeline: string, job: string, role = 'table') => ({
          table_name: table,
          role,
          pipeline,
          job,
          claimed_at: '2026-11-01T00:00:00.000Z',
          run_id: `run-${pipeline}`,
        });
        const seen: string[][] = [];
        const names = (owners: readonly { table_name: string; pipeline: string }[]) =>
          owners.map((r) => `${r.table_name} ${r.pipeline}`);
        await dest.claimTables((owners) => {
          seen.push(names(owners));
          return {
            add: [row('homes', 'a', 'homes'), row('people', 'a', 'homes', 'people')],
            drop: [],
          };
        });
        await assert.rejects(
          dest.claimTables(() => {
            throw new SluiceError('refused', { code: 'SLUICE_TABLE_OWNED' });
          }),
          (e: SluiceError) => e.code === 'SLUICE_TABLE_OWNED',
        );
        await dest.claimTables((owners) => {
          seen.push(names(owners));
          return { add: [row('homes', 'a', 'houses')], drop: [row('homes', 'a', 'homes')] };
        });
        assert.deepEqual(seen, [[], ['homes a', 'people a']]);
        assert.deepEqual(
          (await dest.state.tableOwners()).map((r) => `${r.table_name} ${r.job} ${r.role}`),
          ['homes houses table', 'people homes people'],
        );
        // Another session claiming meanwhile (PostgreSQL: sessions write at once): a claim waits
        // for its transaction, and sees what it recorded.
        const session = await o.session?.();
        if (session === undefined) return;
        try {
          await session.query('BEGIN');
          await session.query('LOCK TABLE _sluice_tables IN SHARE ROW EXCLUSIVE MODE');
          await session.query(
            "INSERT INTO _sluice_tables VALUES ('shops', 'table', 'c', 'shops', '2026-11-02', 'run-c')",
          );
          let saw: string[] | undefined;
          let settled = false;
          const claim = dest
            .claimTables((owners) => {
              saw = names(owners);
              return { add: [], drop: [] };
            })
            .finally(() => {
              settled = true;
            });
          const waiting = async () =>
            (
              await o.all<{ n: number }>(
                "select count(*) as n from pg_locks where not granted and relation = '_sluice_tables'::regclass",
              )
            )[0]!.n > 0;
          // Until it waits (or, had it not waited, has ended without the other session's row).
          while (!settled && !(await waiting())) {
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          await session.query('COMMIT');
          await claim;
          assert.ok(saw?.includes('shops c'), `the claim saw the other session's: ${saw}`);
        } finally {
          await session.end();
        }
      }));

    it('read-only: creates nothing and writes nothing', () =>
      use(async (o) => {
        const reader = await o.reopen({ readOnly: true });
        try {
          assert.equal(reader.readOnly, true);
          assert.equal(await reader.hasState(), false);
          await assert.rejects(reader.ensureState());
          assert.equal(await reader.hasState(), false);
        } finally {
          await reader.close();
        }
        await o.dest.ensureState();
        await o.dest.state.insertAttempt({ ...attempt });
        const again = await o.reopen({ readOnly: true });
        try {
          assert.equal(await again.hasState(), true);
          assert.equal((await again.state.recent('p', 5)).downloads.length, 1);
        } finally {
          await again.close();
        }
      }));

    it('a look that finds no state tables leaves nothing open once closed (status lingered 10 s)', () =>
      use(async (o) => {
        // What `status` does on a destination no run has used: a read-only look, then close.
        // What keeps a process alive once its work is done (a pooled connection, its idle
        // timer) is an active resource: none may be left over by the look.
        const before = activeResources();
        const reader = await o.reopen({ readOnly: true });
        assert.equal(await reader.hasState(), false);
        await reader.close();
        assert.deepEqual(await lingering(before), []);
        await o.dest.ensureState();
        const again = await o.reopen({ readOnly: true });
        assert.equal(await again.hasState(), true);
        await again.state.recent('p', 5);
        await again.close();
        assert.deepEqual(await lingering(before), []);
      }));
  });
}

/** An empty lock file (made, not yet written) is a lock, not a stale leftover to remove. */
describe('sqlite lock file', () => {
  it('an empty lock file is not taken over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-lock-'));
    try {
      const file = join(dir, 'x.sqlite');
      const dest = await openDestination(`sqlite:${file}`);
      try {
        const lock = await dest.lock('p', { wait: false });
        assert.equal(statSync(`${file}.p.lock`).size, 0, 'held, and still empty');
        await assert.rejects(dest.lock('p', { wait: false }), /held by another run/);
        await lock.release();
        // The pid file of sluice 0.1 is replaced by a lock.
        writeFileSync(`${file}.p.lock`, '12345\n');
        const again = await dest.lock('p', { wait: false });
        await again.release();
      } finally {
        await dest.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** sluice makes its SQLite databases with 16 KB pages; a database it finds keeps its own. */
describe('sqlite page size', () => {
  it('a new database has 16 KB pages, an existing one its own, and both load', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-pages-'));
    try {
      const fresh = join(dir, 'new.sqlite');
      const existing = join(dir, 'old.sqlite');
      const old = new Database(existing);
      old.pragma('page_size = 4096');
      old.exec('CREATE TABLE notes (body TEXT)');
      old.close();
      for (const [file, pageSize] of [
        [fresh, 16384],
        [existing, 4096],
      ] as const) {
        const dest = await openDestination(`sqlite:${file}`);
        try {
          await write(dest, target('items'), rows({ id: 'a', name: 'x'.repeat(5000) }));
        } finally {
          await dest.close();
        }
        const db = new Database(file, { readonly: true });
        try {
          assert.equal(db.pragma('page_size', { simple: true }), pageSize, file);
          assert.deepEqual(db.prepare('SELECT id, length(name) AS n FROM items').all(), [
            { id: 'a', n: 5000 },
          ]);
        } finally {
          db.close();
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The destination registered above is a destination like the built-in ones for everything that
 * reads the registry: the pipeline file's check of `destination:` and a whole run.
 */
describe('a registered destination', () => {
  it('runs a pipeline into it: validated, loaded, its state kept, nothing else edited', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-fake-'));
    const harness = await EmulatorHarness.start({ scale: 0.05, queueMs: 0 });
    try {
      const file = join(dir, 'fake.yaml');
      writeFileSync(
        file,
        `version: 1
name: fake-run
source: { api: v4, url: '${harness.v4Url}', email: '${harness.credentials.email}', password: '${harness.credentials.password}' }
destination: fake:out.db
jobs:
  homes: { type: properties, query: 'province:TX', records: 50, poll: { interval: 20ms } }
`,
      );
      const spec = await loadPipeline(file);
      const summary = await runPipeline(spec, { logger: silentLogger(), progress: noProgress });
      assert.equal(summary.status, 'succeeded', JSON.stringify(summary));
      assert.match(summary.destination, /^fake:.*out\.db$/);
      assert.equal(summary.jobs[0]!.loaded, 50);
      const db = new Database(join(dir, 'out.db'), { readonly: true });
      try {
        assert.equal((db.prepare('select count(*) as n from homes').get() as { n: number }).n, 50);
        assert.equal(
          (db.prepare('select count(*) as n from _sluice_files').get() as { n: number }).n,
          1,
        );
      } finally {
        db.close();
      }
      // A URL no destination takes is refused by the file's check, naming every kind there is.
      writeFileSync(file, readFileSync(file, 'utf8').replace('fake:out.db', 'nosuch:out.db'));
      await assert.rejects(loadPipeline(file), /destination: expected .*sqlite:PATH.*fake:PATH/);
    } finally {
      await harness.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
