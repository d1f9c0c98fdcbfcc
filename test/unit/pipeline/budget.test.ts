import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { PipelineSpecError } from '../../../src/errors.js';
import type { Attempt } from '../../../src/load/destination.js';
import {
  attemptCredits,
  budgetStandings,
  periodBounds,
} from '../../../src/pipeline/guard/budget.js';
import { checkCredits } from '../../../src/pipeline/guard/estimate.js';
import { creditsFor } from '../../../src/pipeline/guard/figures.js';
import { parsePipeline, pipelineJsonSchema } from '../../../src/pipeline/spec/spec.js';

const env = {
  SLUICE_API_URL: 'http://127.0.0.1:8787/v4',
  SLUICE_EMAIL: 'a@b.c',
  SLUICE_PASSWORD: 'pw',
};

const HEAD = `version: 1
name: test
source:
  api: v4
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
`;
const JOBS = `jobs:
  homes:
    type: properties
    query: 'city:Austin'
    auto_trace: true
  shops:
    type: businesses
    query: 'city:Austin'
`;

function specError(text: string): PipelineSpecError {
  try {
    parsePipeline(text, 'p.yaml', env);
  } catch (error) {
    if (!(error instanceof PipelineSpecError)) throw error;
    return error;
  }
  throw new Error('expected a PipelineSpecError');
}

describe('budget: in pipeline files', () => {
  test('one budget per credit type and period, or a list of them', () => {
    const spec = parsePipeline(
      `${HEAD}budget: { property: 50000/month, people: [ 2000 / week, 100/day ] }\n${JOBS}`,
      'p.yaml',
      env,
    );
    assert.deepEqual(spec.budgets, [
      { type: 'people', limit: 2000, period: 'week' },
      { type: 'people', limit: 100, period: 'day' },
      { type: 'property', limit: 50000, period: 'month' },
    ]);
    assert.deepEqual(parsePipeline(`${HEAD}${JOBS}`, 'p.yaml', env).budgets, []);
  });

  test('mistakes name the file, the line and the field', () => {
    const period = specError(`${HEAD}budget:\n  property: 50000/fortnight\n${JOBS}`);
    assert.equal(period.line, 9);
    assert.equal(period.path, 'budget.property');
    assert.match(
      period.message,
      /expected credits per period, such as 50000\/month \(periods: day, week, month, year\)/,
    );

    const number = specError(`${HEAD}budget:\n  property: 50000\n${JOBS}`);
    assert.equal(number.line, 9);
    assert.match(number.message, /^p\.yaml:9: budget\.property: expected credits per period/);

    const type = specError(`${HEAD}budget:\n  properties: 50000/month\n${JOBS}`);
    assert.equal(type.line, 9);
    assert.match(
      type.message,
      /budget\.properties: unknown key 'properties'; did you mean 'property'\?/,
    );

    const twice = specError(`${HEAD}budget:\n  people:\n    - 10/day\n    - 20/day\n${JOBS}`);
    assert.equal(twice.line, 11);
    assert.equal(twice.path, 'budget.people.1');
    assert.match(twice.message, /two people budgets per day \(10 and 20\): keep one/);
  });

  test('the JSON Schema for editors knows the key and its form', () => {
    const schema = pipelineJsonSchema() as {
      properties: { budget: { properties: Record<string, { anyOf: { pattern?: string }[] }> } };
    };
    const property = schema.properties.budget.properties.property!;
    const pattern = new RegExp(property.anyOf[0]!.pattern!);
    assert.ok(pattern.test('50000/month'));
    assert.ok(!pattern.test('50000/fortnight'));
    assert.deepEqual(Object.keys(schema.properties.budget.properties).sort(), [
      'business',
      'people',
      'product',
      'property',
    ]);
  });
});

