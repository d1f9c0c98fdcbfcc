import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { PipelineSpecError } from '../../../src/errors.js';
import { parsePipeline } from '../../../src/pipeline/spec/spec.js';

const env = {
  SLUICE_API_URL: 'http://127.0.0.1:8787/v4',
  SLUICE_EMAIL: 'a@b.c',
  SLUICE_PASSWORD: 'pw',
};

const head = `version: 1
name: test
source:
  url: \${SLUICE_API_URL}
  email: \${SLUICE_EMAIL}
  password: \${SLUICE_PASSWORD}
destination: sqlite:data/t.sqlite
`;

const jobs = `jobs:
  homes:
    type: properties
    query: 'city:Austin'
`;

function parse(notify: string, extraEnv: Record<string, string> = {}, jobsYaml = jobs) {
  return parsePipeline(`${head}${notify}${jobsYaml}`, 'p.yaml', { ...env, ...extraEnv });
}

function problem(notify: string, extraEnv: Record<string, string> = {}, jobsYaml = jobs) {
  try {
    parse(notify, extraEnv, jobsYaml);
  } catch (error) {
    assert.ok(error instanceof PipelineSpecError, String(error));
    return error.message;
  }
  assert.fail('expected the file to be refused');
}

describe('notify: in a pipeline file', () => {
  test('the three minimal forms, as written', () => {
    const webhook = parse('notify: { webhook: https://hooks.example.com/a }\n').notify.pipeline;
    assert.deepEqual(webhook?.targets, [{ kind: 'webhook', url: 'https://hooks.example.com/a' }]);
    assert.deepEqual(webhook?.on, [
      'failed',
      'refused',
      'incomplete',
      'interrupted',
      'recovered',
      'budget',
    ]);
    assert.equal(webhook?.budgetThreshold, 80);
    const slack = parse('notify: { slack: https://hooks.slack.com/services/T/B/x }\n').notify;
    assert.equal(slack.pipeline?.targets[0]?.kind, 'slack');
    const email = parse('notify: { email: ops@example.com, smtp: smtp://127.0.0.1:2525 }\n');
    assert.deepEqual(email.notify.pipeline?.targets, [
      { kind: 'email', to: ['ops@example.com'], smtp: 'smtp://127.0.0.1:2525' },
    ]);
  });

  test('options: events, threshold, a secret from the environment; a job of its own', () => {
    const spec = parse(
      `notify:
  webhook: https://hooks.example.com/a
  secret: \${HOOK_SECRET}
  on: [failed, success]
  budget_threshold: 90%
`,
      { HOOK_SECRET: 's3cret' },
      `${jobs}    notify: { slack: https://hooks.example.com/b, on: refused }
`,
    );
    assert.deepEqual(spec.notify.pipeline, {
      targets: [{ kind: 'webhook', url: 'https://hooks.example.com/a', secret: 's3cret' }],
      on: ['failed', 'success'],
      budgetThreshold: 90,
    });
    assert.deepEqual(spec.notify.jobs.homes?.on, ['refused']);
    assert.equal(spec.jobs[0]?.downloadHash, parse('').jobs[0]?.downloadHash, 'hash unchanged');
    assert.equal('notify' in spec.jobs[0]!, false);
  });

  test('mistakes name the line and the field', () => {
    assert.match(
      problem('notify: { email: ops@example.com }\n'),
      /p\.yaml:8: notify\.email: .*smtp/,
    );
    assert.match(
      problem('notify: { webhok: https://x.example }\n'),
      /notify\.webhok: unknown key 'webhok'; did you mean 'webhook'\?/,
    );
    assert.match(problem('notify: { webhook: ftp://x }\n'), /notify\.webhook: .*http/);
    assert.match(problem('notify: { slack: https://x.example, on: [failure] }\n'), /notify\.on/);
    assert.match(problem('notify: { secret: abc }\n'), /notify\.secret: .*webhook/);
    assert.match(problem('notify: {}\n'), /notify: no target/);
    assert.match(
      problem('notify: { webhook: https://x.example, budget_threshold: 120 }\n'),
      /notify\.budget_threshold: expected a percent/,
    );
  });

  test('a secret written in the file is a warning', () => {
    const spec = parse('notify: { webhook: https://x.example, secret: literal }\n');
    assert.ok(spec.warnings.some((w) => /notify\.secret: .*SLUICE_NOTIFY_SECRET/.test(w)));
    assert.ok(!spec.warnings.some((w) => w.includes('literal')));
    const slack = parse('notify: { slack: https://hooks.slack.com/services/T0/B0/tok3n }\n');
    assert.ok(slack.warnings.some((w) => /notify\.slack: .*SLUICE_NOTIFY_SLACK/.test(w)));
    assert.ok(!slack.warnings.some((w) => w.includes('tok3n')));
  });

  test('the environment gives a default; the file wins', () => {
    const fromEnv = parse('', {
      SLUICE_NOTIFY_EMAIL: 'a@example.com, b@example.com',
      SLUICE_NOTIFY_SMTP: 'smtp://mail.example.com:25',
      SLUICE_NOTIFY_ON: 'failed,success',
    }).notify.pipeline;
    assert.deepEqual(fromEnv?.targets, [
      { kind: 'email', to: ['a@example.com', 'b@example.com'], smtp: 'smtp://mail.example.com:25' },
    ]);
    assert.deepEqual(fromEnv?.on, ['failed', 'success']);
    const file = parse('notify: { email: c@example.com }\n', {
      SLUICE_NOTIFY_WEBHOOK: 'https://x.example',
      SLUICE_NOTIFY_SMTP: 'smtp://mail.example.com:25',
    }).notify.pipeline;
    assert.deepEqual(
      file?.targets.map((t) => t.kind),
      ['email'],
    );
    assert.equal(parse('').notify.pipeline, undefined);
    assert.match(
      problem('', { SLUICE_NOTIFY_WEBHOOK: 'not a url' }),
      /SLUICE_NOTIFY_WEBHOOK: expected an http/,
    );
  });
});
