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

let installed = false;

/** The Runtime is process-wide and can be installed once; later calls are no-ops. */
export function installRuntimeLogger(logger: Logger): void {
  if (installed) return;
  // No shutdown signals: the CLI decides what a signal stops, and in which order.
  Runtime.install({ logger: temporalLoggerFor(logger), shutdownSignals: [] });
  installed = true;
}
