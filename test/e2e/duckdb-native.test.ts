import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import { skipReason, type TestTarget, targetFactory } from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';
import { runToEnd, stopAt } from '../helpers/runs.js';

/**
 * DuckDB reading NDJSON and CSV result files itself (issue 41, src/load/duckdb/read-file.ts, the
 * default): where it does, the tables and state rows are those sluice's own decoding writes for
 * the same download (SLUICE_DUCKDB_NATIVE=0); a file it doubts goes down the usual path whole.
 */

const KIND = 'duckdb';
let harness: EmulatorHarness;
let dir: string;
const reason = await skipReason(KIND);

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.5, fileRecords: 40, churn: 0 });
  dir = tempDir('sluice-native-');
});
after(() => harness?.close());

/** DuckDB reads the files itself unless SLUICE_DUCKDB_NATIVE=0: set here all the same. */
const NATIVE = { SLUICE_DUCKDB_NATIVE: '1' };
const POLL = 'poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }';
const freshTarget = targetFactory(KIND, () => dir);

function pipelineOf(t: TestTarget, name: string, job: string): string {
  return writePipeline(
    dir,
    name,
    `${pipelineHead(name, t.destinationYaml)}jobs:\n${job.replace(/^/gm, '  ')}\n    ${POLL}\n`,
  );
}

async function runJob(
  t: TestTarget,
  name: string,
  job: string,
  env: Record<string, string> = {},
): Promise<{ code: number; stderr: string; stdout: string }> {
  const file = pipelineOf(t, name, job);
  return runCli(
    ['run', file, '--no-progress', '--log-level', 'debug'],
    emulatorEnv(harness, { SLUICE_FILES_AT_ONCE: '1', ...NATIVE, ...env }),
  );
}

/** A table's rows in a fixed order, the load's own columns aside, as text. */
async function rowsOf(t: TestTarget, table: string): Promise<string[]> {
  const columns = (await t.columns(table)).map((c) => c.name);
  const kept = columns.filter((c) => !c.startsWith('_sluice_'));
  const rows = await t.all(
    `SELECT ${kept.map((c) => `CAST("${c}" AS VARCHAR) AS "${c}"`).join(', ')} FROM "${table}"`,
  );
  return rows.map((r) => JSON.stringify(r)).sort();
}

