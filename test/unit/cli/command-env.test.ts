import { strict as assert } from 'node:assert';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { commandEnv } from '../../../src/cli/command-env.js';
import type { SluiceError } from '../../../src/errors.js';
import { tempDir } from '../../helpers/pipeline.js';

/**
 * A command's environment: the process's, `--env-file`, the `.env` beside the pipeline file,
 * and mounted secrets (`*_FILE`), in that order of precedence, from real files.
 */

function folder(files: Record<string, string>): string {
  const dir = tempDir('sluice-env-');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

describe('env files', () => {
  test('the environment wins over --env-file, which wins over the .env beside the pipeline file', () => {
    const dir = folder({
      '.env': 'A=dotenv\nB=dotenv\nC=dotenv\n',
      'ops.env': 'A=envfile\nB=envfile\n',
    });
    const settings = commandEnv(
      { A: 'environment' },
      { envFile: 'ops.env', folders: [dir], cwd: dir },
    );
    assert.deepEqual(
      [settings.env.A, settings.env.B, settings.env.C],
      ['environment', 'envfile', 'dotenv'],
    );
    const { lookup } = settings.forFile(join(dir, 'p.yaml'));
    assert.deepEqual(lookup('A')?.origin, { from: 'environment', variable: 'A' });
    assert.deepEqual(lookup('B')?.origin, {
      from: 'env_file',
      variable: 'B',
      file: join(dir, 'ops.env'),
    });
    assert.deepEqual(lookup('C')?.origin, {
      from: 'env_file',
      variable: 'C',
      file: join(dir, '.env'),
    });
  });

  test("Node's reading of the file: quotes, export, comments, multi-line values", () => {
    const dir = folder({
      '.env':
        '# a comment\nexport A=1\nB="two words"\nC=\'single\'\nD="line one\nline two"\nE=v # note\n',
    });
    const { env } = commandEnv({}, { folders: [dir], cwd: dir });
    assert.deepEqual(
      [env.A, env.B, env.C, env.D, env.E],
      ['1', 'two words', 'single', 'line one\nline two', 'v'],
    );
  });

  test('an empty variable of the environment does not hide the .env value', () => {
    const dir = folder({ '.env': 'SLUICE_EMAIL=a@b.c\n' });
    assert.equal(
      commandEnv({ SLUICE_EMAIL: '' }, { folders: [dir], cwd: dir }).env.SLUICE_EMAIL,
      'a@b.c',
    );
  });

  test('no .env is no .env; a missing --env-file names the file', () => {
    const dir = folder({});
    assert.deepEqual(commandEnv({ X: '1' }, { folders: [dir], cwd: dir }).env, { X: '1' });
    assert.throws(
      () => commandEnv({}, { envFile: 'nope.env', folders: [dir], cwd: dir }),
      (error: SluiceError) => {
        assert.equal(error.code, 'SLUICE_SECRET_FILE');
        assert.equal(
          error.message,
          `--env-file ${join(dir, 'nope.env')}: cannot read the env file: no such file`,
        );
        return true;
      },
    );
  });

  test('a line that is not NAME=value is said by its line number, never its text', () => {
    const dir = folder({ '.env': 'A=1\nhunter2\nB=2\nC=3\n' });
    const settings = commandEnv({}, { folders: [dir], cwd: dir });
    assert.deepEqual(settings.warnings, [
      `${join(dir, '.env')}:2: not a NAME=value line, and it hides the variable on the line after it (Node's reader joins them): fix or remove it`,
    ]);
    assert.ok(!settings.warnings.join('').includes('hunter2'));
    assert.deepEqual([settings.env.A, settings.env.B, settings.env.C], ['1', undefined, '3']);
  });

  test('each pipeline file takes the .env beside it; sluice settings that differ are warned of', () => {
    const dir = folder({
      'a/.env': 'SLUICE_PASSWORD=pw-alpha\nSLUICE_DESTINATION=sqlite:a.sqlite\n',
      'b/.env': 'SLUICE_PASSWORD=pw-beta\nSLUICE_DESTINATION=sqlite:b.sqlite\n',
    });
    const settings = commandEnv({}, { folders: [join(dir, 'a'), join(dir, 'b')], cwd: dir });
    assert.equal(
      settings.forFile(join(dir, 'a', 'p.yaml')).lookup('SLUICE_PASSWORD')?.value,
      'pw-alpha',
    );
    assert.equal(
      settings.forFile(join(dir, 'b', 'p.yaml')).lookup('SLUICE_PASSWORD')?.value,
      'pw-beta',
    );
    assert.equal(settings.env.SLUICE_DESTINATION, 'sqlite:a.sqlite');
    assert.equal(settings.warnings.length, 2);
    const warned = [...settings.warnings].sort();
    assert.match(warned[0]!, /^SLUICE_DESTINATION differs in .*a\/\.env and .*b\/\.env:/);
    assert.match(warned[1]!, /^SLUICE_PASSWORD differs in .*a\/\.env and .*b\/\.env:/);
    assert.ok(!settings.warnings.join('').includes('pw-'), 'no value in a warning');
  });
});

describe('mounted secrets: *_FILE', () => {
  test('SLUICE_PASSWORD_FILE gives SLUICE_PASSWORD, its trailing newline trimmed', () => {
    const dir = folder({ 'secrets/pw': 's3cret\n' });
    const file = join(dir, 'secrets/pw');
    const settings = commandEnv({ SLUICE_PASSWORD_FILE: file }, { folders: [dir], cwd: dir });
    assert.equal(settings.env.SLUICE_PASSWORD, 's3cret');
    assert.deepEqual(settings.forFile(join(dir, 'p.yaml')).lookup('SLUICE_PASSWORD')?.origin, {
      from: 'secret_file',
      file,
      variable: 'SLUICE_PASSWORD_FILE',
    });
  });

  test("a path in a .env starts at the .env's folder; the environment's secret wins over it", () => {
    const dir = folder({
      'pipes/.env': 'SLUICE_PASSWORD_FILE=pw\nSLUICE_EMAIL=x\n',
      'pipes/pw': 'from-dotenv\r\n',
      mounted: 'mounted\n',
    });
    const pipes = join(dir, 'pipes');
    assert.equal(commandEnv({}, { folders: [pipes], cwd: dir }).env.SLUICE_PASSWORD, 'from-dotenv');
    // The environment's SLUICE_PASSWORD_FILE is the environment's SLUICE_PASSWORD: .env cannot override it.
    const both = commandEnv(
      { SLUICE_PASSWORD_FILE: join(dir, 'mounted') },
      { folders: [pipes], cwd: dir },
    );
    assert.equal(both.env.SLUICE_PASSWORD, 'mounted');
  });

  test('a variable and its _FILE in one place are refused: which one is meant is no guess', () => {
    const dir = folder({ pw: 'x\n' });
    assert.throws(
      () =>
        commandEnv(
          { SLUICE_PASSWORD: 'a', SLUICE_PASSWORD_FILE: join(dir, 'pw') },
          { folders: [dir], cwd: dir },
        ),
      /SLUICE_PASSWORD and SLUICE_PASSWORD_FILE are both set \(in the environment\): keep one/,
    );
  });

  test('a missing, empty or folder secret file is an error naming it, never a value', () => {
    const dir = folder({ empty: '\n' });
    for (const [path, problem] of [
      [join(dir, 'missing'), 'cannot be read: no such file'],
      [join(dir, 'empty'), 'is empty'],
      [dir, 'is a folder, not a file'],
    ] as const) {
      assert.throws(
        () => commandEnv({ SLUICE_API_TOKEN_FILE: path }, { folders: [dir], cwd: dir }),
        (error: SluiceError) => {
          assert.equal(error.code, 'SLUICE_SECRET_FILE');
          assert.equal(error.message, `SLUICE_API_TOKEN_FILE: secret file ${path} ${problem}`);
          return true;
        },
      );
    }
  });

  test("another program's *_FILE variable is not read", () => {
    const dir = folder({});
    const env = commandEnv(
      { AWS_CONFIG_FILE: join(dir, 'nowhere'), COMPOSE_FILE: 'a.yml:b.yml' },
      { folders: [dir], cwd: dir },
    ).env;
    assert.equal(env.AWS_CONFIG, undefined);
    assert.equal(env.COMPOSE, undefined);
  });
});
