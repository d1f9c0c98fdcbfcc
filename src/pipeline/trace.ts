import { AsyncLocalStorage } from 'node:async_hooks';
import { errorInfo } from './outcome.js';

/**
 * Span hooks of a run: the run, each job, and each stage of a job (views, guard, start, poll,
 * and per result file its fetch and load) is a span when the command line asks for a trace
 * (OTEL_EXPORTER_OTLP_ENDPOINT: see cli/telemetry/). The tracer and the span a stage runs in
 * travel in the async context, as OpenTelemetry's own context does, so that jobs at once each
 * have their own parent without any stage passing it on. Without a tracer, `inSpan` runs the
 * work and nothing else: no span, no clock read.
 *
 * Attributes are figures and names (pipeline, job, data type, download id, file, records,
 * credits, error code), never a query, a message or a credential.
 */

export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue | undefined>;

export interface Span {
  setAttributes(attributes: Attributes): void;
  /** Marks the span failed with a typed error code (the span's status, and `error.type`). */
  fail(code: string): void;
  end(): void;
}

export interface Tracer {
  /** A new span, child of `parent`, or the root of a trace without one. */
  startSpan(name: string, attributes: Attributes, parent: Span | undefined): Span;
}

const current = new AsyncLocalStorage<{ tracer: Tracer; span: Span | undefined }>();

const noSpan: Span = { setAttributes() {}, fail() {}, end() {} };

/** Runs `work` with `tracer` as the tracer of the spans it opens (the command line's). */
export function withTracer<T>(tracer: Tracer, work: () => Promise<T>): Promise<T> {
  return current.run({ tracer, span: undefined }, work);
}

/**
 * Runs `work` in a span named `name`, child of the span it is called in; a throw marks the span
 * failed with the error's code, and is thrown on.
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  const scope = current.getStore();
  if (scope === undefined) return work(noSpan);
  const span = scope.tracer.startSpan(name, attributes, scope.span);
  try {
    return await current.run({ tracer: scope.tracer, span }, () => work(span));
  } catch (error) {
    span.fail(errorInfo(error).code);
    throw error;
  } finally {
    span.end();
  }
}

/** Credits as span attributes: `sluice.credits.<type>` (or another name than `credits`). */
export function creditAttributes(
  credits: Partial<Record<string, number>>,
  name = 'credits',
): Attributes {
  const attributes: Attributes = {};
  for (const [type, n] of Object.entries(credits)) attributes[`sluice.${name}.${type}`] = n;
  return attributes;
}
