import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { destinationKinds, skipReason, targetFactory } from '../helpers/destinations.js';
import { EmulatorHarness } from '../helpers/emulator.js';
import { emulatorEnv, pipelineHead, runCli, tempDir, writePipeline } from '../helpers/pipeline.js';
import {
  type HttpReceiver,
  type Received,
  type SmtpInbox,
  startHttpReceiver,
  startSmtpInbox,
} from '../helpers/receivers.js';
import { startRun, stopAt } from '../helpers/runs.js';

/**
 * Alerts (`notify:`) end to end: runs the emulator makes fail, refuse or spend past a budget's
 * threshold reach a local webhook, a Slack-shaped webhook and an SMTP inbox, with the run id as
 * the run's JSON names it and what to do; the webhook's HMAC verifies; no secret is in anything
 * sent; and a target that does not answer changes nothing about the run.
 */

const SECRET = 'hook-secret-5f1c';
const SLACK_TOKEN = 'T0000/B0000/slacktoken77';
const SMTP_PASSWORD = 'smtp-pass-93ab';

let h: EmulatorHarness;
let dir: string;
let hook: HttpReceiver;
let slack: HttpReceiver;
let inbox: SmtpInbox;

before(async () => {
  h = await EmulatorHarness.start({ scale: 0.05, fileRecords: 100 });
  dir = tempDir();
  hook = await startHttpReceiver();
  slack = await startHttpReceiver();
  inbox = await startSmtpInbox();
});
after(async () => {
  await Promise.all([h.close(), hook.close(), slack.close(), inbox.close()]);
});
beforeEach(async () => {
  await h.reset();
  hook.received.length = 0;
  slack.received.length = 0;
  inbox.mails.length = 0;
});

/** Every target, the secrets from the environment as a user would set them. */
const NOTIFY_ALL = `notify:
  webhook: \${HOOK_URL}
  secret: \${HOOK_SECRET}
  slack: \${SLACK_URL}
  email: ops@example.com
  smtp: \${SMTP_URL}
`;

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return emulatorEnv(h, {
    HOOK_URL: `${hook.url}/sluice`,
    HOOK_SECRET: SECRET,
    SLACK_URL: `${slack.url}/services/${SLACK_TOKEN}`,
    SMTP_URL: `smtp://alerts:${SMTP_PASSWORD}@127.0.0.1:${inbox.port}`,
    ...extra,
  });
}

function job(name: string, records: number, extra = ''): string {
  return `  ${name}:
    type: properties
    query: '*'
    records: ${records}
    poll: { interval: 50ms, max_interval: 200ms, timeout: 60s }
${extra}`;
}

function pipeline(name: string, body: string, jobs: string[]): { file: string; db: string } {
  const db = join(dir, `${name}.sqlite`);
  const file = writePipeline(
    dir,
    name,
    `${pipelineHead(name, `sqlite:${db}`)}${body}jobs:\n${jobs.join('')}`,
  );
  return { file, db };
}

async function run(file: string, e = env()) {
  const done = await runCli(['run', file, '--json', '--no-progress'], e, undefined, h.clock());
  return { ...done, summary: JSON.parse(done.stdout) };
}

/** Nothing sent holds a secret: the service's password, the webhook's secret, the tokens. */
function assertNoSecret(texts: string[]): void {
  const secrets = [SECRET, SLACK_TOKEN, SMTP_PASSWORD, h.credentials.password!];
  for (const text of texts) {
    for (const secret of secrets) assert.ok(!text.includes(secret), `a secret in: ${text}`);
  }
}

function bodies(receiver: HttpReceiver): Record<string, unknown>[] {
  return receiver.received.map((r) => JSON.parse(r.body));
}

function verify(request: Received): void {
  const expected = `sha256=${createHmac('sha256', SECRET).update(request.body).digest('hex')}`;
  assert.equal(request.headers['x-sluice-signature-256'], expected, 'the HMAC verifies');
}

function alertRows(db: string) {
  const sqlite = new Database(db, { readonly: true });
  try {
    return sqlite.prepare('select * from _sluice_alerts order by target_kind').all() as Record<
      string,
      unknown
    >[];
  } finally {
    sqlite.close();
  }
}

