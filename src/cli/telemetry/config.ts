/**
 * What OpenTelemetry's standard environment variables ask of a run: where to send its trace and
 * its metrics (OTLP over HTTP, JSON-encoded), with which headers, as which service. Nothing is
 * sent, and no exporter module is loaded, unless an OTLP endpoint is set (and OTEL_SDK_DISABLED
 * is not `true`). Read once per command; a value is never logged (headers carry API keys).
 *
 * https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/ and
 * https://opentelemetry.io/docs/specs/otel/protocol/exporter/
 */

export interface OtlpTarget {
  url: string;
  headers: Record<string, string>;
}

export interface OtlpConfig {
  traces?: OtlpTarget;
  metrics?: OtlpTarget;
  /** Each export's bound (OTEL_EXPORTER_OTLP_TIMEOUT, ms); 5 s by default. */
  timeoutMs: number;
  /** service.name and OTEL_RESOURCE_ATTRIBUTES. */
  resource: Record<string, string>;
  /** A parent span from TRACEPARENT (an orchestrator's task that runs sluice). */
  parent?: { traceId: string; spanId: string };
}

/** The configuration, or why it asks for what sluice cannot do (warned, nothing sent). */
export type OtlpSetting = { config: OtlpConfig } | { unsupported: string } | undefined;

const SIGNALS = { traces: 'TRACES', metrics: 'METRICS' } as const;
const DEFAULT_TIMEOUT_MS = 5_000;

export function otlpSetting(env: NodeJS.ProcessEnv): OtlpSetting {
  if (isTrue(env.OTEL_SDK_DISABLED)) return undefined;
  const config: OtlpConfig = {
    timeoutMs: positive(env.OTEL_EXPORTER_OTLP_TIMEOUT) ?? DEFAULT_TIMEOUT_MS,
    resource: resourceOf(env),
  };
  for (const [signal, name] of Object.entries(SIGNALS) as [keyof typeof SIGNALS, string][]) {
    if (env[`OTEL_${name}_EXPORTER`]?.trim() === 'none') continue;
    const own = env[`OTEL_EXPORTER_OTLP_${name}_ENDPOINT`]?.trim();
    const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
    // A signal's own endpoint is used as it is; the base one gets the signal's path.
    const url = own || (base ? `${base.replace(/\/+$/, '')}/v1/${signal}` : undefined);
    if (!url) continue;
    const protocol =
      env[`OTEL_EXPORTER_OTLP_${name}_PROTOCOL`]?.trim() ||
      env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() ||
      'http/json';
    if (protocol !== 'http/json') {
      return {
        unsupported: `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: sluice sends OTLP over HTTP as JSON; set OTEL_EXPORTER_OTLP_PROTOCOL=http/json (an OpenTelemetry Collector takes it on port 4318)`,
      };
    }
    if (!/^https?:\/\//i.test(url)) {
      return { unsupported: `the OTLP ${signal} endpoint must be an http:// or https:// URL` };
    }
    config[signal] = {
      url,
      headers: {
        ...headersOf(env.OTEL_EXPORTER_OTLP_HEADERS),
        ...headersOf(env[`OTEL_EXPORTER_OTLP_${name}_HEADERS`]),
      },
    };
  }
  if (!config.traces && !config.metrics) return undefined;
  const parent = traceparent(env.TRACEPARENT);
  if (parent) config.parent = parent;
  return { config };
}

function isTrue(value: string | undefined): boolean {
  return value?.trim().toLowerCase() === 'true';
}

function positive(value: string | undefined): number | undefined {
  const n = Number(value);
  return value !== undefined && value.trim() !== '' && Number.isFinite(n) && n > 0 ? n : undefined;
}

/** `key=value,key2=value2`, values percent-decoded (the W3C Baggage form the spec uses). */
function pairs(text: string | undefined): Record<string, string> {
  const found: Record<string, string> = {};
  for (const item of (text ?? '').split(',')) {
    const at = item.indexOf('=');
    if (at <= 0) continue;
    const key = item.slice(0, at).trim();
    try {
      found[key] = decodeURIComponent(item.slice(at + 1).trim());
    } catch {
      found[key] = item.slice(at + 1).trim();
    }
  }
  return found;
}

function headersOf(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(pairs(text))) headers[key.toLowerCase()] = value;
  return headers;
}

function resourceOf(env: NodeJS.ProcessEnv): Record<string, string> {
  const resource = pairs(env.OTEL_RESOURCE_ATTRIBUTES);
  const name = env.OTEL_SERVICE_NAME?.trim();
  resource['service.name'] = name || resource['service.name'] || 'sluice';
  return resource;
}

/** W3C trace context: `00-<32 hex trace id>-<16 hex span id>-<flags>`. */
function traceparent(value: string | undefined): OtlpConfig['parent'] {
  const match = /^[\da-f]{2}-([\da-f]{32})-([\da-f]{16})-[\da-f]{2}$/.exec(value?.trim() ?? '');
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return { traceId: match[1]!, spanId: match[2]! };
}
