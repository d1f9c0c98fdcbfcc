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
  it('a log line printed while job lines are drawn erases them and gets a line of its own', () => {
    const stderr = tty();
    const terminal = new Terminal(stderr, { format: 'pretty', level: 'info' });
    const progress = terminal.progress(true);
    progress.phase('homes', 'load', 100);
    progress.update('homes', 40);
    const before = stderr.text.length;
    terminal.logger.info('loaded homes_0.csv: 40 rows');
    progress.update('homes', 60);
    progress.done('homes', 'loaded');
    const after = stderr.text.slice(before);
    const erase = after.indexOf('\r\x1b[2K\x1b[J');
    const log = after.indexOf('loaded homes_0.csv: 40 rows');
    assert.ok(erase >= 0 && log > erase, 'the lines are erased before the log line');
    const logLine = after.slice(log, after.indexOf('\n', log) + 1);
    assert.doesNotMatch(logLine, /[░█]/, 'no progress inside the log line');
    assert.match(after.slice(log), /\nhomes\s+loading\s+\[/, 'the line is drawn again below it');
  });

  it('two jobs at once: every log line is printed whole, in order, and nothing is left after', () => {
    const stderr = Object.assign(tty(), { columns: 60 });
    const terminal = new Terminal(stderr, { format: 'pretty', level: 'info' });
    const progress = terminal.progress(true);
    progress.phase('texas_homes', 'download', 4000);
    progress.phase('austin_businesses_with_a_long_name', 'waiting', undefined);
    const said: string[] = [];
    for (let i = 0; i < 16; i++) {
      const job = i % 2 ? 'texas_homes' : 'austin_businesses_with_a_long_name';
      progress.update(job, i * 250, 4000);
      if (i === 6) progress.phase('austin_businesses_with_a_long_name', 'load', 500);
      const message = `line ${i} of a log ${'that is longer than the terminal is wide '.repeat(i % 3)}`;
      said.push(message);
      terminal.logger.info(message);
    }
    progress.done('texas_homes', 'loaded');
    progress.done('austin_businesses_with_a_long_name', 'loaded');
    const text = stderr.text;
    let at = 0;
    for (const message of said) {
      const found = text.indexOf(message, at);
      assert.ok(found >= at, `'${message.slice(0, 20)}' is printed whole, after the one before`);
      at = found + message.length;
    }
    // After the last log line: only erasures and redraws, ending with every line erased.
    assert.ok(text.endsWith('\x1b[J'), 'the job lines are erased at the end');
    const drawn = text.split(/\r|\n|\x1b\[\d*[AJK]/);
    for (const line of drawn.filter((l) => /[░█]|waiting|loading|downloading/.test(l))) {
      assert.ok(line.length <= 59, `a progress line fits the terminal: ${line}`);
    }
  });

  it('JSON logs never share stderr with a bar; without a terminal, progress is a log line', () => {
    const stderr = tty();
    const terminal = new Terminal(stderr, { format: 'json', level: 'info' });
    const progress = terminal.progress(true);
    progress.phase('homes', 'load', 10);
    progress.update('homes', 5);
    progress.done('homes', 'loaded');
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
