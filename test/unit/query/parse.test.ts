import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { QueryError } from '../../../src/errors.js';
import type { QueryNode, TermValue } from '../../../src/query/ast.js';
import { MAX_QUERY_LENGTH, parseQuery } from '../../../src/query/parse.js';

/** A compact rendering of the tree, so precedence tests read like the query they check. */
function shape(node: QueryNode): string {
  switch (node.type) {
    case 'all':
      return 'ALL';
    case 'not':
      return `(NOT ${shape(node.child)})`;
    case 'and':
    case 'or':
      return `(${node.type.toUpperCase()} ${node.children.map(shape).join(' ')})`;
    case 'term':
      return `${node.field === null ? '' : `${node.field}:`}${value(node.value)}`;
  }
}

function value(v: TermValue): string {
  switch (v.kind) {
    case 'exact':
      return v.quoted ? JSON.stringify(v.text) : v.text;
    case 'prefix':
      return `${v.prefix}*`;
    case 'exists':
      return '*';
    case 'range':
      return `${v.includeLower ? '[' : '{'}${v.lower ?? '*'} TO ${v.upper ?? '*'}${v.includeUpper ? ']' : '}'}`;
  }
}

function syntaxError(query: string, message: string, start: number, end: number): void {
  assert.throws(
    () => parseQuery(query),
    (error: unknown) => {
      assert.ok(error instanceof QueryError, `expected a QueryError for ${query}`);
      assert.equal(error.message, message);
      assert.deepEqual({ start: error.start, end: error.end }, { start, end });
      assert.equal(error.code, 'SLUICE_QUERY_SYNTAX');
      assert.equal(error.query, query);
      return true;
    },
  );
}

describe('parseQuery: terms', () => {
  test('the empty query, blank space, * and *:* match everything', () => {
    assert.deepEqual(parseQuery(''), { type: 'all', span: { start: 0, end: 0 } });
    assert.deepEqual(parseQuery('   '), { type: 'all', span: { start: 0, end: 3 } });
    assert.deepEqual(parseQuery('*'), { type: 'all', span: { start: 0, end: 1 } });
    assert.deepEqual(parseQuery('*:*'), { type: 'all', span: { start: 0, end: 3 } });
    assert.deepEqual(parseQuery('  *:* '), { type: 'all', span: { start: 2, end: 5 } });
  });

  test('field:value with every span', () => {
    assert.deepEqual(parseQuery('city:Austin'), {
      type: 'term',
      field: 'city',
      fieldSpan: { start: 0, end: 4 },
      value: { kind: 'exact', text: 'Austin', quoted: false },
      valueSpan: { start: 5, end: 11 },
      span: { start: 0, end: 11 },
    });
  });

  test('a bare value has no field and no field span', () => {
    const node = parseQuery('  Austin');
    assert.deepEqual(node, {
      type: 'term',
      field: null,
      value: { kind: 'exact', text: 'Austin', quoted: false },
      valueSpan: { start: 2, end: 8 },
      span: { start: 2, end: 8 },
    });
    assert.ok(!('fieldSpan' in node));
  });

  test('quoted values are exact, keep spaces and wildcards, and unescape \\" and \\\\', () => {
    assert.deepEqual(parseQuery('city:"New York"'), {
      type: 'term',
      field: 'city',
      fieldSpan: { start: 0, end: 4 },
      value: { kind: 'exact', text: 'New York', quoted: true },
      valueSpan: { start: 5, end: 15 },
      span: { start: 0, end: 15 },
    });
    assert.equal(shape(parseQuery('name:"The \\"Best\\" Diner"')), 'name:"The \\"Best\\" Diner"');
    const quoted = parseQuery('name:"a\\\\b"');
    assert.equal(
      quoted.type === 'term' && quoted.value.kind === 'exact' && quoted.value.text,
      'a\\b',
    );
    assert.equal(shape(parseQuery('city:"Aus*"')), 'city:"Aus*"');
    assert.equal(shape(parseQuery('"New York"')), '"New York"');
    assert.equal(shape(parseQuery('city:""')), 'city:""');
  });

  test('a trailing * makes a prefix; repeated trailing stars are one', () => {
    assert.deepEqual(parseQuery('city:Aus*'), {
      type: 'term',
      field: 'city',
      fieldSpan: { start: 0, end: 4 },
      value: { kind: 'prefix', prefix: 'Aus' },
      valueSpan: { start: 5, end: 9 },
      span: { start: 0, end: 9 },
    });
    assert.equal(shape(parseQuery('city:Aus**')), 'city:Aus*');
    assert.equal(shape(parseQuery('Aus*')), 'Aus*');
  });

  test('an escaped * is a literal character, not a wildcard', () => {
    assert.deepEqual((parseQuery('name:a\\*') as { value: TermValue }).value, {
      kind: 'exact',
      text: 'a*',
      quoted: false,
    });
    assert.deepEqual((parseQuery('name:a\\*b*') as { value: TermValue }).value, {
      kind: 'prefix',
      prefix: 'a*b',
    });
    assert.deepEqual((parseQuery('name:a\\ b') as { value: TermValue }).value, {
      kind: 'exact',
      text: 'a b',
      quoted: false,
    });
  });

  test('field:* is an existence check', () => {
    assert.deepEqual(parseQuery('address:*'), {
      type: 'term',
      field: 'address',
      fieldSpan: { start: 0, end: 7 },
      value: { kind: 'exists' },
      valueSpan: { start: 8, end: 9 },
      span: { start: 0, end: 9 },
    });
  });

  test('dotted field paths', () => {
    const node = parseQuery('people.phoneNumbers.number:5125550100');
    assert.equal(shape(node), 'people.phoneNumbers.number:5125550100');
    assert.deepEqual(node.type === 'term' && node.fieldSpan, { start: 0, end: 26 });
  });

  test('values may contain colons, dashes and other punctuation', () => {
    assert.equal(
      shape(parseQuery('dateAdded:2020-01-01T00:00:00Z')),
      'dateAdded:2020-01-01T00:00:00Z',
    );
    assert.equal(
      shape(parseQuery('sourceURLs:http://x.com/a?b=1')),
      'sourceURLs:http://x.com/a?b=1',
    );
    assert.equal(shape(parseQuery('price:-5')), 'price:-5');
  });

  test('upper-case keywords written as values or field names are not operators', () => {
    assert.equal(shape(parseQuery('province:OR')), 'province:OR');
    assert.equal(shape(parseQuery('AND:x')), 'AND:x');
    assert.equal(shape(parseQuery('a and b')), '(AND a and b)');
    assert.equal(shape(parseQuery('NOTE')), 'NOTE');
  });
});

