/**
 * The load core's parts that need no database: what a handle learns of its tables when a
 * transaction commits (`CommittedTables`), and how a schema contract weighs a table's changes
 * (`changesUnderContract`). The destination contract suite runs them against every destination.
 */
import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { CommittedTables } from '../../../src/load/core/committed-tables.js';
import { changesUnderContract } from '../../../src/load/core/schema-contract.js';
import type { TableContract } from '../../../src/load/destination.js';
import type { ColumnType } from '../../../src/schema/types.js';

const cols = (entries: [string, ColumnType][]) => new Map<string, ColumnType>(entries);

/**
 * What a committed transaction tells of table `t`: its columns (none: dropped), and whether it
 * was changed under the table's lock (`known`) and made by it.
 */
function seenOfT(
  columns: [string, ColumnType][] | undefined,
  how: { known?: true; made?: true } = {},
) {
  return {
    tables: new Map([['t', columns && cols(columns)]]),
    known: new Set(how.known ? ['t'] : []),
    made: how.made ? ['t'] : [],
  };
}

describe('CommittedTables', () => {
  test('a table changed or described under its lock is learnt as the transaction saw it', () => {
    const committed = new CommittedTables();
    committed.learn(seenOfT([['a', 'integer']]));
    committed.learn(seenOfT([['a', 'real']], { known: true, made: true }));
    assert.deepEqual([...committed.columns('t')!], [['a', 'real']]);
    assert.equal(committed.madeHere('t'), true);
  });

  test('a table only described is learnt if unknown, never overwritten', () => {
    const committed = new CommittedTables();
    committed.learn(seenOfT([['a', 'integer']]));
    committed.learn(seenOfT([['a', 'text']]));
    assert.deepEqual([...committed.columns('t')!], [['a', 'integer']]);
    assert.equal(committed.madeHere('t'), false);
  });

  test('a table dropped is forgotten', () => {
    const committed = new CommittedTables();
    committed.learn(seenOfT([['a', 'integer']]));
    committed.learn(seenOfT(undefined, { known: true }));
    assert.equal(committed.columns('t'), undefined);
  });
});

describe('changesUnderContract', () => {
  const base = cols([['a', 'integer']]);
  const weigh = (contract: TableContract, staged = false) =>
    changesUnderContract({
      contract,
      changes: { create: false, add: [{ name: 'b', type: 'text' }], widen: [] },
      base,
      staged,
      live: 'live',
      logical: (c) => c.toUpperCase(),
    });

  test('new columns: evolve keeps them, discard leaves them out and says so', () => {
    assert.deepEqual(weigh({ newColumns: 'evolve', typeChanges: 'freeze' }).add, [
      { name: 'b', type: 'text' },
    ]);
    const told: [string, string[]][] = [];
    const discarded = weigh({
      newColumns: 'discard',
      typeChanges: 'widen',
      onDiscard: (table, fields) => told.push([table, fields]),
    });
    assert.deepEqual(discarded.add, []);
    assert.deepEqual(told, [['live', ['B']]]);
  });

  test('freeze fails the job, naming the fields', () => {
    assert.throws(
      () => weigh({ newColumns: 'freeze', typeChanges: 'widen' }),
      (e: Error & { code?: string }) =>
        e.code === 'SLUICE_SCHEMA_CONTRACT' && /: B;/.test(e.message),
    );
  });

  test('frozen types: a widening fails; a staging table keeps the live type that holds', () => {
    const changes = {
      create: false,
      add: [],
      widen: [{ name: 'a', from: 'integer' as const, to: 'real' as const }],
    };
    const contract: TableContract = { newColumns: 'evolve', typeChanges: 'freeze' };
    const logical = (c: string) => c;
    assert.throws(
      () => changesUnderContract({ contract, changes, base, staged: false, live: 'live', logical }),
      /a \(integer -> real\)/,
    );
    const held = changesUnderContract({
      contract,
      changes: { create: false, add: [{ name: 'a', type: 'integer' }], widen: [] },
      base,
      staged: true,
      live: 'live',
      logical,
    });
    assert.deepEqual(held.add, [{ name: 'a', type: 'integer' }]);
  });
});
