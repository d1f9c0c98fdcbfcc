import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import yargs from 'yargs';
import { emulatorOptions, toEmulatorOptions } from '../../../src/cli/commands/emulator.js';
import { resolveOptions } from '../../../src/emulator/options.js';

/** `sluice emulator ARGS` as the options it starts the emulator with. */
function parse(...argv: string[]) {
  const args = emulatorOptions(yargs(argv).exitProcess(false).fail(false)).parseSync();
  return resolveOptions(toEmulatorOptions(args, () => {}));
}

describe('sluice emulator options', () => {
  it('answers in the live forms and lists whole by default', () => {
    const options = parse();
    assert.equal(options.wire, 'live');
    assert.equal(options.pageSize, 0);
  });

  it('--wire picks the contract forms or every variant; --page-size pages the lists', () => {
    assert.equal(parse('--wire', 'contract').wire, 'contract');
    assert.equal(parse('--wire', 'real').wire, 'real');
    assert.equal(parse('--page-size', '25').pageSize, 25);
  });

  it('refuses an unknown wire mode, a page size that is not a whole number, a scale of 0', () => {
    assert.throws(() => parse('--wire', 'guides'), /Choices/);
    assert.throws(
      () => parse('--page-size', '2.5'),
      /--page-size must be a whole number at least 0, not 2.5/,
    );
    assert.throws(
      () => parse('--page-size', '-1'),
      /--page-size must be a whole number at least 0, not -1/,
    );
    assert.throws(() => parse('--scale', '0'), /--scale must be a number above 0, not 0/);
    assert.throws(() => parse('--port', 'x'), /--port must be a whole number from 0 to 65,535/);
  });

  it('--extra-field serves fields beyond the core ones, repeatable', () => {
    assert.deepEqual(parse().extraFields, []);
    assert.deepEqual(
      parse('--extra-field', 'properties.buildingName', '--extra-field', 'people.x:boolean')
        .extraFields,
      ['properties.buildingName', 'people.x:boolean'],
    );
  });
});