describe('parseQuery: ranges and comparisons', () => {
  test('[a TO b] is inclusive, {a TO b} exclusive, and they may be mixed', () => {
    assert.deepEqual(parseQuery('numBedroom:[2 TO 4]'), {
      type: 'term',
      field: 'numBedroom',
      fieldSpan: { start: 0, end: 10 },
      value: { kind: 'range', lower: '2', upper: '4', includeLower: true, includeUpper: true },
      valueSpan: { start: 11, end: 19 },
      span: { start: 0, end: 19 },
    });
    assert.equal(shape(parseQuery('numBedroom:{2 TO 4}')), 'numBedroom:{2 TO 4}');
    assert.equal(shape(parseQuery('numBedroom:[2 TO 4}')), 'numBedroom:[2 TO 4}');
    assert.equal(shape(parseQuery('numBedroom:{2 TO 4]')), 'numBedroom:{2 TO 4]');
  });

  test('* is an open end, and extra spaces inside brackets are fine', () => {
    assert.equal(
      shape(parseQuery('prices.amountMin:[100000 TO *]')),
      'prices.amountMin:[100000 TO *]',
    );
    const open = parseQuery('yearBuilt:[ * TO 2000 ]');
    assert.deepEqual(open.type === 'term' && open.value, {
      kind: 'range',
      lower: null,
      upper: '2000',
      includeLower: true,
      includeUpper: true,
    });
    assert.equal(shape(parseQuery('x:[* TO *]')), 'x:[* TO *]');
  });

  test('range bounds may be quoted, or hold dates with colons', () => {
    const node = parseQuery('city:["A b" TO "C\\"d"]');
    assert.deepEqual(node.type === 'term' && node.value, {
      kind: 'range',
      lower: 'A b',
      upper: 'C"d',
      includeLower: true,
      includeUpper: true,
    });
    assert.equal(
      shape(parseQuery('dateAdded:[2020-01-01T00:00:00Z TO 2021-01-01]')),
      'dateAdded:[2020-01-01T00:00:00Z TO 2021-01-01]',
    );
    const star = parseQuery('x:["*" TO b]');
    assert.equal(star.type === 'term' && star.value.kind === 'range' && star.value.lower, '*');
  });

  test('>, >=, < and <= are one-sided ranges whose open end takes the same inclusiveness', () => {
    const values = ['>5', '>=5', '<5', '<=5'].map((op) => {
      const node = parseQuery(`price:${op}`);
      assert.equal(node.type, 'term');
      return node.type === 'term' ? node.value : null;
    });
    assert.deepEqual(values, [
      { kind: 'range', lower: '5', upper: null, includeLower: false, includeUpper: false },
      { kind: 'range', lower: '5', upper: null, includeLower: true, includeUpper: true },
      { kind: 'range', lower: null, upper: '5', includeLower: false, includeUpper: false },
      { kind: 'range', lower: null, upper: '5', includeLower: true, includeUpper: true },
    ]);
    const node = parseQuery('price:>=-2.5');
    assert.deepEqual(node.type === 'term' && [node.valueSpan, node.span], [
      { start: 6, end: 12 },
      { start: 0, end: 12 },
    ]);
    assert.equal(shape(parseQuery('name:>"M a"')), 'name:{M a TO *}');
  });
});

