/** The logging the broker needs; a pino logger satisfies it. */
export interface BrokerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug?(obj: object, msg: string): void;
}

/** Logs nothing; the default when a caller gives no logger. */
export const silentLogger: BrokerLogger = Object.freeze({
  info: () => undefined,
  warn: () => undefined,
  debug: () => undefined,
});
