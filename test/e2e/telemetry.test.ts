import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { EmulatorHarness } from '../helpers/emulator.js';
import { type DecodedSpan, OtlpReceiver, pointsOf, spansOf } from '../helpers/otlp.js';
import {
  emulatorEnv,
  pipelineHead,
  runCli,
  SLUICE_BIN,
  tempDir,
  writePipeline,
} from '../helpers/pipeline.js';
import { parsePromText } from '../helpers/prom-text.js';

/**
 * Metrics and traces (OpenTelemetry's variables, `--metrics-file`): a local OTLP/HTTP receiver
 * decodes what a run of four jobs sends, and the span tree and every figure are checked against
 * the run's `--json` summary; the textfile is read by Prometheus' format rules. Unset, nothing
 * is sent and the exporter is never loaded.
 */

let harness: EmulatorHarness;
let receiver: OtlpReceiver;
let dir: string;

before(async () => {
  harness = await EmulatorHarness.start({ scale: 0.05, fileRecords: 100 });
  receiver = await OtlpReceiver.start();
  dir = tempDir('sluice-telemetry-');
});
after(async () => {
  await harness.close();
  await receiver.close();
});
beforeEach(async () => {
  await harness.reset();
  receiver.received.length = 0;
  receiver.status = 200;
});

const POLL = 'poll: { interval: 1s, max_interval: 2s, timeout: 10m }';

function fourJobs(name: string): string {
  return writePipeline(
    dir,
    name,
    `${pipelineHead(name, `{ url: 'sqlite:${join(dir, `${name}.sqlite`)}' }`)}budget: { property: 100000/month }
jobs:
  homes:
    type: properties
    query: 'province:TX'
    records: 250
    format: csv
    ${POLL}
  shops:
    type: businesses
    query: '*'
    records: 250
    ${POLL}
  goods:
    type: products
    query: '*'
    records: 150
    format: csv
    ${POLL}
  folks:
    type: people
    query: '*'
    records: 120
    ${POLL}
`,
  );
}

interface Summary {
  run_id: string;
  status: string;
  seconds: number;
  credits: Record<string, number>;
  jobs: {
    job: string;
    status: string;
    download_id: string | null;
    found: number | null;
    downloaded: number;
    loaded: number;
    rejected: number;
    files_loaded: number;
    credits: Record<string, number>;
    seconds: number;
    error?: { code: string };
  }[];
}

const TYPES: Record<string, string> = {
  homes: 'properties',
  shops: 'businesses',
  goods: 'products',
  folks: 'people',
};

async function run(file: string, extra: Record<string, string>, args: string[] = []) {
  const result = await runCli(
    ['run', file, '--json', '--no-progress', ...args],
    emulatorEnv(harness, extra),
    undefined,
    harness.clock(),
  );
  return { ...result, summary: JSON.parse(result.stdout) as Summary };
}