for (const format of ['json', 'csv'] as const) {
  const fresh = (name: string) => freshTarget(`${format}-${name}`);
  const PROPS = (table: string, write = 'append') =>
    `${table}:\n  type: properties\n  query: '*'\n  records: 120\n  format: ${format}\n  nested: json\n  write: ${write}\n  table: ${table}`;

  describe(`DuckDB reading ${format} result files itself`, { skip: reason }, () => {
    test('an append gives the rows, types and file rows of sluice decoding', async () => {
      await harness.reset();
      const a = await fresh('native');
      const b = await fresh('decoded');
      const native = await runJob(a, 'native', PROPS('homes'));
      assert.equal(native.code, 0, native.stderr);
      await harness.reset();
      const decoded = await runJob(b, 'decoded', PROPS('homes'), { SLUICE_DUCKDB_NATIVE: '0' });
      assert.equal(decoded.code, 0, decoded.stderr);
      assert.match(native.stderr + native.stdout, /read by the destination itself/);
      assert.doesNotMatch(decoded.stderr + decoded.stdout, /read by the destination itself/);
      assert.deepEqual(await a.columns('homes'), await b.columns('homes'));
      const rows = await rowsOf(a, 'homes');
      assert.equal(rows.length, 120);
      assert.deepEqual(rows, await rowsOf(b, 'homes'));
      const files = (t: TestTarget) =>
        t.all(
          'SELECT file_index, table_name, rows_loaded, rows_rejected, bytes FROM _sluice_files ORDER BY file_index',
        );
      assert.deepEqual(await files(a), await files(b));
      const loaded = /loaded [0-9a-f]+(_\d+\.(?:txt|csv): \d+ rows)/g;
      const lines = (out: string) => [...out.matchAll(loaded)].map((m) => m[1]);
      assert.deepEqual(lines(native.stderr), lines(decoded.stderr));
      assert.equal(lines(native.stderr).length, 3);
    });

    test('a merge, run twice: the rows of sluice decoding', async () => {
      const a = await fresh('merge-native');
      const b = await fresh('merge-decoded');
      for (const [t, env] of [
        [a, {}],
        [b, { SLUICE_DUCKDB_NATIVE: '0' }],
      ] as const) {
        await harness.reset();
        for (let i = 0; i < 2; i++) {
          const run = await runJob(
            t,
            `merge-${t === a ? 'native' : 'decoded'}`,
            PROPS('homes', 'merge'),
            env,
          );
          assert.equal(run.code, 0, run.stderr);
          if (t === a) assert.match(run.stderr, /read by the destination itself/);
        }
      }
      const rows = await rowsOf(a, 'homes');
      assert.equal(rows.length, 120);
      assert.deepEqual(rows, await rowsOf(b, 'homes'));
      assert.deepEqual(await a.indexes('homes'), await b.indexes('homes'));
    });

    test('a file with a line sluice rejects goes down the usual path whole: the same rejects', async () => {
      const runBoth = async (name: string) => {
        await harness.reset();
        await harness.faults([], 'corrupt=0.05');
        const a = await fresh(`${name}-native`);
        const b = await fresh(`${name}-decoded`);
        const native = await runJob(a, `${name}-native`, PROPS('homes'));
        assert.equal(native.code, 0, native.stderr);
        await harness.reset();
        await harness.faults([], 'corrupt=0.05');
        const decoded = await runJob(b, `${name}-decoded`, PROPS('homes'), {
          SLUICE_DUCKDB_NATIVE: '0',
        });
        assert.equal(decoded.code, 0, decoded.stderr);
        return { a, b, native };
      };
      const { a, b, native } = await runBoth('corrupt');
      const rejects = async (t: TestTarget) =>
        (
          await t.all<{ file_name: string; line: number; raw: string; reason: string }>(
            'SELECT file_name, line, raw, reason FROM _sluice_rejects ORDER BY file_name, line',
          )
        ).map((r) => ({ ...r, file_name: r.file_name.replace(/^[0-9a-f]+/, '') }));
      const kept = await rejects(a);
      assert.ok(kept.length > 0, 'some lines were corrupted');
      assert.deepEqual(kept, await rejects(b));
      assert.deepEqual(await rowsOf(a, 'homes'), await rowsOf(b, 'homes'));
      // The files with a corrupted line were loaded the usual way.
      const read = (native.stderr.match(/read by the destination itself/g) ?? []).length;
      assert.ok(read < 3, native.stderr);
    });

    test('gzip files: read by DuckDB, the same rows', async () => {
      const gz = await EmulatorHarness.start({
        scale: 0.5,
        fileRecords: 40,
        churn: 0,
        gzipFiles: true,
      });
      try {
        const a = await fresh('gzip-native');
        const file = pipelineOf(a, 'gzip-native', PROPS('homes'));
        const run = await runCli(
          ['run', file, '--no-progress', '--log-level', 'debug'],
          emulatorEnv(gz, { SLUICE_FILES_AT_ONCE: '1', ...NATIVE }),
        );
        assert.equal(run.code, 0, run.stderr);
        assert.equal((run.stderr.match(/read by the destination itself/g) ?? []).length, 3);
        assert.equal((await rowsOf(a, 'homes')).length, 120);
      } finally {
        await gz.close();
      }
    });

    test('killed inside a file read by DuckDB: nothing of it stays, a rerun loads it once', async () => {
      await harness.reset();
      const a = await fresh('killed');
      const file = pipelineOf(a, 'killed', PROPS('homes'));
      await stopAt(file, harness, 'file-batch:homes@1', 'SIGKILL', NATIVE);
      const files = await a.all<{ file_index: number }>('SELECT file_index FROM _sluice_files');
      assert.deepEqual(
        files.map((f) => Number(f.file_index)),
        [0],
      );
      assert.equal((await rowsOf(a, 'homes')).length, 40);
      await runToEnd(file, harness, NATIVE);
      assert.equal((await rowsOf(a, 'homes')).length, 120);
      const b = await fresh('unkilled');
      await harness.reset();
      await runToEnd(pipelineOf(b, 'unkilled', PROPS('homes')), harness, {
        SLUICE_DUCKDB_NATIVE: '0',
      });
      assert.deepEqual(await rowsOf(a, 'homes'), await rowsOf(b, 'homes'));
    });
  });
}