describe('alerts', () => {
  test('a failing service: the run fails, every target hears of it; the next run recovers', async () => {
    const { file, db } = pipeline('failing', NOTIFY_ALL, [job('homes', 20)]);
    // The service fails each status check of the download, every retry of it too.
    await h.faults([{ match: 'GET /v4/downloads/', action: '503', times: 6, retry_after: 0 }]);
    const failed = await run(file);
    assert.notEqual(failed.code, 0, failed.stderr);
    assert.equal(failed.summary.status, 'failed');
    const runId = failed.summary.run_id as string;

    assert.equal(hook.received.length, 1, 'one webhook call');
    const [body] = bodies(hook);
    assert.equal(body!.event, 'failed');
    assert.equal(body!.run_id, runId);
    assert.equal(body!.pipeline, 'failing');
    const jobs = body!.jobs as { job: string; status: string; error_code: string }[];
    assert.equal(jobs[0]!.status, 'failed');
    assert.equal(jobs[0]!.error_code, failed.summary.jobs[0].error.code);
    assert.match(String(body!.what_to_do), /sluice (run|status) /);
    assert.equal(hook.received[0]!.path, '/sluice');
    verify(hook.received[0]!);

    assert.equal(slack.received.length, 1, 'one Slack call');
    const slackBody = JSON.parse(slack.received[0]!.body);
    assert.ok(Array.isArray(slackBody.blocks) && slackBody.blocks.length > 2);
    assert.ok(slack.received[0]!.body.includes(runId));
    assert.match(slack.received[0]!.body, /What to do/);
    assert.equal(slack.received[0]!.headers['x-sluice-signature-256'], undefined);

    assert.equal(inbox.mails.length, 1, 'one e-mail');
    const [mail] = inbox.mails;
    assert.deepEqual(mail!.to, ['ops@example.com']);
    assert.equal(mail!.user, 'alerts', 'logged in with the URL’s user');
    assert.match(mail!.text, new RegExp(`Subject: sluice: run ${runId} of 'failing' failed`));
    assert.match(mail!.text, /What to do: /);

    assertNoSecret([
      ...hook.received.map((r) => r.body),
      ...slack.received.map((r) => r.body),
      ...inbox.mails.map((m) => m.text),
      failed.stderr,
    ]);
    const rows = alertRows(db);
    assert.deepEqual(
      rows.map((r) => [r.run_id, r.event, r.target_kind, r.ok, r.attempts]),
      [
        [runId, 'failed', 'email', 'true', 1],
        [runId, 'failed', 'slack', 'true', 1],
        [runId, 'failed', 'webhook', 'true', 1],
      ],
    );
    assert.ok(
      rows.every((r) => /^127\.0\.0\.1:\d+$/.test(String(r.target))),
      'host only',
    );

    // The next run succeeds: a success after a failure is `recovered`.
    hook.received.length = 0;
    const again = await run(file);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(
      bodies(hook).map((b) => [b.event, b.run_id]),
      [['recovered', again.summary.run_id]],
    );
    // And one more success says nothing (success is not in the default events).
    hook.received.length = 0;
    assert.equal((await run(file)).code, 0);
    assert.equal(hook.received.length, 0);
  });

  test('a budget passing 80% and a job refused by it: both alerts, the exit code unchanged', async () => {
    const { file } = pipeline(
      'budgeted',
      `max_parallel_jobs: 1\nbudget: { property: 100/month }\nnotify:\n  webhook: \${HOOK_URL}\n`,
      [job('first', 85), job('second', 50)],
    );
    const refused = await run(file);
    // One job spent, then one was refused: exit 4 (done with less than asked for), as without alerts.
    assert.equal(refused.code, 4, refused.stderr);
    assert.equal(refused.summary.status, 'refused');
    const sent = bodies(hook);
    assert.deepEqual(sent.map((b) => b.event).sort(), ['budget', 'refused']);
    for (const b of sent) assert.equal(b.run_id, refused.summary.run_id);
    const refusal = sent.find((b) => b.event === 'refused')!;
    assert.match(String(refusal.what_to_do), /sluice plan .*budgeted\.yaml/);
    const jobs = refusal.jobs as { job: string; status: string; error_code: string | null }[];
    assert.deepEqual(
      jobs.map((j) => [j.job, j.status, j.error_code]),
      [
        ['first', 'loaded', null],
        ['second', 'refused', refused.summary.jobs[1].error.code],
      ],
    );
    const budget = sent.find((b) => b.event === 'budget')!;
    assert.deepEqual(budget.budget, {
      type: 'property',
      period: 'month',
      limit: 100,
      spent: 85,
      percent: 85,
    });
    assert.deepEqual((budget.credits as { spent: unknown }).spent, refused.summary.credits);
    assert.ok((budget.credits as { left: unknown }).left, 'the credits left are told');
  });

  test('the service refuses (402): a refused alert by e-mail, from the environment’s default', async () => {
    const { file } = pipeline('broke', '', [job('homes', 20)]);
    await h.setCredits({ property_credits_allotted: 10, property_credits_used: 10 });
    const done = await run(
      file,
      env({
        SLUICE_NOTIFY_EMAIL: 'a@example.com, b@example.com',
        SLUICE_NOTIFY_SMTP: `smtp://127.0.0.1:${inbox.port}`,
      }),
    );
    assert.equal(done.code, 3, done.stderr);
    assert.equal(inbox.mails.length, 1);
    assert.deepEqual(inbox.mails[0]!.to, ['a@example.com', 'b@example.com']);
    assert.match(inbox.mails[0]!.text, new RegExp(`run ${done.summary.run_id} .* was refused`));
  });

  test('targets that do not answer change nothing: same exit code, same JSON, the failure recorded', async () => {
    const dead = await startHttpReceiver(() => 503);
    try {
      const { file, db } = pipeline(
        'unheard',
        `notify:\n  webhook: http://127.0.0.1:9/sluice?token=${SLACK_TOKEN}\n  slack: ${dead.url}/services/${SLACK_TOKEN}\n  on: [failed, success]\n`,
        [job('homes', 20)],
      );
      const quiet = pipeline('quiet', '', [job('homes', 20)]);
      const done = await run(file);
      const reference = await run(quiet.file);
      assert.equal(done.code, 0, done.stderr);
      assert.deepEqual(Object.keys(done.summary).sort(), Object.keys(reference.summary).sort());
      assert.equal(done.summary.status, 'succeeded');
      assert.equal(dead.received.length, 3, 'three tries');
      assert.match(
        done.stderr,
        /alert 'success' to slack 127\.0\.0\.1:\d+ not delivered after 3 tries/,
      );
      assertNoSecret([done.stderr]);
      const rows = alertRows(db);
      assert.deepEqual(
        rows.map((r) => [r.target_kind, r.ok]),
        [
          ['slack', 'false'],
          ['webhook', 'false'],
        ],
      );
      for (const row of rows) assertNoSecret([String(row.error), String(row.target)]);
    } finally {
      await dead.close();
    }
  });

  test('a download cancelled on the service: incomplete, to the job’s own target only', async () => {
    // Downloads that take seconds, so that one can be cancelled half way.
    const slow = await EmulatorHarness.start({
      scale: 0.5,
      fileRecords: 150,
      rate: 300,
      queueMs: 0,
    });
    try {
      const db = join(dir, 'cancelled.sqlite');
      const file = writePipeline(
        dir,
        'cancelled',
        `${pipelineHead('cancelled', `sqlite:${db}`)}notify:
  webhook: \${HOOK_URL}
jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 2000
    write: append
    poll: { interval: 100ms, max_interval: 200ms, timeout: 60s }
    notify:
      slack: \${SLACK_URL}
`,
      );
      const started = startRun(file, slow, {
        checkpoint: 'polling:homes',
        env: {
          SLUICE_CHECKPOINT_WAIT: '1000',
          HOOK_URL: `${hook.url}/sluice`,
          SLACK_URL: `${slack.url}/services/${SLACK_TOKEN}`,
        },
      });
      await started.reached;
      const [download] = slow.emulator.context.state.downloads;
      assert.equal(await slow.cancelDownload(download!.publicId), 200);
      const done = await started.finished;
      assert.equal(done.code, 4, done.stderr);
      const summary = JSON.parse(done.stdout);
      assert.equal(summary.status, 'incomplete');
      assert.equal(hook.received.length, 0, "the pipeline's target: the job has its own");
      assert.equal(slack.received.length, 1);
      const text = slack.received[0]!.body;
      assert.ok(text.includes(summary.run_id));
      assert.match(text, /ended incomplete/);
      assert.match(text, /SLUICE_DOWNLOAD_CANCELLED/);
      assertNoSecret([text, done.stderr]);
    } finally {
      await slow.close();
    }
  });

  test('a run stopped by SIGTERM: an interrupted alert, sent before it exits 130', async () => {
    const { file } = pipeline('stopped', 'notify:\n  webhook: ${HOOK_URL}\n', [job('homes', 20)]);
    const done = await stopAt(file, h, 'polling:homes', 'SIGTERM', {
      HOOK_URL: `${hook.url}/sluice`,
    });
    const summary = JSON.parse(done.stdout);
    assert.deepEqual(
      bodies(hook).map((b) => [b.event, b.run_id]),
      [['interrupted', summary.run_id]],
    );
    assert.match(String(bodies(hook)[0]!.what_to_do), /run `sluice run .*stopped\.yaml` again/);
  });

  test('several files in one command: each pipeline alerts of its own run', async () => {
    const notify = 'notify:\n  webhook: ${HOOK_URL}\n  on: [success, failed]\n';
    const a = pipeline('batch-a', notify, [job('homes', 5)]);
    const b = pipeline('batch-b', notify, [job('homes', 5)]);
    const done = await runCli(
      ['run', a.file, b.file, '--json', '--no-progress'],
      env(),
      undefined,
      h.clock(),
    );
    assert.equal(done.code, 0, done.stderr);
    const doc = JSON.parse(done.stdout);
    const sent = bodies(hook)
      .map((body) => [body.pipeline, body.event, body.run_id])
      .sort();
    assert.deepEqual(
      sent,
      doc.runs.map((r: { pipeline: string; run_id: string }) => [r.pipeline, 'success', r.run_id]),
    );
  });

  test('a run that cannot start (the service refuses the login) alerts without a run id', async () => {
    const { file } = pipeline('locked-out', 'notify:\n  webhook: "${HOOK_URL}"\n', [
      job('homes', 5),
    ]);
    const done = await runCli(
      ['run', file, '--json', '--no-progress'],
      env({ SLUICE_PASSWORD: 'wrong-password-1' }),
    );
    assert.equal(done.code, 2, done.stderr);
    const [body] = bodies(hook);
    assert.equal(body!.event, 'failed');
    assert.equal(body!.run_id, null);
    assert.equal((body!.error as { code: string }).code, JSON.parse(done.stdout).error.code);
    assert.ok(!hook.received[0]!.body.includes('wrong-password-1'));
  });

  test('sluice notify test sends a sample to each target and says what each answered', async () => {
    const { file } = pipeline('tried', NOTIFY_ALL, [job('homes', 5)]);
    const ok = await runCli(['notify', 'test', file], env());
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /webhook +127\.0\.0\.1:\d+ +delivered +1 +HTTP 200 ok/);
    assert.match(ok.stdout, /slack +127\.0\.0\.1:\d+ +delivered +1 +HTTP 200 ok/);
    assert.match(ok.stdout, /email +127\.0\.0\.1:\d+ +delivered +1 +250/);
    assert.equal(bodies(hook)[0]!.event, 'test');
    verify(hook.received[0]!);
    assert.equal(inbox.mails.length, 1);
    assertNoSecret([ok.stdout, ok.stderr]);

    const broken = pipeline(
      'tried-broken',
      `notify: { webhook: http://127.0.0.1:9/x, slack: "\${SLACK_URL}" }\n`,
      [job('homes', 5)],
    );
    const json = await runCli(['notify', 'test', broken.file, '--json'], env());
    assert.equal(json.code, 1);
    const doc = JSON.parse(json.stdout);
    assert.equal(doc.ok, false);
    assert.deepEqual(
      doc.targets.map((t: { kind: string; ok: boolean }) => [t.kind, t.ok]),
      [
        ['webhook', false],
        ['slack', true],
      ],
    );
    assertNoSecret([json.stdout, json.stderr]);

    // The environment's default, from an env file (as docs/scheduling.md sets it).
    const silent = pipeline('silent', '', [job('homes', 5)]).file;
    const envFile = join(dir, 'sluice.env');
    writeFileSync(envFile, `SLUICE_NOTIFY_WEBHOOK=${hook.url}/from-env\n`);
    hook.received.length = 0;
    const fromFile = await runCli(['notify', 'test', silent, '--env-file', envFile], env());
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.deepEqual(
      hook.received.map((r) => r.path),
      ['/from-env'],
    );

    const none = await runCli(['notify', 'test', silent], env());
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no notify:/);
  });

  test('validate lists where alerts go (kind, host, events), with no secret', async () => {
    const { file } = pipeline('listed', `${NOTIFY_ALL}  budget_threshold: 90%\n`, [
      job('homes', 5, '    notify: { webhook: "${HOOK_URL}", on: [failed, success] }\n'),
    ]);
    const text = await runCli(['validate', file], env());
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /alerts for +target +host +on +budget alert at/);
    assert.match(
      text.stdout,
      /pipeline +webhook +127\.0\.0\.1:\d+ +failed, refused, incomplete, interrupted, recovered, budget +90%/,
    );
    assert.match(text.stdout, /pipeline +email +127\.0\.0\.1:\d+ /);
    assert.match(text.stdout, /homes +webhook +127\.0\.0\.1:\d+ +failed, success +80%/);
    const json = await runCli(['validate', file, '--json'], env());
    const alerts = JSON.parse(json.stdout).alerts as { for: string; kind: string }[];
    assert.deepEqual(
      alerts.map((a) => [a.for, a.kind]),
      [
        ['pipeline', 'webhook'],
        ['pipeline', 'slack'],
        ['pipeline', 'email'],
        ['homes', 'webhook'],
      ],
    );
    assertNoSecret([text.stdout, text.stderr, json.stdout, json.stderr]);
    assert.ok(!json.stdout.includes('/services/'), 'no path of a target');

    const silent = await runCli(
      ['validate', pipeline('unlisted', '', [job('homes', 5)]).file, '--json'],
      env(),
    );
    assert.deepEqual(JSON.parse(silent.stdout).alerts, []);
  });
});