describe('budget periods are calendar periods in UTC', () => {
  const at = (iso: string) => Date.parse(iso);
  const iso = (b: { from: number; until: number }) => [
    new Date(b.from).toISOString(),
    new Date(b.until).toISOString(),
  ];

  test('day, week (from Monday), month and year', () => {
    const now = at('2026-03-01T23:59:59.999Z'); // a Sunday
    assert.deepEqual(iso(periodBounds('day', now)), [
      '2026-03-01T00:00:00.000Z',
      '2026-03-02T00:00:00.000Z',
    ]);
    assert.deepEqual(iso(periodBounds('week', now)), [
      '2026-02-23T00:00:00.000Z',
      '2026-03-02T00:00:00.000Z',
    ]);
    assert.deepEqual(iso(periodBounds('month', now)), [
      '2026-03-01T00:00:00.000Z',
      '2026-04-01T00:00:00.000Z',
    ]);
    assert.deepEqual(iso(periodBounds('year', now)), [
      '2026-01-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ]);
    // A Monday starts its own week; December's month ends with the year.
    assert.deepEqual(iso(periodBounds('week', at('2026-03-02T00:00:00Z'))), [
      '2026-03-02T00:00:00.000Z',
      '2026-03-09T00:00:00.000Z',
    ]);
    assert.deepEqual(iso(periodBounds('month', at('2026-12-31T12:00:00Z'))), [
      '2026-12-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ]);
  });
});

function attempt(changes: Partial<Attempt>): Attempt {
  return {
    attempt_id: 'a',
    pipeline: 'test',
    job: 'homes',
    spec_hash: 'h',
    api: 'v4',
    download_id: 'd1',
    status: 'loaded',
    target_table: 'homes',
    load_table: 'homes',
    num_found: 900,
    num_records: 500,
    requested_at: '2026-03-10T10:00:00.000Z',
    started_at: '2026-03-10T10:00:01.000Z',
    updated_at: '2026-03-10T10:00:01.000Z',
    finished_at: null,
    run_id: 'r1',
    message: null,
    load_hash: null,
    write_mode: 'merge',
    data_type: 'properties',
    query: 'city:Austin',
    format: 'csv',
    num_requested: 500,
    cursor_from: null,
    credits: null,
    load_settings: null,
    stage: null,
    ...changes,
  };
}

describe('what an attempt bought', () => {
  const spec = parsePipeline(`${HEAD}budget: { property: 1000/month }\n${JOBS}`, 'p.yaml', env);

  test('a finished download: the cost its job wrote', () => {
    assert.deepEqual(attemptCredits(attempt({ credits: '{"property":480,"people":480}' }), spec), {
      property: 480,
      people: 480,
    });
  });

  test('started and not finished: the records it asked for, autotrace from its job', () => {
    for (const status of ['started', 'loading', 'failed', 'superseded', 'abandoned']) {
      assert.deepEqual(attemptCredits(attempt({ status, num_records: 20 }), spec), {
        property: 500,
        people: 500,
      });
    }
    assert.deepEqual(
      attemptCredits(attempt({ job: 'shops', data_type: 'businesses', status: 'started' }), spec),
      { business: 500 },
    );
  });

  test('no download id: nothing, unless still open (it may have been started)', () => {
    const unheard = { download_id: null, num_records: null };
    assert.deepEqual(attemptCredits(attempt({ ...unheard, status: 'abandoned' }), spec), {});
    assert.deepEqual(attemptCredits(attempt({ ...unheard, status: 'requested' }), spec), {
      property: 500,
      people: 500,
    });
  });

  test('standings count each attempt once, in the period it was asked for', async () => {
    const rows = [
      attempt({
        attempt_id: 'feb',
        requested_at: '2026-02-28T23:59:59.999Z',
        credits: '{"property":300}',
      }),
      attempt({
        attempt_id: 'mar1',
        requested_at: '2026-03-01T00:00:00.000Z',
        credits: '{"property":200}',
      }),
      attempt({
        attempt_id: 'mar2',
        requested_at: '2026-03-20T00:00:00.000Z',
        credits: '{"property":100}',
      }),
    ];
    const state = {
      attemptsSince: async (pipeline: string, since: string) => {
        assert.equal(pipeline, 'test');
        return rows.filter((r) => r.requested_at >= since);
      },
    };
    const [property] = await budgetStandings(spec, state, Date.parse('2026-03-25T08:00:00Z'));
    assert.deepEqual(property, {
      type: 'property',
      limit: 1000,
      period: 'month',
      from: '2026-03-01T00:00:00.000Z',
      until: '2026-04-01T00:00:00.000Z',
      spent: 300,
    });
    const none = await budgetStandings(spec, undefined, Date.parse('2026-03-25T08:00:00Z'));
    assert.equal(none[0]!.spent, 0);
  });
});

describe('the guard checks budgets', () => {
  const spec = parsePipeline(
    `${HEAD}budget: { property: 1000/month, people: 100/week }\n${JOBS}`,
    'p.yaml',
    env,
  );
  const [homes, shops] = spec.jobs as [(typeof spec.jobs)[0], (typeof spec.jobs)[0]];
  const standing = (type: 'property' | 'people', spent: number, planned = 0) => ({
    ...spec.budgets.find((b) => b.type === type)!,
    from: '2026-03-01T00:00:00.000Z',
    until: '2026-04-01T00:00:00.000Z',
    spent,
    planned,
  });
  const perType = {
    plan: 'per-type' as const,
    left: { property: 10_000, people: 10_000, business: 10_000 },
  };

  test('a job that fits what is left passes; one that would cross it is refused, naming the budget', () => {
    const budgets = [standing('property', 600), standing('people', 0)];
    const pass = checkCredits(shops, 50, 50, creditsFor(shops, 50), perType, budgets);
    assert.equal(pass.verdict, 'pass');
    const fits = checkCredits(homes, 90, 90, creditsFor(homes, 90), perType, budgets);
    assert.equal(fits.verdict, 'pass');
    const crosses = checkCredits(homes, 401, 401, creditsFor(homes, 401), perType, budgets);
    assert.equal(crosses.verdict, 'refuse');
    const [property, people] = crosses.refusals;
    assert.equal(property!.code, 'SLUICE_BUDGET');
    assert.equal(property!.type, 'budget:property/month');
    assert.equal(
      property!.message,
      "job 'homes' needs 401 property credits, more than is left of the budget of 1000 property credits a month: 600 spent since 2026-03-01T00:00:00.000Z, 400 left until 2026-04-01T00:00:00.000Z",
    );
    // Autotrace spends people credits too.
    assert.equal(people!.type, 'budget:people/week');
  });

  test('what jobs planned before it take counts', () => {
    const refused = checkCredits(homes, 90, 90, { property: 90 }, perType, [
      standing('property', 600, 350),
    ]);
    assert.match(
      refused.refusals[0]!.message,
      /600 spent since .*, 350 taken by the jobs planned before it, 50 left/,
    );
  });

  test('a legacy plan: the verdict is unknown, max_credits and budgets still refuse', () => {
    const legacy = { plan: 'legacy' as const, totalUsed: 12_345 };
    const unknown = checkCredits(shops, 50, 50, creditsFor(shops, 50), legacy);
    assert.equal(unknown.verdict, 'unknown');
    assert.deepEqual(unknown.legacy, { total_used: 12_345 });
    assert.equal(unknown.remaining, undefined);
    assert.deepEqual(unknown.refusals, []);
    const capped = checkCredits({ ...shops, max_credits: 10 }, 50, 50, { business: 50 }, legacy);
    assert.equal(capped.verdict, 'refuse');
    assert.equal(capped.refusals[0]!.type, 'max_credits');
    const budget = checkCredits(homes, 500, 500, { property: 500 }, legacy, [
      standing('property', 600),
    ]);
    assert.equal(budget.verdict, 'refuse');
    assert.equal(budget.refusals[0]!.code, 'SLUICE_BUDGET');
  });
});
