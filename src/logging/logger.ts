import pino from 'pino';
import type { LogLevel } from '../config/config';
import { activeTraceIds } from '../telemetry/spans';

export type Logger = pino.Logger;

/**
 * Keys whose value never reaches a log line, at any depth and in any case (`credentials`
 * and the AWS SDK's `Credentials`): a sandbox's key pair, a session token, an operator's
 * token, an activity's task token.
 */
const SECRET_KEYS: ReadonlySet<string> = new Set(['credentials', 'secretaccesskey', 'sessiontoken', 'tasktoken', 'token']);

const REDACTED = '[redacted]';

const isSecretKey = (key: string) => SECRET_KEYS.has(key.toLowerCase());

/**
 * `value` with every {@link SECRET_KEYS} entry masked, however deep: pino's redact paths
 * name fixed depths (`*.credentials` is one level), and a runtime handle or a heartbeat
 * detail nests credentials further. Plain objects, arrays and an Error's own fields are
 * copied, only where they hold one; an object met twice (or in a cycle) gets the same copy.
 */
export function redactSecrets<T>(value: T, copies: Map<object, unknown> = new Map()): T {
  if (typeof value !== 'object' || value === null) return value;
  if (copies.has(value)) return copies.get(value) as T;
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    copies.set(value, items);
    for (const item of value) items.push(redactSecrets(item, copies));
    const changed = items.some((item, index) => item !== value[index]);
    copies.set(value, changed ? items : value);
    return (changed ? items : value) as T;
  }
  if (value instanceof Error) return redactError(value, copies) as T;
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return value;
  const copy: Record<string, unknown> = {};
  copies.set(value, copy);
  let changed = false;
  for (const [key, inner] of Object.entries(value)) {
    const masked = isSecretKey(key) && inner !== undefined ? REDACTED : redactSecrets(inner, copies);
    changed ||= masked !== inner;
    copy[key] = masked;
  }
  if (!changed) copies.set(value, value);
  return (changed ? copy : value) as T;
}

/** An Error as pino's serializer would show it (type, message, stack, own fields), its fields masked like any object's. */
function redactError(err: Error, copies: Map<object, unknown>): unknown {
  const fields = Object.fromEntries(Object.entries(err));
  const masked = redactSecrets(fields, copies);
  if (masked === fields) return err;
  return { type: err.name, message: err.message, stack: err.stack, ...masked };
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
        paths: ['credentials', 'secretAccessKey', 'sessionToken', 'taskToken', 'token', '*.credentials', '*.secretAccessKey', '*.sessionToken', '*.token'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
