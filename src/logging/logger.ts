import pino from 'pino';
import type { LogLevel } from '../config/config';
import { activeTraceIds } from '../telemetry/spans';

export type Logger = pino.Logger;

/**
 * JSON logs on stderr, so that stdout stays free for `--json` documents. Secrets never
 * reach a log line: callers log ids and redacted summaries, and these paths are masked
 * in case one slips through.
 */
export function createLogger(level: LogLevel, destination: pino.DestinationStream = pino.destination(2)): Logger {
  return pino(
    {
      level,
      base: { service: 'sandboxplane' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // trace_id and span_id of the span active where the line is written (DESIGN §17); none without tracing.
      mixin: () => activeTraceIds() ?? {},
      redact: {
        // taskToken lets its holder complete an activity; the SDK puts it in activity log metadata.
        paths: ['credentials', 'secretAccessKey', 'sessionToken', 'taskToken', '*.credentials', '*.secretAccessKey', '*.sessionToken'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
