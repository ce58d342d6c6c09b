import { Runtime, type LogLevel as TemporalLogLevel, type LogMetadata, type Logger as TemporalLogger } from '@temporalio/worker';
import type { Logger } from '../logging/logger';

const LEVEL_METHOD: Readonly<Record<TemporalLogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'>> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Routes the SDK's logs (worker, workflow and activity loggers) into pino. The SDK
 * attaches workflowId, runId, activityId and taskQueue as metadata, so every line
 * from inside a workflow or activity says which one it came from.
 */
export function temporalLoggerFor(logger: Logger): TemporalLogger {
  const emit = (level: TemporalLogLevel, message: string, meta?: LogMetadata) => {
    logger[LEVEL_METHOD[level]](meta ?? {}, message);
  };
  return {
    log: emit,
    trace: (message, meta) => emit('TRACE', message, meta),
    debug: (message, meta) => emit('DEBUG', message, meta),
    info: (message, meta) => emit('INFO', message, meta),
    warn: (message, meta) => emit('WARN', message, meta),
    error: (message, meta) => emit('ERROR', message, meta),
  };
}

let installed: { readonly sdkMetricsUrl: string | undefined } | undefined;

/**
 * Installs the SDK's process-wide Runtime: its logs into pino and, when
 * `sdkMetricsAddress` (a loopback host:port) is given, its Prometheus metrics there.
 * The Runtime can be installed once; later calls return what the first one set up.
 * Returns where the SDK's metrics are served, if anywhere.
 */
export function installWorkerRuntime(logger: Logger, sdkMetricsAddress?: string): { readonly sdkMetricsUrl: string | undefined } {
  if (installed !== undefined) return installed;
  Runtime.install({
    logger: temporalLoggerFor(logger),
    // No shutdown signals: the CLI decides what a signal stops, and in which order.
    shutdownSignals: [],
    ...(sdkMetricsAddress === undefined ? {} : { telemetryOptions: { metrics: { prometheus: { bindAddress: sdkMetricsAddress, useSecondsForDurations: true } } } }),
  });
  installed = { sdkMetricsUrl: sdkMetricsAddress === undefined ? undefined : `http://${sdkMetricsAddress}/metrics` };
  return installed;
}
