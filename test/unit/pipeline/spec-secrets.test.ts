import { strict as assert } from 'node:assert';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { PipelineSpecError } from '../../../src/errors.js';
import { loadPipeline } from '../../../src/pipeline/spec/spec.js';
import { tempDir } from '../../helpers/pipeline.js';

/**
 * Mounted secrets in pipeline files: `${file:PATH}` from the file's folder, `${VAR}` given as
 * `VAR_FILE`, and where each credential came from (never its value).
 */

function pipeline(dir: string, source: string, destination = 'sqlite:t.sqlite'): string {
  const file = join(dir, 'p.yaml');
  writeFileSync(
    file,
    `version: 1
name: p
source:
${source}destination: ${destination}
jobs:
  homes: { type: properties, query: 'city:Austin' }
`,
  );
  return file;
}

describe('secrets in pipeline files', () => {
  test("${file:PATH} reads a secret from the pipeline file's folder, without its trailing newline", async () => {
    const dir = tempDir('sluice-secrets-');
    mkdirSync(join(dir, 'secrets'));
    writeFileSync(join(dir, 'secrets', 'pw'), 'p4ss\n\n');
    const file = pipeline(
      dir,
      '  url: http://127.0.0.1:1/v4\n  email: ${SLUICE_EMAIL:-a@b.c}\n  password: ${file:secrets/pw}\n',
    );
    // Loaded from another folder: the path still starts at the file's.
    const spec = await loadPipeline(file, {});
    assert.equal(spec.source.password, 'p4ss');
    assert.deepEqual(spec.credentials, [
      { credential: 'source.url', origins: [{ from: 'pipeline_file' }] },
      {
        credential: 'source.email',
        origins: [{ from: 'pipeline_file', variable: 'SLUICE_EMAIL' }],
      },
      {
        credential: 'source.password',
        origins: [{ from: 'secret_file', file: join(dir, 'secrets', 'pw') }],
      },
      { credential: 'destination', origins: [{ from: 'pipeline_file' }] },
    ]);
  });

  test('a missing secret file names the file and the line; validate and status only warn', async () => {
    const dir = tempDir('sluice-secrets-');
    const file = pipeline(dir, '  url: http://127.0.0.1:1/v4\n  token: ${file:nowhere/token}\n');
    await assert.rejects(loadPipeline(file, {}), (error: PipelineSpecError) => {
      assert.equal(error.code, 'SLUICE_SPEC');
      assert.equal(
        error.message,
        `${file}:5: source.token: secret file ${join(dir, 'nowhere/token')} cannot be read: no such file`,
      );
      return true;
    });
    const lenient = await loadPipeline(file, {}, { source: 'optional' });
    assert.deepEqual(lenient.warnings, [
      `${file}:5: source.token: secret file ${join(dir, 'nowhere/token')} cannot be read: no such file (run needs it; this command does not)`,
    ]);
    assert.deepEqual(lenient.credentials[1], {
      credential: 'source.token',
      origins: [{ from: 'unreadable', file: join(dir, 'nowhere/token') }],
    });
  });

  test('${PGPASSWORD} given as PGPASSWORD_FILE: the database password from a mounted secret', async () => {
    const dir = tempDir('sluice-secrets-');
    writeFileSync(join(dir, 'pg'), 'db-secret\n');
    const file = pipeline(
      dir,
      '  url: http://127.0.0.1:1/v4\n  token: t\n',
      "'postgresql://loader:${PGPASSWORD}@db.internal/warehouse'",
    );
    const spec = await loadPipeline(file, { PGPASSWORD_FILE: join(dir, 'pg') });
    assert.equal(spec.destination.url, 'postgresql://loader:db-secret@db.internal/warehouse');
    assert.deepEqual(spec.credentials.at(-1), {
      credential: 'destination',
      origins: [{ from: 'secret_file', file: join(dir, 'pg'), variable: 'PGPASSWORD_FILE' }],
    });
    // A PGPASSWORD_FILE that cannot be read: said at the line that needs it.
    await assert.rejects(
      loadPipeline(file, { PGPASSWORD_FILE: join(dir, 'gone') }),
      new RegExp(
        `p\\.yaml:6: destination: PGPASSWORD_FILE: secret file ${join(dir, 'gone')} cannot be read: no such file$`,
      ),
    );
  });
});
