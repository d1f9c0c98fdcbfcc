import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { type CreditEstimate, capsOf, checkCredits } from '../../../src/pipeline/guard/estimate.js';
import { creditsFor } from '../../../src/pipeline/guard/figures.js';
import { rangeOf, rangeQuery } from '../../../src/pipeline/load/incremental.js';
import { parsePipeline } from '../../../src/pipeline/spec/spec.js';

/**
 * The guard's arithmetic for what a download asks for: whatever caps a job (its records:, its
 * max_credits, a budget of a credit type it spends, the account's credits left) makes the start
 * ask for the number the guard approved; with nothing to cap it, for every match. And an
 * incremental range ends just before the guard counts, so that count and download agree.
 */

const env = { SLUICE_API_URL: 'http://x.test/v4', SLUICE_EMAIL: 'a@b.c', SLUICE_PASSWORD: 'pw' };

function jobOf(settings: string) {
  const spec = parsePipeline(
    `version: 1
name: p
source:
  api: v4
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
jobs:
  homes:
    type: properties
    query: 'province:TX'
${settings}`,
    'p.yaml',
    env,
  );
  return spec.jobs[0]!;
}

/** The guard's estimate of 508 records found, on an account that says (or not) what is left. */
function estimateOf(settings: string, account: 'per-type' | 'none' | 'legacy'): CreditEstimate {
  const job = jobOf(settings);
  const records = Math.min(job.records ?? 508, 508);
  const credits =
    account === 'per-type'
      ? { plan: 'per-type' as const, left: { property: 10_000, people: 10_000 } }
      : account === 'legacy'
        ? { plan: 'legacy' as const, totalUsed: 5 }
        : { plan: 'none' as const };
  return checkCredits(job, 508, records, creditsFor(job, records), credits);
}

describe('what caps a download', () => {
  test('nothing caps a records: all job on v3 or a legacy plan without max_credits or a budget', () => {
    for (const account of ['none', 'legacy'] as const) {
      const estimate = estimateOf('    records: all\n', account);
      assert.equal(estimate.records, 508);
      assert.deepEqual(capsOf(jobOf('    records: all\n'), estimate, []), [], account);
    }
  });

  test('records:, max_credits, a budget of a type it spends and the account each cap it', () => {
    const capped = (settings: string, account: 'per-type' | 'none', budgets = []) =>
      capsOf(jobOf(settings), estimateOf(settings, account), budgets);
    assert.deepEqual(capped('    records: 100\n', 'none'), ['records: 100']);
    assert.deepEqual(capped('    max_credits: 508\n', 'none'), ['max_credits: 508']);
    const job = jobOf('');
    const estimate = estimateOf('', 'none');
    assert.deepEqual(capsOf(job, estimate, [{ type: 'property', period: 'month' }]), [
      'the property budget a month',
    ]);
    assert.deepEqual(
      capsOf(job, estimate, [{ type: 'business', period: 'day' }]),
      [],
      'not its type',
    );
    assert.deepEqual(capped('', 'per-type'), ["the account's credits left"]);
    // Autotrace spends people credits too: a people budget caps it.
    const traced = jobOf('    auto_trace: true\n');
    assert.deepEqual(
      capsOf(traced, estimateOf('    auto_trace: true\n', 'none'), [
        { type: 'people', period: 'week' },
      ]),
      ['the people budget a week'],
    );
  });

  test('the approved number is what the guard counted, at most records:', () => {
    assert.equal(estimateOf('    records: 100\n', 'none').records, 100);
    assert.equal(estimateOf('    records: 9000\n', 'none').records, 508);
    assert.equal(estimateOf('    max_credits: 508\n', 'none').records, 508);
  });
});

describe('an incremental range and the guard', () => {
  const job = { incremental: { cursor: 'dateUpdated', lookback: 0 } };
  const saved = {
    pipeline: 'p',
    job: 'homes',
    field: 'dateUpdated',
    value: '2026-11-20T10:00:00Z',
    updated_at: '',
    run_id: '',
    download_id: null,
  };

  test("ends the whole second before the service's time as the guard counts", () => {
    const now = Date.parse('2026-11-28T12:34:56.789Z');
    const range = rangeOf(job, saved, false, now)!;
    assert.equal(range.to, '2026-11-28T12:34:55Z');
    assert.equal(
      rangeQuery('province:TX', range),
      '(province:TX) AND dateUpdated:[2026-11-20T10:00:00Z TO 2026-11-28T12:34:55Z]',
    );
  });

  test('a first run, or a full refresh, has no bounds: every record', () => {
    const now = Date.parse('2026-11-28T12:34:56Z');
    assert.equal(rangeOf(job, undefined, false, now)!.to, undefined);
    assert.equal(rangeOf(job, saved, true, now)!.to, undefined);
    assert.equal(rangeQuery('province:TX', rangeOf(job, undefined, false, now)), 'province:TX');
  });
});
