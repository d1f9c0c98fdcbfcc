/**
 * Accounts on a legacy plan (section 8: "On a legacy plan, overall consumption is read from
 * num_credits_used"): no allotment per data type, one total for every type. The emulator models
 * one with `plan: 'legacy'`, or with `PUT /_emulator/plan`.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, test } from 'node:test';
import type { EmulatorHarness } from '../helpers/emulator.js';
import { advance, assertV4Error, runTime, startEmulator, V4, WIRES } from './support.js';

const TYPES = ['business', 'people', 'product', 'property'] as const;

for (const wire of WIRES) {
  describe(`a legacy plan (${wire})`, () => {
    let emu: EmulatorHarness;
    let api: V4;

    before(async () => {
      emu = await startEmulator(wire, { plan: 'legacy', totalCredits: 100 });
      api = new V4(emu);
    });
    after(() => emu.close());

    const fresh = async () => {
      await emu.reset();
      await api.login();
    };

    test('the account has no allotment per data type, and counts one total', async () => {
      await fresh();
      const account = await api.account();
      for (const t of TYPES) {
        assert.equal(account[`${t}_credits_allotted`], 0);
        assert.equal(account[`${t}_credits_used`], 0);
      }
      assert.equal(account.num_credits_used, 0);
      assert.deepEqual(await emu.control('GET', 'plan'), {
        plan: 'legacy',
        total_credits: 100,
        num_credits_used: 0,
      });
    });

    test('every data type spends from the total; autotrace takes two credits a record', async () => {
      await fresh();
      assert.equal((await api.preview('businesses', { query: '*', num_records: 3 })).total_cost, 3);
      const traced = await api.startDownload('properties', {
        query: '*',
        num_records: 5,
        auto_trace: true,
      });
      assert.equal(traced.start.json.total_cost, 10);
      await advance(emu, runTime(emu, 5));
      assert.equal((await api.download(traced.id)).status, 'completed');
      const account = await api.account();
      assert.equal(account.num_credits_used, 13);
      assert.equal(account.property_credits_used, 0, 'per-type fields stay zero');
    });

    test('a search that would pass the total is refused with 402 and charges nothing', async () => {
      await fresh();
      await emu.control('PUT', 'plan', { num_credits_used: 95 });
      const res = await api.search('properties', { query: '*', num_records: 6, download: true });
      assertV4Error(wire, res, 402, /needs 6, 5 remain on the plan/);
      assert.deepEqual(await api.ok('GET', '/downloads'), []);
      assert.equal((await api.account()).num_credits_used, 95);
      // What is left can still be spent, by any data type.
      assert.equal((await api.preview('people', { query: '*', num_records: 5 })).records.length, 5);
      assertV4Error(wire, await api.search('products', { query: '*', num_records: 1 }), 402);
      assert.equal((await api.account()).num_credits_used, 100);
    });

    test('a running download holds its credits: a second cannot overspend the total', async () => {
      await fresh();
      await api.startDownload('businesses', { query: '*', num_records: 60 });
      const second = await api.search('people', { query: '*', num_records: 60, download: true });
      assertV4Error(wire, second, 402, /needs 60, 40 remain/);
    });

    test('the control API switches plans; reset returns to the plan it started with', async () => {
      await fresh();
      assert.deepEqual(await emu.control('PUT', 'plan', { plan: 'per-type' }), {
        plan: 'per-type',
        total_credits: 100,
        num_credits_used: 0,
      });
      const perType = await api.account();
      assert.equal(perType.property_credits_allotted, 1_000_000);
      await emu.control('PUT', 'plan', { plan: 'legacy', total_credits: 7, num_credits_used: 2 });
      const legacy = await api.account();
      assert.equal(legacy.property_credits_allotted, 0);
      assert.equal(legacy.num_credits_used, 2);
      await assert.rejects(emu.control('PUT', 'plan', { plan: 'gold' }), /-> 400/);
      await emu.reset();
      assert.deepEqual(await emu.control('GET', 'plan'), {
        plan: 'legacy',
        total_credits: 100,
        num_credits_used: 0,
      });
    });
  });
}

describe('the default plan', () => {
  let emu: EmulatorHarness;
  before(async () => {
    emu = await startEmulator('contract');
  });
  after(() => emu.close());

  test('is per data type, as before', async () => {
    const api = new V4(emu);
    await api.login();
    const account = await api.account();
    assert.equal(account.property_credits_allotted, 1_000_000);
    assert.equal((await emu.control<{ plan: string }>('GET', 'plan')).plan, 'per-type');
  });
});
