/**
 * The query checks against queries made to be slow, each beside an ordinary query checked the
 * same way in the same run: a query over the length limit (refused before it is parsed), runs of
 * one token as long as the limit allows, thousands of unknown fields, and a field name of the
 * longest length. Each took seconds, gigabytes or ran out of memory before it was guarded; the
 * unit tests check what they throw, this script how long that takes.
 *
 *   npx tsx test/bench/query.ts
 */
import { checkQuery } from '../../src/query/lint.js';
import { MAX_QUERY_LENGTH, parseQuery } from '../../src/query/parse.js';

function ms(work: () => unknown): number {
  const start = performance.now();
  try {
    work();
  } catch {
    // the pathological ones throw: that is the point
  }
  return performance.now() - start;
}

const ordinary = 'city:Austin AND province:TX AND prices.amountMin:[100000 TO *]';
const ids = Array.from({ length: 1_666_667 }, (_, i) => `x${String(i).padStart(7, '0')}`);
const idList = `id:(${ids.join(' OR ')})`;
const terms = 'city:Austin '.repeat(1_000_000);
const cases: [string, () => unknown][] = [
  ['an ordinary query, parsed', () => parseQuery(ordinary)],
  ['an ordinary query, checked against the catalogue', () => checkQuery(ordinary, 'properties')],
  ['a 20 MB list of ids (over the limit)', () => parseQuery(idList)],
  ['12 million characters of terms (over the limit)', () => checkQuery(terms, 'properties')],
  ['a run of NOT as long as the limit', () => parseQuery('NOT '.repeat(MAX_QUERY_LENGTH / 4 - 1))],
  ['a run of ( as long as the limit', () => parseQuery(`x:${'('.repeat(MAX_QUERY_LENGTH - 2)}`)],
  ['an unterminated quote as long as the limit', () => parseQuery(`"${'a '.repeat(49_999)}`)],
  [
    '9,000 unknown fields',
    () => checkQuery(Array.from({ length: 9000 }, (_, i) => `citx${i}:x`).join(' '), 'properties'),
  ],
  [
    'a field name of 98,999 characters',
    () => checkQuery(`${'ab.'.repeat(33_000).slice(0, -1)}:x`, 'properties'),
  ],
];
console.log('case                                                 ms (best of 3)');
for (const [name, work] of cases) {
  const best = Math.min(ms(work), ms(work), ms(work));
  console.log(`${name.padEnd(52)} ${best.toFixed(2).padStart(9)}`);
}
