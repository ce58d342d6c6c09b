import { context, propagation, trace } from '@opentelemetry/api';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { TraceExportSettings } from '../config/config';

/** The service names of DESIGN §11 ("Observability"); OTEL_SERVICE_NAME overrides them. */
export type PlaneService = 'sandboxplane-worker' | 'sandboxplane-client' | 'sandboxplane-gateway';

/** The sink the workflow interceptors (always in the bundle, loaded by traced runs) hand their spans to. */
export type WorkflowSpanSinks = InjectedSinks<{ exporter: OpenTelemetryWorkflowExporter }>;

interface ActiveTracing {
  readonly clientInterceptors: readonly WorkflowClientInterceptor[];
  readonly activityInterceptors: readonly ActivityInterceptorsFactory[];
  readonly workflowSinks: WorkflowSpanSinks;
  shutdown(): Promise<void>;
}

/**
 * Tracing is process-wide, as OpenTelemetry's global tracer provider is: started once by
 * the process's entry point (CLI, worker, MCP server), read by every client and worker it
 * makes. Unset, nothing of the OpenTelemetry SDK is even loaded.
 */
let active: ActiveTracing | undefined;

/**
 * The workflow interceptors are part of the workflow bundle whatever is configured (the
 * build id names the bundle, so switching tracing on must not make a new build). A run
 * loads them when a traced caller started it (workflows/tracing-interceptors.ts), so a
 * worker with tracing off still receives the spans of those runs; they go nowhere.
 */
const DISCARDED_WORKFLOW_SPANS: WorkflowSpanSinks = { exporter: { export: { fn: () => undefined, callDuringReplay: false } } };

/**
 * Starts exporting spans over OTLP/HTTP as `service` (unless OTEL_SERVICE_NAME says
 * otherwise), with W3C trace context propagated through Temporal headers; `false` when
 * `settings` is undefined (tracing off). A second call keeps the first provider.
 */
export async function startTracing(settings: TraceExportSettings | undefined, service: PlaneService): Promise<boolean> {
  if (active !== undefined) return true;
  if (settings === undefined) return false;
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { Resource, detectResourcesSync, envDetectorSync }, temporalOtel, exporter] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@temporalio/interceptors-opentelemetry'),
    settings.protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const serviceName = settings.serviceName ?? service;
  // OTEL_RESOURCE_ATTRIBUTES adds to the SDK's own; the service name is settled above.
  const resource = Resource.default()
    .merge(detectResourcesSync({ detectors: [envDetectorSync] }))
    .merge(new Resource({ 'service.name': serviceName }));
  // A command waits for its spans at exit: a collector that does not answer must not hold it long.
  const spanProcessor = new BatchSpanProcessor(new exporter.OTLPTraceExporter({ url: settings.url, timeoutMillis: service === 'sandboxplane-client' ? 2_000 : 10_000 }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Global: the Temporal interceptors, our own spans and the log lines' trace ids all read it.
  provider.register();
  active = {
    clientInterceptors: [new temporalOtel.OpenTelemetryWorkflowClientInterceptor()],
    activityInterceptors: [(ctx) => ({ inbound: new temporalOtel.OpenTelemetryActivityInboundInterceptor(ctx), outbound: new temporalOtel.OpenTelemetryActivityOutboundInterceptor(ctx) })],
    workflowSinks: workflowSpanSinks(temporalOtel.makeWorkflowExporter(spanProcessor, resource)),
    shutdown: async () => {
      try {
        await provider.shutdown();
      } finally {
        // Unregistered (even when the last export failed), so that a later startTracing registers its own provider.
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
  return true;
}

/**
 * Temporal's exporter copies the whole WorkflowInfo onto each workflow span (search
 * attributes, memo, the last failure, ...); the span keeps the run's coordinates only.
 */
function workflowSpanSinks(exporter: WorkflowSpanSinks['exporter']): WorkflowSpanSinks {
  return {
    exporter: {
      export: {
        fn: (info, spans) => {
          const { workflowId, runId, workflowType, taskQueue, namespace, attempt } = info;
          return exporter.export.fn({ workflowId, runId, workflowType, taskQueue, namespace, attempt } as typeof info, spans);
        },
        callDuringReplay: false,
      },
    },
  };
}

/** Sends what is buffered and stops; the CLI calls it before it exits. A no-op when tracing is off. */
export async function stopTracing(): Promise<void> {
  const stopping = active;
  active = undefined;
  await stopping?.shutdown().catch(() => undefined);
}

/** A Temporal client's interceptors: the trace context goes into every start, update, signal and query. */
export function tracingClientInterceptors(): { workflow?: WorkflowClientInterceptor[] } {
  return active === undefined ? {} : { workflow: [...active.clientInterceptors] };
}

/** A worker's share: activity spans that continue the workflow's trace, and where workflow spans go. */
export function tracingWorkerOptions(): { readonly interceptors?: { activity: ActivityInterceptorsFactory[] }; readonly sinks: WorkflowSpanSinks } {
  if (active === undefined) return { sinks: DISCARDED_WORKFLOW_SPANS };
  return { interceptors: { activity: [...active.activityInterceptors] }, sinks: active.workflowSinks };
}