test('a run of four jobs sends one trace of every stage, and metrics equal to its summary; --metrics-file says the same', async () => {
  const file = fourJobs('nightly');
  const prom = join(dir, 'sluice.prom');
  const secret = 'otlp-key-do-not-leak';
  const r = await run(
    file,
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`,
      OTEL_EXPORTER_OTLP_HEADERS: `x-api-key=${secret}`,
      OTEL_SERVICE_NAME: 'nightly-etl',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test,team=data%20ops',
    },
    ['--metrics-file', prom],
  );
  assert.equal(r.code, 0, r.stderr);
  const s = r.summary;
  assert.equal(s.status, 'succeeded');
  assert.equal(s.jobs.length, 4);

  assert.deepEqual(
    receiver.received.map((x) => x.path).sort(),
    ['/v1/metrics', '/v1/traces'],
    'one export of each signal',
  );
  for (const x of receiver.received) {
    assert.equal(x.headers['x-api-key'], secret);
    assert.equal(x.headers['content-type'], 'application/json');
    const { password, token } = harness.credentials;
    for (const hidden of [secret, password, token]) assert.ok(!x.text.includes(hidden));
  }

  // The trace: the run, its jobs, their stages.
  const { spans, resources } = spansOf(receiver.of('/v1/traces').map((x) => x.body));
  assert.equal(resources[0]!['service.name'], 'nightly-etl');
  assert.equal(resources[0]!['deployment.environment'], 'test');
  assert.equal(resources[0]!.team, 'data ops');
  const roots = spans.filter((x) => x.parentSpanId === undefined);
  assert.equal(roots.length, 1);
  const root = roots[0]!;
  assert.equal(root.name, 'sluice run');
  assert.equal(root.attributes['sluice.run_id'], s.run_id);
  assert.equal(root.attributes['sluice.pipeline'], 'nightly');
  assert.equal(root.attributes['sluice.status'], 'succeeded');
  assert.ok(spans.every((x) => x.traceId === root.traceId && /^[\da-f]{32}$/.test(x.traceId)));
  assert.equal(new Set(spans.map((x) => x.spanId)).size, spans.length, 'span ids are unique');
  const children = (parent: DecodedSpan) => spans.filter((x) => x.parentSpanId === parent.spanId);
  for (const x of spans) {
    assert.ok(x.end >= x.start, `${x.name} ends after it starts`);
    const parent = spans.find((p) => p.spanId === x.parentSpanId);
    if (parent)
      assert.ok(x.start >= parent.start && x.end <= parent.end, `${x.name} in its parent`);
  }
  const jobSpans = children(root);
  assert.deepEqual(
    jobSpans.map((x) => x.name),
    Array(4).fill('sluice job'),
  );
  for (const job of s.jobs) {
    const span = jobSpans.find((x) => x.attributes['sluice.job'] === job.job);
    assert.ok(span, job.job);
    assert.equal(span.attributes['sluice.data_type'], TYPES[job.job]);
    assert.equal(span.attributes['sluice.download_id'], job.download_id);
    assert.equal(span.attributes['sluice.records'], job.loaded);
    for (const [type, n] of Object.entries(job.credits)) {
      assert.equal(span.attributes[`sluice.credits.${type}`], n);
    }
    const stages = children(span);
    assert.deepEqual(
      [...new Set(stages.map((x) => x.name))].sort(),
      ['guard', 'load', 'poll', 'start', 'views'],
      job.job,
    );
    const loads = stages.filter((x) => x.name === 'load');
    assert.ok(job.files_loaded >= 2, `${job.job} has several files`);
    assert.equal(loads.length, job.files_loaded, 'a load span per file');
    assert.equal(
      loads.reduce((n, x) => n + Number(x.attributes['sluice.records']), 0),
      job.loaded,
    );
    for (const load of loads) {
      assert.match(String(load.attributes['sluice.file']), /\S/);
      assert.deepEqual(
        children(load).map((x) => x.name),
        ['fetch'],
      );
    }
    const start = stages.find((x) => x.name === 'start')!;
    assert.equal(start.attributes['sluice.download_id'], job.download_id);
    assert.equal(
      stages.find((x) => x.name === 'guard')!.attributes['sluice.records.found'],
      job.found,
    );
  }

  // The metrics: each figure is the summary's.
  const points = pointsOf(receiver.of('/v1/metrics').map((x) => x.body));
  const value = (metric: string, attributes: Record<string, string>) => {
    const found = points.filter(
      (p) =>
        p.metric === metric && Object.entries(attributes).every(([k, v]) => p.attributes[k] === v),
    );
    return found.reduce((n, p) => n + p.value, 0);
  };
  const credits: Record<string, number> = {};
  for (const p of points.filter((x) => x.metric === 'sluice.credits.spent')) {
    assert.equal(p.kind, 'sum');
    const type = String(p.attributes.credit_type);
    credits[type] = (credits[type] ?? 0) + p.value;
  }
  assert.deepEqual(Object.fromEntries(Object.entries(credits).filter(([, n]) => n > 0)), s.credits);
  for (const job of s.jobs) {
    const labels = { pipeline: 'nightly', job: job.job, data_type: TYPES[job.job]! };
    assert.equal(value('sluice.records.found', labels), job.found);
    assert.equal(value('sluice.records.downloaded', labels), job.downloaded);
    assert.equal(value('sluice.records.loaded', labels), job.loaded);
    assert.equal(value('sluice.records.rejected', labels), job.rejected);
    assert.equal(value('sluice.job.duration', labels), job.seconds);
    assert.deepEqual(
      Object.fromEntries(
        points
          .filter((p) => p.metric === 'sluice.credits.spent' && p.attributes.job === job.job)
          .map((p) => [p.attributes.credit_type, p.value]),
      ),
      job.credits,
    );
  }
  assert.equal(value('sluice.run.duration', { pipeline: 'nightly' }), s.seconds);
  assert.equal(value('sluice.run.succeeded', { pipeline: 'nightly' }), 1);
  const spentProperty = s.credits.property ?? 0;
  assert.equal(
    value('sluice.budget.left', { pipeline: 'nightly', credit_type: 'property', period: 'month' }),
    100000 - spentProperty,
  );

  // The textfile: Prometheus' own rules, the same figures.
  const families = parsePromText(readFileSync(prom, 'utf8'));
  for (const f of families.values()) {
    assert.match(f.name, /^sluice_/);
    assert.equal(f.type, 'gauge');
    assert.ok(f.help);
  }
  const sample = (name: string, labels: Record<string, string>) =>
    families
      .get(name)
      ?.samples.filter((x) => Object.entries(labels).every(([k, v]) => x.labels[k] === v))
      .reduce((n, x) => n + x.value, 0);
  for (const job of s.jobs) {
    const labels = { pipeline: 'nightly', job: job.job, data_type: TYPES[job.job]! };
    assert.equal(sample('sluice_records_loaded', labels), job.loaded);
    assert.equal(sample('sluice_records_rejected', labels), job.rejected);
    assert.equal(sample('sluice_records_downloaded', labels), job.downloaded);
    assert.equal(sample('sluice_job_duration_seconds', labels), job.seconds);
  }
  for (const [type, n] of Object.entries(s.credits)) {
    assert.equal(sample('sluice_credits_spent', { pipeline: 'nightly', credit_type: type }), n);
  }
  assert.equal(sample('sluice_run_duration_seconds', { pipeline: 'nightly' }), s.seconds);
  assert.equal(
    sample('sluice_budget_left_credits', { pipeline: 'nightly', credit_type: 'property' }),
    100000 - spentProperty,
  );
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('sluice.prom')),
    ['sluice.prom'],
    'no temporary file left',
  );
});

test('a refused job: its span and the run span carry the error code; a signal endpoint and TRACEPARENT are honoured', async () => {
  const name = 'refusing';
  const file = writePipeline(
    dir,
    name,
    `${pipelineHead(name, `{ url: 'sqlite:${join(dir, `${name}.sqlite`)}' }`)}jobs:
  homes:
    type: properties
    query: '*'
    max_credits: 1
    ${POLL}
`,
  );
  const parent = { trace: 'ab'.repeat(16), span: 'cd'.repeat(8) };
  const r = await run(file, {
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/custom/traces`,
    TRACEPARENT: `00-${parent.trace}-${parent.span}-01`,
  });
  assert.equal(r.summary.status, 'refused');
  assert.deepEqual(
    receiver.received.map((x) => x.path),
    ['/custom/traces'],
    'no metrics asked',
  );
  const { spans } = spansOf(receiver.received.map((x) => x.body));
  const root = spans.find((x) => x.name === 'sluice run')!;
  assert.equal(root.traceId, parent.trace);
  assert.equal(root.parentSpanId, parent.span);
  const code = r.summary.jobs[0]!.error!.code;
  assert.deepEqual(root.status, { code: 2, message: code });
  const job = spans.find((x) => x.name === 'sluice job')!;
  assert.deepEqual(job.status, { code: 2, message: code });
  assert.equal(job.attributes['error.type'], code);
  const guard = spans.find((x) => x.name === 'guard')!;
  assert.equal(guard.parentSpanId, job.spanId);
  assert.equal(guard.status?.code, 2);
});

