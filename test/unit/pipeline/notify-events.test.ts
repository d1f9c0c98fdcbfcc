import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { redact } from '../../../src/pipeline/notify/deliver.js';
import { alertsOf, passes, routesOf } from '../../../src/pipeline/notify/events.js';
import { alertMessage } from '../../../src/pipeline/notify/message.js';
import { newOutcome, type RunSummary } from '../../../src/pipeline/outcome.js';
import type { NotifySpec, PipelineNotify } from '../../../src/pipeline/spec/spec-notify.js';

function summary(status: RunSummary['status'], jobs: [string, string][]): RunSummary {
  return {
    pipeline: 'p',
    run_id: 'r1',
    resumed_from: null,
    status,
    replayed: false,
    destination: 'sqlite:x',
    started_at: '2026-06-10T00:00:00.000Z',
    seconds: 1,
    credits: { property: 10 },
    views: { created: [], updated: [], unchanged: [] },
    jobs: jobs.map(([job, s]) => ({ ...newOutcome(job), status: s as 'loaded' })),
  };
}

const block = (url: string, extra: Partial<NotifySpec> = {}): NotifySpec => ({
  targets: [{ kind: 'webhook', url }],
  on: ['failed', 'refused', 'incomplete', 'interrupted', 'recovered', 'budget'],
  budgetThreshold: 80,
  ...extra,
});

describe('alert events and routes', () => {
  test("a run's outcome, recovered after anything but a success", () => {
    const ok = { summary: summary('succeeded', [['a', 'loaded']]) };
    assert.deepEqual(alertsOf(ok, 'failed', []), [{ event: 'recovered', jobs: [] }]);
    assert.deepEqual(alertsOf(ok, 'succeeded', []), [{ event: 'success', jobs: [] }]);
    assert.deepEqual(alertsOf(ok, undefined, []), [{ event: 'success', jobs: [] }]);
    const failed = {
      summary: summary('failed', [
        ['a', 'loaded'],
        ['b', 'timed_out'],
        ['c.refresh', 'failed'],
      ]),
    };
    assert.deepEqual(alertsOf(failed, undefined, []), [{ event: 'failed', jobs: ['b', 'c'] }]);
    const before = {
      error: { code: 'SLUICE_API_402' as const, message: 'x', retryable: false },
      exit: 3,
    };
    assert.deepEqual(alertsOf(before, undefined, []), [{ event: 'refused', jobs: [] }]);
  });

  test('a budget passes its threshold once: in the run that crosses it', () => {
    const b = { type: 'property', period: 'month', limit: 100 };
    assert.equal(passes({ ...b, before: 70, after: 85 }, 80), true);
    assert.equal(passes({ ...b, before: 80, after: 95 }, 80), false, 'passed already');
    assert.equal(passes({ ...b, before: 10, after: 79 }, 80), false);
    assert.equal(passes({ ...b, before: 10, after: 95 }, 90), true);
  });

  test("a job's own notify: takes its events; the pipeline's the rest; each target once", () => {
    const pipeline = block('https://a.example');
    const own = block('https://b.example', { on: ['failed'] });
    const notify: PipelineNotify = { pipeline, jobs: { b: own } };
    const urls = (alerts: Parameters<typeof routesOf>[1]) =>
      routesOf(notify, alerts).map((r) => (r.target.kind === 'email' ? '' : r.target.url));
    assert.deepEqual(urls([{ event: 'failed', jobs: ['b'] }]), ['https://b.example']);
    assert.deepEqual(urls([{ event: 'failed', jobs: ['a', 'b'] }]), [
      'https://a.example',
      'https://b.example',
    ]);
    assert.deepEqual(urls([{ event: 'refused', jobs: ['b'] }]), [], "b's block is not on refused");
    assert.deepEqual(urls([{ event: 'failed', jobs: [] }]), ['https://a.example']);
    assert.deepEqual(urls([{ event: 'success', jobs: [] }]), []);
    const budget = { type: 'property', period: 'month', limit: 100, before: 50, after: 85 };
    assert.deepEqual(urls([{ event: 'budget', jobs: [], budget }]), ['https://a.example']);
    const high = { pipeline: block('https://a.example', { budgetThreshold: 90 }), jobs: {} };
    assert.equal(routesOf(high, [{ event: 'budget', jobs: [], budget }]).length, 0);
  });

  test("the message names the run and what to do; a target's secrets are redacted", () => {
    const message = alertMessage(
      { event: 'failed', jobs: ['b'] },
      { pipeline: 'p', file: 'p.yaml', end: { summary: summary('failed', [['b', 'failed']]) } },
    );
    assert.equal(message.run_id, 'r1');
    assert.match(message.title, /run r1 of 'p' failed/);
    assert.match(message.what_to_do, /sluice run p\.yaml/);
    const target = {
      kind: 'email' as const,
      to: ['a@b.c'],
      smtp: 'smtps://user%40x.com:p%40ss@mail.example.com:465',
    };
    assert.equal(
      redact(
        'login p@ss for user@x.com at smtps://user%40x.com:p%40ss@mail.example.com:465',
        target,
      ),
      'login [redacted] for [redacted] at [redacted]',
    );
    const hook = { kind: 'slack' as const, url: 'https://hooks.example.com/services/T/B/tok' };
    assert.equal(redact('POST /services/T/B/tok failed', hook), 'POST [redacted] failed');
  });
});
