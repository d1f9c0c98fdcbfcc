import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { otlpSetting } from '../../../src/cli/telemetry/config.js';
import { runMetrics } from '../../../src/cli/telemetry/metrics.js';
import { textfile } from '../../../src/cli/telemetry/textfile.js';
import type { PipelineSpec, RunSummary } from '../../../src/pipeline/index.js';
import { parsePromText } from '../../helpers/prom-text.js';

test('unset, disabled or turned off per signal: no configuration', () => {
  assert.equal(otlpSetting({}), undefined);
  assert.equal(otlpSetting({ OTEL_SERVICE_NAME: 'x' }), undefined);
  assert.equal(
    otlpSetting({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' }),
    undefined,
  );
  assert.equal(
    otlpSetting({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_METRICS_EXPORTER: 'none',
    }),
    undefined,
  );
});

test('endpoints, headers, resource and TRACEPARENT as the specification reads them', () => {
  const setting = otlpSetting({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example:4318/base/',
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://m.example/otlp/metrics',
    OTEL_EXPORTER_OTLP_HEADERS: 'Api-Key=a%2Cb , x=1',
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x=2',
    OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
    OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs,env=prod',
    TRACEPARENT: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`,
  });
  assert.ok(setting && 'config' in setting);
  const { config } = setting;
  assert.deepEqual(config.traces, {
    url: 'https://c.example:4318/base/v1/traces',
    headers: { 'api-key': 'a,b', x: '2' },
  });
  assert.deepEqual(config.metrics, {
    url: 'https://m.example/otlp/metrics',
    headers: { 'api-key': 'a,b', x: '1' },
  });
  assert.equal(config.timeoutMs, 2500);
  assert.deepEqual(config.resource, { 'service.name': 'from-attrs', env: 'prod' });
  assert.deepEqual(config.parent, { traceId: '1'.repeat(32), spanId: '2'.repeat(16) });
  const named = otlpSetting({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t/v1/traces',
    OTEL_SERVICE_NAME: 'nightly',
    OTEL_RESOURCE_ATTRIBUTES: 'service.name=other',
    TRACEPARENT: `00-${'0'.repeat(32)}-${'2'.repeat(16)}-01`,
  });
  assert.ok(named && 'config' in named);
  assert.equal(named.config.metrics, undefined, 'only the signal with an endpoint');
  assert.equal(named.config.resource['service.name'], 'nightly');
  assert.equal(named.config.parent, undefined, 'an all-zero trace id is no parent');
});

test('grpc and http/protobuf are refused by name, as is an endpoint that is no http URL', () => {
  for (const protocol of ['grpc', 'http/protobuf']) {
    const setting = otlpSetting({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317',
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    });
    assert.ok(setting && 'unsupported' in setting);
    assert.match(setting.unsupported, new RegExp(`${protocol} is not supported.*http/json`));
  }
  const bad = otlpSetting({ OTEL_EXPORTER_OTLP_ENDPOINT: 'c:4318' });
  assert.ok(bad && 'unsupported' in bad);
});

test('the textfile escapes label values and keeps to the format', () => {
  const spec = { jobs: [{ name: 'a"b\\c', type: 'properties' }] } as unknown as PipelineSpec;
  const summary = {
    pipeline: 'p\nq',
    status: 'failed',
    seconds: 1.25,
    jobs: [
      {
        job: 'a"b\\c',
        found: null,
        downloaded: 0,
        loaded: 0,
        rejected: 0,
        credits: {},
        seconds: 0.5,
      },
    ],
    alerts: { sent: 2 },
  } as unknown as RunSummary;
  const text = textfile(runMetrics([{ spec, summary, budgets: [] }], 1_700_000_000_000));
  const families = parsePromText(text);
  const credits = families.get('sluice_credits_spent')!.samples;
  assert.deepEqual(credits, [
    {
      labels: { pipeline: 'p\nq', job: 'a"b\\c', data_type: 'properties', credit_type: 'property' },
      value: 0,
    },
  ]);
  assert.equal(families.has('sluice_records_found'), false, 'no count: no sample');
  assert.equal(families.get('sluice_run_succeeded')!.samples[0]!.value, 0);
  assert.equal(families.get('sluice_run_end_time_seconds')!.samples[0]!.value, 1_700_000_000);
  assert.equal(families.get('sluice_alerts_sent')!.samples[0]!.value, 2);
  assert.equal(families.get('sluice_job_duration_seconds')!.samples[0]!.value, 0.5);
});