test('an export that fails, an unsupported protocol: a warning, and the run as it would be', async () => {
  const file = fourJobs('unreachable');
  receiver.status = 503;
  const refused = await run(file, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, [
    '--job',
    'goods',
    '--metrics-file',
    join(dir, 'no-such-folder', 'x.prom'),
  ]);
  assert.equal(refused.code, 0, refused.stderr);
  assert.equal(refused.summary.status, 'succeeded');
  assert.match(refused.stderr, /telemetry: the trace failed: .*answered 503/);
  assert.match(refused.stderr, /telemetry: the metrics failed/);
  assert.match(refused.stderr, /telemetry: --metrics-file .*no-such-folder/);

  receiver.received.length = 0;
  const grpc = await run(
    file,
    { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
    ['--job', 'goods'],
  );
  assert.equal(grpc.code, 0, grpc.stderr);
  assert.match(grpc.stderr, /OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported.*http\/json/);
  assert.equal(receiver.received.length, 0);

  const disabled = await run(
    file,
    { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: 'true' },
    ['--job', 'goods'],
  );
  assert.equal(disabled.code, 0, disabled.stderr);
  assert.equal(receiver.received.length, 0);
});

/** Records the URL of every module the process loads (a module.register hook). */
const HOOKS = `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.MODULES_LOG, url + '\\n');
  return next(url, context);
}
`;

function sluiceProcess(args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', join(dir, 'register.mjs'), SLUICE_BIN, ...args],
      {
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

test('OTEL unset: nothing is sent, and no exporter module is loaded', async () => {
  writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  writeFileSync(
    join(dir, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
  );
  const file = fourJobs('quiet');
  const loaded = async (name: string, extra: Record<string, string>) => {
    const log = join(dir, `${name}.modules`);
    writeFileSync(log, '');
    const r = await sluiceProcess(['run', file, '--job', 'goods', '--no-progress'], {
      ...emulatorEnv(harness, extra),
      MODULES_LOG: log,
    });
    assert.equal(r.code, 0, r.stderr);
    return readFileSync(log, 'utf8').split('\n');
  };
  const unset = await loaded('unset', {});
  assert.ok(
    unset.some((u) => u.endsWith('/dist/cli/commands/pipeline.js')),
    'the hook sees sluice',
  );
  assert.ok(
    !unset.some((u) => u.includes('/telemetry/otlp.js') || u.includes('/telemetry/metrics.js')),
  );
  assert.equal(receiver.received.length, 0);

  const set = await loaded('set', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
  assert.ok(set.some((u) => u.endsWith('/dist/cli/telemetry/otlp.js')));
  assert.equal(receiver.received.length, 2);
});

test('several files: a trace and metrics per pipeline; get sends its run as run does', async () => {
  const one = (name: string) =>
    writePipeline(
      dir,
      name,
      `${pipelineHead(name, `{ url: 'sqlite:${join(dir, `${name}.sqlite`)}' }`)}jobs:
  goods:
    type: products
    query: '*'
    records: 120
    ${POLL}
`,
    );
  const prom = join(dir, 'batch.prom');
  const r = await runCli(
    ['run', one('first'), one('second'), '--json', '--no-progress', '--metrics-file', prom],
    emulatorEnv(harness, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
    undefined,
    harness.clock(),
  );
  assert.equal(r.code, 0, r.stderr);
  const runs = (JSON.parse(r.stdout) as { runs: (Summary & { pipeline: string })[] }).runs;
  const { spans } = spansOf(receiver.of('/v1/traces').map((x) => x.body));
  const roots = spans.filter((x) => x.name === 'sluice run');
  assert.deepEqual(
    roots.map((x) => [x.attributes['sluice.pipeline'], x.attributes['sluice.run_id']]),
    runs.map((s) => [s.pipeline, s.run_id]),
  );
  assert.notEqual(roots[0]!.traceId, roots[1]!.traceId, 'a trace per run');
  const points = pointsOf(receiver.of('/v1/metrics').map((x) => x.body));
  const families = parsePromText(readFileSync(prom, 'utf8'));
  for (const s of runs) {
    const loaded = points.find(
      (p) => p.metric === 'sluice.records.loaded' && p.attributes.pipeline === s.pipeline,
    );
    assert.equal(loaded?.value, s.jobs[0]!.loaded);
    const sample = families
      .get('sluice_records_loaded')!
      .samples.find((x) => x.labels.pipeline === s.pipeline);
    assert.equal(sample?.value, s.jobs[0]!.loaded);
  }

  receiver.received.length = 0;
  const got = await runCli(
    [
      'get',
      'products',
      '*',
      '--records',
      '50',
      '--into',
      `sqlite:${join(dir, 'get.sqlite')}`,
      '--json',
      '--no-progress',
    ],
    emulatorEnv(harness, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
    undefined,
    harness.clock(),
  );
  assert.equal(got.code, 0, got.stderr);
  const summary = JSON.parse(got.stdout) as Summary;
  const traced = spansOf(receiver.of('/v1/traces').map((x) => x.body)).spans;
  assert.equal(
    traced.find((x) => x.name === 'sluice run')!.attributes['sluice.run_id'],
    summary.run_id,
  );
  assert.ok(traced.some((x) => x.name === 'load'));
  assert.equal(receiver.of('/v1/metrics').length, 1);
});