describe('parseQuery: operators and precedence', () => {
  test('AND, OR and NOT', () => {
    assert.equal(shape(parseQuery('a:1 AND b:2')), '(AND a:1 b:2)');
    assert.equal(shape(parseQuery('a:1 OR b:2')), '(OR a:1 b:2)');
    assert.equal(shape(parseQuery('NOT a:1')), '(NOT a:1)');
  });

  test('chains of one operator become one node', () => {
    const node = parseQuery('a AND b AND c');
    assert.equal(node.type === 'and' && node.children.length, 3);
    assert.equal(shape(parseQuery('a OR b OR c OR d')), '(OR a b c d)');
  });

  test('adjacent terms are joined with AND', () => {
    assert.equal(shape(parseQuery('city:Austin province:TX')), '(AND city:Austin province:TX)');
    assert.equal(shape(parseQuery('a "b c" d*')), '(AND a "b c" d*)');
  });

  test('AND binds tighter than OR, implicit AND too, and NOT tightest', () => {
    assert.equal(shape(parseQuery('a OR b AND c')), '(OR a (AND b c))');
    assert.equal(shape(parseQuery('a AND b OR c')), '(OR (AND a b) c)');
    assert.equal(shape(parseQuery('a b OR c d')), '(OR (AND a b) (AND c d))');
    assert.equal(shape(parseQuery('NOT a b')), '(AND (NOT a) b)');
    assert.equal(shape(parseQuery('NOT a OR b')), '(OR (NOT a) b)');
    assert.equal(shape(parseQuery('a AND NOT b OR c')), '(OR (AND a (NOT b)) c)');
  });

  test('parentheses override precedence', () => {
    assert.equal(shape(parseQuery('(a OR b) AND c')), '(AND (OR a b) c)');
    assert.equal(shape(parseQuery('(a OR b) c')), '(AND (OR a b) c)');
    assert.equal(shape(parseQuery('NOT (a OR b)')), '(NOT (OR a b))');
    assert.equal(shape(parseQuery('NOT(a OR b)')), '(NOT (OR a b))');
    assert.equal(shape(parseQuery('((a))')), 'a');
    assert.equal(shape(parseQuery('(a (b OR (c d)))')), '(AND a (OR b (AND c d)))');
  });

  test('- negates, + is accepted and ignored', () => {
    assert.equal(shape(parseQuery('-city:Austin')), '(NOT city:Austin)');
    assert.equal(
      shape(parseQuery('city:Austin -province:TX')),
      '(AND city:Austin (NOT province:TX))',
    );
    assert.equal(
      shape(parseQuery('+city:Austin -"New York"')),
      '(AND city:Austin (NOT "New York"))',
    );
    assert.equal(shape(parseQuery('-(a OR b)')), '(NOT (OR a b))');
    assert.equal(shape(parseQuery('--a')), '(NOT (NOT a))');
    assert.equal(shape(parseQuery('NOT NOT a')), '(NOT (NOT a))');
    assert.equal(shape(parseQuery('a OR -b')), '(OR a (NOT b))');
  });

  test('spans of operators and groups', () => {
    const not = parseQuery('-city:Austin');
    assert.deepEqual(not.span, { start: 0, end: 12 });
    assert.deepEqual(not.type === 'not' && not.child.span, { start: 1, end: 12 });
    assert.deepEqual(parseQuery('NOT  a').span, { start: 0, end: 6 });

    const or = parseQuery(' a:1 OR b:2 ');
    assert.deepEqual(or.span, { start: 1, end: 11 });

    const and = parseQuery('(a OR b) c');
    assert.deepEqual(and.span, { start: 0, end: 10 });
    assert.deepEqual(and.type === 'and' && and.children[0]!.span, { start: 0, end: 8 });
    assert.deepEqual(parseQuery('(a)').span, { start: 0, end: 3 });
  });
});

