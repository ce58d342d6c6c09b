/**
 * The workflow bundle's interceptors (worker/workflow-code.ts): Temporal's OpenTelemetry
 * workflow interceptors (DESIGN §17), but only for a run whose start carries a trace, that
 * is one a traced caller started (the client interceptor puts the trace context into the
 * start's headers; a run it starts passes it on to its children and continue-as-new).
 *
 * Every run evaluates its interceptor modules anew (the SDK's module cache is per run):
 * OpenTelemetry's API, SDK and semantic conventions, and a tracer provider, held as long as
 * the run is cached, about 265 KB each, where no caller asked for a trace
 * (docs/performance.md, P5). Here an untraced run holds three small gates instead and
 * never loads them.
 *
 * The choice is the history's, not the worker's: a replay makes the same one whether or
 * not this worker traces, so turning tracing on or off never changes what a run does (the
 * OpenTelemetry interceptors add yields of their own), and the bundle, which names the
 * build, is the same either way.
 */
import type { WorkflowInboundCallsInterceptor, WorkflowInterceptors, WorkflowInternalsInterceptor, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';

/** `@temporalio/interceptors-opentelemetry`'s TRACE_HEADER, not imported: its module loads OpenTelemetry. */
export const TRACE_HEADER = '_tracer-data';

const INBOUND: readonly (keyof WorkflowInboundCallsInterceptor)[] = ['execute', 'handleSignal', 'handleUpdate', 'validateUpdate', 'handleQuery'];
const OUTBOUND: readonly (keyof WorkflowOutboundCallsInterceptor)[] = [
  'scheduleActivity',
  'scheduleLocalActivity',
  'startNexusOperation',
  'startChildWorkflowExecution',
  'continueAsNew',
  'signalWorkflow',
  'startTimer',
  'getLogAttributes',
  'getMetricTags',
];
const INTERNALS: readonly (keyof WorkflowInternalsInterceptor)[] = ['concludeActivation', 'dispose'];

type Intercepted = Record<string, ((input: unknown, next: (input: unknown) => unknown) => unknown) | undefined>;

/** Calls `name` of the chosen interceptor, or straight on to `next` while there is none. */
function gate<T>(names: readonly (keyof T)[], chosen: () => T | undefined): T {
  const methods: Intercepted = {};
  for (const name of names) {
    methods[name as string] = (input, next) => {
      const real = chosen() as Intercepted | undefined;
      const method = real?.[name as string];
      return method === undefined ? next(input) : method.call(real, input, next);
    };
  }
  return methods as T;
}

/** The `interceptors` export the SDK calls once per run. */
export function interceptors(): WorkflowInterceptors {
  let traced: { inbound?: WorkflowInboundCallsInterceptor[]; outbound?: WorkflowOutboundCallsInterceptor[]; internals?: WorkflowInternalsInterceptor[] } | undefined;
  let chosen = false;
  const first = <T>(list: T[] | undefined) => list?.[0];
  const decide: WorkflowInternalsInterceptor['activate'] = (input, next) => {
    if (!chosen) {
      chosen = true;
      // A run's first activation starts with its initializeWorkflow job, on the first task and on every replay alike.
      const headers = input.activation.jobs?.[0]?.initializeWorkflow?.headers;
      if (headers?.[TRACE_HEADER] !== undefined) {
        // Loaded here, into this run only: an untraced run never evaluates OpenTelemetry. webpack
        // bundles a require like an import, but evaluates it only when it runs.
        // eslint-disable-next-line no-restricted-globals, @typescript-eslint/no-require-imports
        const otel = require('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors') as { interceptors: () => WorkflowInterceptors };
        traced = otel.interceptors();
      }
    }
    const real = first(traced?.internals);
    return real?.activate === undefined ? next(input) : real.activate(input, next);
  };
  return {
    inbound: [gate(INBOUND, () => first(traced?.inbound))],
    outbound: [gate(OUTBOUND, () => first(traced?.outbound))],
    internals: [{ ...gate(INTERNALS, () => first(traced?.internals)), activate: decide }],
  };
}
