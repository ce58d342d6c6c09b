import { SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';

/**
 * The plane's own spans: Docker engine calls, emulator health, AWS API calls, the SDK's
 * operations. Through OpenTelemetry's API only: with no provider registered (tracing off)
 * every span is a no-op that records nothing.
 */
function tracer(): Tracer {
  // Asked each time: a tracer kept from before a restart of tracing would feed a stopped provider.
  return trace.getTracer('sandboxplane');
}

/**
 * Runs `work` inside a span named `name`. A throw marks the span failed with the error's
 * code (a SandboxPlaneError's) or name, never its message: messages can carry endpoints,
 * and the log line of the same failure has the message and this span's trace id.
 */
export async function inSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  return tracer().startActiveSpan(name, { attributes, kind }, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      markFailed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks `span` failed by `err`'s code (a SandboxPlaneError's) or name, never its message (see {@link inSpan}). */
export function markFailed(span: Span, err: unknown): void {
  const code = (err as { code?: unknown } | null)?.code;
  span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? code : err instanceof Error ? err.name : typeof err });
}

/** A call to another process (the Docker engine, an emulator's AWS API): a CLIENT span. */
export function inClientSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  return inSpan(name, attributes, work, SpanKind.CLIENT);
}

/** The ids of the span active here, for a log line; `undefined` outside any recording span. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getActiveSpan();
  if (span === undefined) return undefined;
  const { traceId, spanId, traceFlags } = span.spanContext();
  // Unsampled spans (and the no-op span) name no trace a reader could find.
  return (traceFlags & 1) === 1 ? { trace_id: traceId, span_id: spanId } : undefined;
}