describe('parseQuery: field groups', () => {
  test('field:(a OR b) gives each bare value the field, with the group field span', () => {
    const node = parseQuery('city:(Austin OR "San Antonio")');
    assert.deepEqual(node, {
      type: 'or',
      children: [
        {
          type: 'term',
          field: 'city',
          fieldSpan: { start: 0, end: 4 },
          value: { kind: 'exact', text: 'Austin', quoted: false },
          valueSpan: { start: 6, end: 12 },
          span: { start: 6, end: 12 },
        },
        {
          type: 'term',
          field: 'city',
          fieldSpan: { start: 0, end: 4 },
          value: { kind: 'exact', text: 'San Antonio', quoted: true },
          valueSpan: { start: 16, end: 29 },
          span: { start: 16, end: 29 },
        },
      ],
      span: { start: 0, end: 30 },
    });
  });

  test('groups hold any value form and any operators', () => {
    assert.equal(shape(parseQuery('city:(Aus* -Austin)')), '(AND city:Aus* (NOT city:Austin))');
    assert.equal(shape(parseQuery('price:(>5 OR [1 TO 2])')), '(OR price:{5 TO *} price:[1 TO 2])');
    assert.equal(shape(parseQuery('city:(a OR (b c))')), '(OR city:a (AND city:b city:c))');
    assert.equal(shape(parseQuery('city:(*)')), 'city:*');
    assert.equal(shape(parseQuery('-city:(a OR b) x')), '(AND (NOT (OR city:a city:b)) x)');
  });

  test('a field named inside a group wins over the group field', () => {
    assert.equal(shape(parseQuery('city:(a OR province:TX)')), '(OR city:a province:TX)');
  });
});

