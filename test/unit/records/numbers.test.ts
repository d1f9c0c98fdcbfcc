import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { exactNumber, InexactNumber, jsonText, parseExact } from '../../../src/records/numbers.js';

describe('numbers kept exactly or refused (numbers.ts)', () => {
  test('an integer past 2^53 within 64 bits is a bigint; what a double holds stays a number', () => {
    assert.equal(exactNumber('9007199254740993'), 9007199254740993n, '2^53 + 1 is not rounded');
    assert.equal(exactNumber('9007199254740992'), 9007199254740992n, '2^53: an integer column');
    assert.equal(exactNumber('9007199254740991'), 9007199254740991);
    assert.equal(exactNumber('-9223372036854775808'), -9223372036854775808n);
    assert.equal(exactNumber('9223372036854775807'), 9223372036854775807n);
    assert.equal(exactNumber('9007199254740993.0'), 9007199254740993n, 'the real wire: 2022.0');
    assert.equal(exactNumber('2022.0'), 2022);
    assert.equal(exactNumber('1.5'), 1.5);
    assert.equal(exactNumber('1e5'), 100000);
    assert.equal(exactNumber('0.1234567890123456789'), 0.12345678901234568, 'a fraction, rounded');
    assert.equal(exactNumber('0e-400'), 0);
  });

  test('an integer past 64 bits, past a double, or rounded to zero is refused as written', () => {
    const refused = (text: string, why: RegExp) =>
      assert.throws(
        () => exactNumber(text),
        (error: Error) =>
          error instanceof InexactNumber &&
          error.message.startsWith(`the number ${text} cannot be stored exactly: `) &&
          why.test(error.message),
        text,
      );
    refused('99999999999999999999999', /an integer beyond 64 bits/);
    refused('9223372036854775808', /an integer beyond 64 bits/);
    refused('-9223372036854775809', /an integer beyond 64 bits/);
    refused('1e400', /beyond a double's range/);
    refused('-1.5E+309', /beyond a double's range/);
    refused('1e-400', /a double rounds it to 0/);
  });

  test('an integer written with an exponent follows the rule of its plain spelling (it was rounded as a double)', () => {
    assert.equal(exactNumber('9.007199254740993e15'), 9007199254740993n);
    assert.equal(exactNumber('9007199254740993E0'), 9007199254740993n);
    assert.equal(exactNumber('90071992547409.93e2'), 9007199254740993n);
    assert.equal(exactNumber('-9.223372036854775808e18'), -9223372036854775808n);
    assert.equal(exactNumber('9.1e16'), 91000000000000000n, 'as 91000000000000000 is');
    assert.equal(exactNumber('2.022e3'), 2022);
    assert.equal(exactNumber('-1.5e3'), -1500);
    assert.equal(exactNumber('1.5e-3'), 0.0015, 'a fraction is a double, as ever');
    assert.throws(
      () => exactNumber('1e20'),
      /1e20 cannot be stored exactly: an integer beyond 64 bits/,
    );
    assert.throws(
      () => exactNumber('9.223372036854775808e18'),
      /an integer beyond 64 bits/,
      'as 9223372036854775808 is',
    );
    assert.deepEqual(
      parseExact('{"a":9.007199254740993e15,"b":[1.5e3],"c":"9.007199254740993e15"}'),
      {
        a: 9007199254740993n,
        b: [1500],
        c: '9.007199254740993e15',
      },
    );
  });

  test('JSON with numbers a double cannot hold: exact values at any depth; strings untouched', () => {
    const line =
      '{"id":"p1","note":"1234567890123456789 and 5e400 in a string, \\"quoted\\"","big":9007199254740993,' +
      '"prices":[{"amountMin":1.5,"listingId":-9223372036854775808}],"__proto__":9007199254740995,' +
      '"small":12,"real":2.5e-3,"nested":{"deep":[1,9007199254740997]}}';
    const value = parseExact(line) as Record<string, unknown>;
    assert.equal(value.big, 9007199254740993n);
    assert.deepEqual(value.prices, [{ amountMin: 1.5, listingId: -9223372036854775808n }]);
    assert.equal(Object.getOwnPropertyDescriptor(value, '__proto__')?.value, 9007199254740995n);
    assert.equal(Object.getPrototypeOf(value), Object.prototype, 'a field, not the prototype');
    assert.equal(value.note, '1234567890123456789 and 5e400 in a string, "quoted"');
    assert.deepEqual(value.nested, { deep: [1, 9007199254740997n] });
    assert.equal(value.small, 12);
    assert.equal(value.real, 0.0025);
    // Strings holding the character that names numbers in the first place: another is taken.
    const marked = '{"a":"\ue000 and \\ue001 and \\uE002","b":9007199254740993}';
    assert.deepEqual(parseExact(marked), {
      a: '\ue000 and \ue001 and \ue002',
      b: 9007199254740993n,
    });
    // A text with no number past a double is JSON.parse's own, errors and all.
    assert.deepEqual(parseExact('{"a":1}'), { a: 1 });
    assert.throws(() => parseExact('{"a": 99999999999999999 x}'), SyntaxError);
    assert.throws(
      () => parseExact('{"a":12345678901234567890'),
      (error: Error) => error.message === jsonError('{"a":12345678901234567890'),
      'the position JSON.parse gives for the text as written',
    );
  });

  test('a number that cannot be held names its field, as written', () => {
    const reason = (text: string) => {
      try {
        parseExact(text);
      } catch (error) {
        if (error instanceof InexactNumber) return error.message;
        throw error;
      }
      return undefined;
    };
    assert.equal(
      reason('{"score":1e400}'),
      "score: the number 1e400 cannot be stored exactly: beyond a double's range",
    );
    assert.equal(
      reason('{"prices":[{"amountMin":99999999999999999999999}]}'),
      'prices.amountMin: the number 99999999999999999999999 cannot be stored exactly: an integer beyond 64 bits',
    );
    assert.equal(
      reason('[1e-400]'),
      'the number 1e-400 cannot be stored exactly: a double rounds it to 0',
    );
  });

  test('a value holding a bigint is written as JSON with its digits; others as JSON.stringify writes them', () => {
    const value = {
      a: [1, 9007199254740993n, null, 'x"y'],
      b: { c: -9223372036854775808n },
      d: true,
    };
    assert.equal(
      jsonText(value),
      '{"a":[1,9007199254740993,null,"x\\"y"],"b":{"c":-9223372036854775808},"d":true}',
    );
    const plain = { a: [1, 2.5, 'é', null], b: { c: false } };
    assert.equal(jsonText(plain), JSON.stringify(plain));
    assert.deepEqual(parseExact(jsonText(value)), value, 'reads back as it was');
  });
});

function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  return '';
}
