import pino from 'pino';
import type { LogLevel } from '../config/config';
import { activeTraceIds } from '../telemetry/spans';

export type Logger = pino.Logger;

/** Keys whose value never reaches a log line, at any depth: a sandbox's key pair, a session token, an activity's task token. */
const SECRET_KEYS: ReadonlySet<string> = new Set(['credentials', 'secretAccessKey', 'sessionToken', 'taskToken']);

const REDACTED = '[redacted]';

/**
 * `value` with every {@link SECRET_KEYS} entry masked, however deep: pino's redact paths
 * name fixed depths (`*.credentials` is one level), and a runtime handle or a heartbeat
 * detail nests credentials further. Plain objects and arrays are copied, only where they
 * hold one; anything else (an Error, a Date) is left for pino's serializers.
 */
export function redactSecrets<T>(value: T, seen: WeakSet<object> = new WeakSet()): T {
  if (typeof value !== 'object' || value === null || seen.has(value)) return value;
  seen.add(value);
  if (Array.isArray(value)) {
    const items = value.map((item: unknown) => redactSecrets(item, seen));
    return (items.some((item, index) => item !== value[index]) ? items : value) as T;
  }
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, inner] of Object.entries(value)) {
    const masked = SECRET_KEYS.has(key) && inner !== undefined ? REDACTED : redactSecrets(inner, seen);
    if (masked !== inner) (copy ??= { ...(value as Record<string, unknown>) })[key] = masked;
  }
  return (copy ?? value) as T;
}

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
      formatters: { log: (object) => redactSecrets(object) },
      redact: {
        // taskToken lets its holder complete an activity; the SDK puts it in activity log metadata.
        paths: ['credentials', 'secretAccessKey', 'sessionToken', 'taskToken', '*.credentials', '*.secretAccessKey', '*.sessionToken'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