describe('parseQuery: syntax errors name the problem and where it is', () => {
  test('unterminated quote covers the quote to the end', () => {
    syntaxError('city:"New York', 'unterminated quote', 5, 14);
    syntaxError('city:"New York\\"', 'unterminated quote', 5, 16);
    syntaxError('x:["a TO b]', 'unterminated quote', 3, 11);
  });

  test('a field with no value', () => {
    syntaxError('city:', "expected a value after 'city:'", 0, 5);
    syntaxError('a city: Austin', "expected a value after 'city:'", 2, 7);
    syntaxError('(city:)', "expected a value after 'city:'", 1, 6);
  });

  test('unclosed and unmatched parentheses', () => {
    syntaxError('(a OR b', "expected ')' to close '(' opened at 0", 0, 1);
    syntaxError('x AND (a', "expected ')' to close '(' opened at 6", 6, 7);
    syntaxError('city:(a OR b', "expected ')' to close '(' opened at 5", 5, 6);
    syntaxError('((a)', "expected ')' to close '(' opened at 0", 0, 1);
    syntaxError('(', "expected ')' to close '(' opened at 0", 0, 1);
    syntaxError('a)', "unexpected ')' with no matching '('", 1, 2);
    syntaxError(') a', "unexpected ')' with no matching '('", 0, 1);
    syntaxError('x ( )', 'empty parentheses', 2, 5);
  });

  test('operators with a term missing', () => {
    syntaxError('city:Austin AND', "unexpected 'AND' at end of query", 12, 15);
    syntaxError('a OR ', "unexpected 'OR' at end of query", 2, 4);
    syntaxError('NOT', "unexpected 'NOT' at end of query", 0, 3);
    syntaxError('AND a', "unexpected 'AND' at start of query", 0, 3);
    syntaxError(' OR a', "unexpected 'OR' at start of query", 1, 3);
    syntaxError('(OR a)', "unexpected 'OR' after '('", 1, 3);
    syntaxError('a AND OR b', "unexpected 'OR' after 'AND'", 6, 8);
    syntaxError('a OR AND b', "unexpected 'AND' after 'OR'", 5, 8);
    syntaxError('NOT AND b', "unexpected 'AND' after 'NOT'", 4, 7);
    syntaxError('(a AND)', "expected a term after 'AND'", 3, 6);
    syntaxError('-', "expected a term right after '-'", 0, 1);
    syntaxError('a - b', "expected a term right after '-'", 2, 3);
    syntaxError('(a +)', "expected a term right after '+'", 3, 4);
    syntaxError('-AND b', "unexpected 'AND' after '-'", 1, 4);
  });

  test('ranges', () => {
    syntaxError('x:[1 5]', "range needs 'TO', found '5'", 5, 6);
    syntaxError('x:[1 to 5]', "range needs 'TO', found 'to'", 5, 7);
    syntaxError('x:[1]', "range needs 'TO'", 4, 5);
    syntaxError('x:[1 "TO" 5]', `range needs 'TO', found '"TO"'`, 5, 9);
    syntaxError('x:[ TO 5]', "expected a lower bound before 'TO'", 4, 6);
    syntaxError('x:[]', "expected a lower bound after '['", 2, 4);
    syntaxError('x:[1 TO ]', "expected an upper bound after 'TO'", 5, 7);
    syntaxError('x:[1 TO 5', "expected ']' or '}' to close '[' opened at 2", 2, 3);
    syntaxError('x:{1 TO', "expected ']' or '}' to close '{' opened at 2", 2, 3);
    syntaxError('x:[1', "expected ']' or '}' to close '[' opened at 2", 2, 3);
    syntaxError('x:[1 TO 5 6]', "expected ']' or '}' to close '[' opened at 2, found '6]'", 10, 12);
    syntaxError('x:[1 TO 5]z', "unexpected 'z' after ']'", 10, 11);
    syntaxError('x:[1* TO 5]', 'wildcards are not allowed in range bounds', 4, 5);
    syntaxError('[1 TO 2]', 'a range needs a field, as in price:[1 TO 2]', 0, 1);
  });

  test('comparisons', () => {
    syntaxError('x:>', "expected a value after '>'", 2, 3);
    syntaxError('x:>= 5', "expected a value after '>='", 2, 4);
    syntaxError('(x:<)', "expected a value after '<'", 3, 4);
    syntaxError('x:>*', "a comparison needs a value, not '*'", 3, 4);
    syntaxError('x:<=5*', 'wildcards are not allowed in a comparison', 5, 6);
    syntaxError('>5', 'a comparison needs a field, as in price:>100', 0, 1);
  });

  test('wildcards anywhere but the end', () => {
    syntaxError('city:A*s', 'wildcards are only supported at the end of a value', 6, 7);
    syntaxError('city:*stin', 'wildcards are only supported at the end of a value', 5, 6);
    syntaxError('*stin', 'wildcards are only supported at the end of a value', 0, 1);
    syntaxError('a*b*', 'wildcards are only supported at the end of a value', 1, 2);
  });

  test('field names', () => {
    syntaxError('foo-bar:1', "'foo-bar' is not a valid field name", 0, 7);
    syntaxError('prices..amountMin:1', "'prices..amountMin' is not a valid field name", 0, 17);
    syntaxError('a OR :x', "expected a field name before ':'", 5, 6);
    syntaxError('*:Austin', "'*' is not a valid field name", 0, 1);
    syntaxError('ci\\ty:x', "'city' is not a valid field name", 0, 5);
  });

  test('stray quotes, escapes and text after a closing quote', () => {
    syntaxError(
      'city:Aus"tin"',
      `unexpected '"' inside a value; quote the whole value or write \\"`,
      8,
      9,
    );
    syntaxError('city:"a"b', "unexpected 'b' after the closing quote", 8, 9);
    syntaxError('city:"a"* x', "unexpected '*' after the closing quote", 8, 9);
    syntaxError('city:Austin\\', "dangling '\\' at end of query", 11, 12);
  });

  test('deep nesting is an error, not a stack overflow', () => {
    syntaxError(`${'('.repeat(500)}a${')'.repeat(500)}`, 'query is nested too deeply', 100, 101);
    syntaxError(`${'-'.repeat(500)}a`, 'query is nested too deeply', 100, 101);
    assert.equal(shape(parseQuery(`${'('.repeat(50)}a${')'.repeat(50)}`)), 'a');
  });

  test('the excerpt points at the offending text', () => {
    try {
      parseQuery('city:Austin AND');
      assert.fail('expected a QueryError');
    } catch (error) {
      assert.ok(error instanceof QueryError);
      assert.equal(error.excerpt, 'city:Austin AND\n            ^^^');
    }
  });
});

/** What `parse` threw (how long such queries take is measured by test/bench/query.ts). */
function thrown(parse: () => unknown): unknown {
  try {
    parse();
    return undefined;
  } catch (error) {
    return error;
  }
}

