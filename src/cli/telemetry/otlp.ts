import { randomBytes } from 'node:crypto';
import type { Attributes, AttributeValue, Span, Tracer } from '../../pipeline/trace.js';
import type { OtlpConfig, OtlpTarget } from './config.js';
import type { Metric } from './metrics.js';

/**
 * A small OTLP/HTTP exporter on the JSON encoding: the run's spans are kept in memory and sent
 * with its metrics once the run ends, each signal in one POST bounded by the export timeout.
 * This module is loaded only when an OTLP endpoint is set (telemetry.ts imports it then).
 * The encoding: https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding (ids in hex,
 * 64-bit integers as strings, enums as numbers).
 */

const SCOPE = { name: 'sluice' };
const SPAN_KIND_INTERNAL = 1;
const STATUS_ERROR = 2;
const AGGREGATION_DELTA = 1;

/** Now, in nanoseconds since the epoch, as OTLP/JSON writes it. */
function nowNanos(): string {
  const ms = performance.timeOrigin + performance.now();
  return (BigInt(Math.floor(ms)) * 1_000_000n + BigInt(Math.round((ms % 1) * 1e6))).toString();
}

class RecordedSpan implements Span {
  readonly spanId = randomBytes(8).toString('hex');
  readonly start = nowNanos();
  end_: string | undefined;
  readonly attributes: Attributes;
  failed: string | undefined;

  constructor(
    readonly name: string,
    attributes: Attributes,
    readonly traceId: string,
    readonly parentSpanId: string | undefined,
  ) {
    this.attributes = { ...attributes };
  }

  setAttributes(attributes: Attributes): void {
    Object.assign(this.attributes, attributes);
  }

  fail(code: string): void {
    this.failed = code;
    this.attributes['error.type'] = code;
  }

  end(): void {
    this.end_ ??= nowNanos();
  }
}

/** Keeps the spans of the command's runs; a span without a parent starts a trace. */
export class OtlpTracer implements Tracer {
  readonly spans: RecordedSpan[] = [];
  readonly #parent: OtlpConfig['parent'];

  constructor(config: OtlpConfig) {
    this.#parent = config.parent;
  }

  startSpan(name: string, attributes: Attributes, parent: Span | undefined): Span {
    const up = parent instanceof RecordedSpan ? parent : undefined;
    const traceId = up?.traceId ?? this.#parent?.traceId ?? randomBytes(16).toString('hex');
    const span = new RecordedSpan(name, attributes, traceId, up?.spanId ?? this.#parent?.spanId);
    this.spans.push(span);
    return span;
  }
}

function anyValue(value: AttributeValue): Record<string, unknown> {
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number') {
    return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  }
  return { stringValue: value };
}

function keyValues(attributes: Attributes): { key: string; value: Record<string, unknown> }[] {
  return Object.entries(attributes).flatMap(([key, value]) =>
    value === undefined ? [] : [{ key, value: anyValue(value) }],
  );
}

function resourceOf(config: OtlpConfig, version: string) {
  return {
    attributes: keyValues({
      'service.version': version,
      'telemetry.sdk.name': 'sluice',
      'telemetry.sdk.language': 'nodejs',
      'telemetry.sdk.version': version,
      ...config.resource,
    }),
  };
}

export function tracesBody(tracer: OtlpTracer, config: OtlpConfig, version: string) {
  const spans = tracer.spans.map((s) => ({
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
    name: s.name,
    kind: SPAN_KIND_INTERNAL,
    startTimeUnixNano: s.start,
    endTimeUnixNano: s.end_ ?? nowNanos(),
    attributes: keyValues(s.attributes),
    ...(s.failed ? { status: { code: STATUS_ERROR, message: s.failed } } : {}),
  }));
  return {
    resourceSpans: [
      { resource: resourceOf(config, version), scopeSpans: [{ scope: SCOPE, spans }] },
    ],
  };
}

export function metricsBody(
  metrics: readonly Metric[],
  config: OtlpConfig,
  version: string,
  startedAt: number,
) {
  const start = `${BigInt(Math.round(startedAt)) * 1_000_000n}`;
  const time = nowNanos();
  return {
    resourceMetrics: [
      {
        resource: resourceOf(config, version),
        scopeMetrics: [
          {
            scope: SCOPE,
            metrics: metrics.map((m) => {
              const dataPoints = m.points.map((p) => ({
                attributes: keyValues(p.labels),
                startTimeUnixNano: start,
                timeUnixNano: time,
                ...(Number.isInteger(p.value) ? { asInt: String(p.value) } : { asDouble: p.value }),
              }));
              const data =
                m.kind === 'sum'
                  ? {
                      sum: {
                        dataPoints,
                        aggregationTemporality: AGGREGATION_DELTA,
                        isMonotonic: true,
                      },
                    }
                  : { gauge: { dataPoints } };
              return { name: m.name, description: m.help, unit: m.unit, ...data };
            }),
          },
        ],
      },
    ],
  };
}

/** Sends one OTLP/JSON export; throws what went wrong, naming the endpoint without secrets. */
export async function send(target: OtlpTarget, body: unknown, timeoutMs: number): Promise<void> {
  const where = describe(target.url);
  let response: Response;
  try {
    response = await fetch(target.url, {
      method: 'POST',
      headers: { ...target.headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const reason =
      (error as Error).name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : ((error as { cause?: Error }).cause?.message ?? (error as Error).message);
    throw new Error(`${where}: ${reason}`);
  }
  const text = await response.text().catch(() => '');
  if (!response.ok) {
    throw new Error(`${where} answered ${response.status} ${text.slice(0, 200)}`.trim());
  }
}

/** An endpoint as a log line may show it: no user, password or query. */
function describe(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'the OTLP endpoint';
  }
}
