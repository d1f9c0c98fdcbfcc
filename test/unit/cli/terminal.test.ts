import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { reportFlags } from '../../../src/cli/index.js';
import { Terminal } from '../../../src/cli/terminal.js';
import { Capture } from '../../helpers/pipeline.js';

/** A stderr that says it is a terminal, and keeps what was written. */
function tty(): Capture & { isTTY: boolean; columns: number } {
  return Object.assign(new Capture(), { isTTY: true, columns: 100 });
}

describe('terminal', () => {
  it('a log line printed while the bar is drawn erases the bar and gets a line of its own', () => {
    const stderr = tty();
    const terminal = new Terminal(stderr, { format: 'pretty', level: 'info' });
    const progress = terminal.progress(true);
    progress.phase('homes', 'load', 100);
    progress.update(40);
    const before = stderr.text.length;
    terminal.logger.info('loaded homes_0.csv: 40 rows');
    progress.update(60);
    progress.done();
    const after = stderr.text.slice(before);
    const erase = after.indexOf('\r\x1b[2K');
    const log = after.indexOf('loaded homes_0.csv: 40 rows');
    assert.ok(erase >= 0 && log > erase, 'the bar is erased before the log line');
    const logLine = after.slice(erase + 4, after.indexOf('\n', log) + 1);
    assert.doesNotMatch(logLine, /\[[░█]+\]/, 'no bar inside the log line');
    assert.match(after.slice(log), /\n[^\n]*homes\s+load\s+\[/, 'the bar is drawn again below it');
  });

  it('JSON logs never share stderr with a bar; without a terminal, progress is a log line', () => {
    const stderr = tty();
    const terminal = new Terminal(stderr, { format: 'json', level: 'info' });
    const progress = terminal.progress(true);
    progress.phase('homes', 'load', 10);
    progress.update(5);
    progress.done();
    terminal.logger.info({ job: 'homes' }, 'hello');
    for (const line of stderr.text.trim().split('\n')) assert.equal(JSON.parse(line).msg, 'hello');
  });

  it('global flags are read before the command line is, from argv and the environment', () => {
    assert.deepEqual(reportFlags(['run', 'x.yaml', '--json'], {}), {
      json: true,
      logFormat: 'pretty',
      logLevel: 'info',
    });
    assert.deepEqual(reportFlags(['run', '--log-format=json', '-vv'], {}), {
      json: false,
      logFormat: 'json',
      logLevel: 'trace',
    });
    assert.deepEqual(
      reportFlags(['count'], { SLUICE_LOG_FORMAT: 'json', SLUICE_LOG_LEVEL: 'warn' }),
      {
        json: false,
        logFormat: 'json',
        logLevel: 'warn',
      },
    );
    assert.equal(reportFlags(['--log-level', 'debug'], {}).logLevel, 'debug');
    assert.equal(reportFlags(['--log-level', 'loud'], {}).logLevel, 'info');
  });
});