for (const kind of destinationKinds()) {
  const reason = await skipReason(kind);
  const target = targetFactory(kind, () => dir);
  describe(`alerts recorded on ${kind}`, { skip: reason }, () => {
    test('each alert, sent or not, is a row of _sluice_alerts, by host only', async () => {
      const t = await target('recorded');
      const file = writePipeline(
        dir,
        `${kind}-recorded`,
        `${pipelineHead('recorded', t.destinationYaml)}notify:
  webhook: \${HOOK_URL}
  slack: http://127.0.0.1:9/services/${SLACK_TOKEN}
  on: [success]
jobs:
${job('homes', 10)}`,
      );
      const done = await run(file);
      assert.equal(done.code, 0, done.stderr);
      const rows = await t.all<Record<string, unknown>>(
        'select run_id, event, target_kind, target, ok, attempts, error from _sluice_alerts order by target_kind',
      );
      assert.deepEqual(
        rows.map((r) => [r.run_id, r.event, r.target_kind, r.ok, Number(r.attempts)]),
        [
          [done.summary.run_id, 'success', 'slack', 'false', 3],
          [done.summary.run_id, 'success', 'webhook', 'true', 1],
        ],
      );
      assert.equal(rows[0]!.target, '127.0.0.1:9');
      assertNoSecret(rows.map((r) => JSON.stringify(r)));
    });
  });
}