describe('parseQuery: queries too long or made to be slow', () => {
  test('a 20 MB query fails at once with its length and the limit, instead of taking seconds and gigabytes', () => {
    // A long list of ids, the likeliest way to get here; it took 6 s and half a gigabyte, and a
    // 20 MB single word ran out of memory.
    const ids = Array.from({ length: 1_666_667 }, (_, i) => `x${String(i).padStart(7, '0')}`);
    const query = `id:(${ids.join(' OR ')})`;
    const error = thrown(() => parseQuery(query));
    assert.ok(error instanceof QueryError, 'a QueryError');
    assert.equal(error.code, 'SLUICE_QUERY_TOO_LONG');
    assert.equal(
      error.message,
      `query is ${query.length.toLocaleString('en-US')} characters long; the limit is 100,000: split it into several queries`,
    );
    // Its start, not 20 MB of query and 20 MB of spaces on a terminal.
    const head = query.slice(0, 60);
    assert.equal(error.excerpt, `${head}...\n${' '.repeat(60)}^^^`);
  });

  test(`the limit is ${MAX_QUERY_LENGTH.toLocaleString('en-US')} characters, far above real queries`, () => {
    assert.equal(MAX_QUERY_LENGTH, 100_000);
    const longest = `city:"${'a'.repeat(MAX_QUERY_LENGTH - 7)}"`;
    assert.equal(parseQuery(longest).type, 'term');
    assert.throws(() => parseQuery(`${longest} `), { code: 'SLUICE_QUERY_TOO_LONG' });
    // Line ends of a query written over several lines keep the caret under the end.
    assert.throws(
      () => parseQuery(`city:Austin\nAND ${longest}`),
      (error: QueryError) => {
        assert.equal(error.excerpt.split('\n')[0], `city:Austin AND city:"${'a'.repeat(38)}...`);
        return true;
      },
    );
  });

  // Runs of operators, quotes, escapes and brackets as long as the limit allows: each a syntax
  // error named where it starts, found in a single pass, with no recursion past MAX_DEPTH.
  const runs: [string, string, string, number, number][] = [
    ['NOT', `${'NOT '.repeat(24_999)}a`, 'query is nested too deeply', 400, 401],
    ['-', `${'-'.repeat(99_999)}a`, 'query is nested too deeply', 100, 101],
    ['+-', `${'+-'.repeat(49_999)}a`, 'query is nested too deeply', 100, 101],
    ['(', '('.repeat(100_000), 'query is nested too deeply', 100, 101],
    [')', ')'.repeat(100_000), "unexpected ')' with no matching '('", 0, 1],
    ['AND', `a ${'AND '.repeat(24_999)}`, "unexpected 'AND' after 'AND'", 6, 9],
    ['OR', `a ${'OR '.repeat(33_332)}`, "unexpected 'OR' after 'OR'", 5, 7],
    [':', ':'.repeat(100_000), "expected a field name before ':'", 0, 1],
    [
      '"',
      '"'.repeat(100_000),
      `unexpected '${'"'.repeat(37)}...' after the closing quote`,
      2,
      100_000,
    ],
    ['\\', `"${'\\'.repeat(99_999)}`, 'unterminated quote', 0, 100_000],
    ['\\ (odd)', '\\'.repeat(99_999), "dangling '\\' at end of query", 99_998, 99_999],
    [
      '\\"',
      `${'\\"'.repeat(49_999)}"`,
      `unexpected '"' inside a value; quote the whole value or write \\"`,
      99_998,
      99_999,
    ],
    ['a*', 'a*'.repeat(50_000), 'wildcards are only supported at the end of a value', 1, 2],
    ['[', `x:${'['.repeat(99_998)}`, "expected ']' or '}' to close '[' opened at 2", 2, 3],
    ['open quote', `"${'a '.repeat(49_999)}`, 'unterminated quote', 0, 99_999],
  ];
  for (const [name, query, message, start, end] of runs) {
    test(`a run of ${name} as long as the limit allows is a syntax error, found at once`, () => {
      assert.ok(query.length <= MAX_QUERY_LENGTH);
      const error = thrown(() => parseQuery(query));
      assert.ok(error instanceof QueryError, `a QueryError, not ${error}`);
      assert.equal(error.code, 'SLUICE_QUERY_SYNTAX');
      assert.equal(error.message, message);
      assert.deepEqual({ start: error.start, end: error.end }, { start, end });
    });
  }
});
