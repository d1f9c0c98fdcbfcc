import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What an OTLP/HTTP receiver was sent: the path, the headers, the decoded JSON body. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  text: string;
  body: unknown;
}

/**
 * A local OTLP/HTTP receiver (JSON encoding), as an OpenTelemetry Collector listens on 4318:
 * it keeps what it is sent and answers 200 with an empty partial success, or the status a test
 * asks for.
 */
export class OtlpReceiver {
  readonly received: Received[] = [];
  status = 200;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        receiver.received.push({ path: request.url ?? '', headers: request.headers, text, body });
        response.writeHead(receiver.status, { 'content-type': 'application/json' });
        response.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  of(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
};
export type KeyValue = { key: string; value: AnyValue };

/** OTLP/JSON attributes as a plain object (int64s as numbers). */
export function attributesOf(list: readonly KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
  }
  return out;
}

export interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  start: bigint;
  end: bigint;
  attributes: Record<string, unknown>;
  status?: { code?: number; message?: string };
}

/** The spans of OTLP/JSON trace exports, with the resource of each. */
export function spansOf(bodies: readonly unknown[]): {
  spans: DecodedSpan[];
  resources: Record<string, unknown>[];
} {
  const spans: DecodedSpan[] = [];
  const resources: Record<string, unknown>[] = [];
  for (const body of bodies as {
    resourceSpans: {
      resource: { attributes: KeyValue[] };
      scopeSpans: { spans: (Omit<DecodedSpan, 'attributes' | 'start' | 'end'> & Raw)[] }[];
    }[];
  }[]) {
    for (const rs of body.resourceSpans) {
      resources.push(attributesOf(rs.resource.attributes));
      for (const ss of rs.scopeSpans) {
        for (const s of ss.spans) {
          spans.push({
            ...s,
            start: BigInt(s.startTimeUnixNano),
            end: BigInt(s.endTimeUnixNano),
            attributes: attributesOf(s.attributes),
          });
        }
      }
    }
  }
  return { spans, resources };
}

type Raw = { attributes: KeyValue[]; startTimeUnixNano: string; endTimeUnixNano: string };

export interface DecodedPoint {
  metric: string;
  kind: 'sum' | 'gauge' | 'other';
  unit: string;
  attributes: Record<string, unknown>;
  value: number;
}

/** The data points of OTLP/JSON metric exports. */
export function pointsOf(bodies: readonly unknown[]): DecodedPoint[] {
  const points: DecodedPoint[] = [];
  type Point = { attributes: KeyValue[]; asInt?: string | number; asDouble?: number };
  for (const body of bodies as {
    resourceMetrics: {
      scopeMetrics: {
        metrics: {
          name: string;
          unit: string;
          sum?: { dataPoints: Point[]; aggregationTemporality: number; isMonotonic: boolean };
          gauge?: { dataPoints: Point[] };
        }[];
      }[];
    }[];
  }[]) {
    for (const rm of body.resourceMetrics) {
      for (const sm of rm.scopeMetrics) {
        for (const m of sm.metrics) {
          const kind = m.sum ? 'sum' : m.gauge ? 'gauge' : 'other';
          for (const p of (m.sum ?? m.gauge)?.dataPoints ?? []) {
            points.push({
              metric: m.name,
              kind,
              unit: m.unit,
              attributes: attributesOf(p.attributes),
              value: p.asInt !== undefined ? Number(p.asInt) : Number(p.asDouble),
            });
          }
        }
      }
    }
  }
  return points;
}
