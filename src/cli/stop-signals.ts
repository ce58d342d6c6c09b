const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

export class StopRequested extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`stopped by ${signal}`);
  }
}

export interface StopSignals {
  /** Resolves with the first SIGINT or SIGTERM. */
  readonly requested: Promise<NodeJS.Signals>;
  /** Races `work` against a stop request; a stop rejects with {@link StopRequested}. */
  untilStopped<T>(work: Promise<T>): Promise<T>;
  dispose(): void;
}

/**
 * Turns SIGINT/SIGTERM into an orderly stop. A second signal means "now": `onForce`
 * runs (kill what we started) and the process exits with 130.
 */
export function watchStopSignals(onForce: () => void): StopSignals {
  let resolveRequested!: (signal: NodeJS.Signals) => void;
  let received: NodeJS.Signals | undefined;
  const requested = new Promise<NodeJS.Signals>((resolve) => {
    resolveRequested = resolve;
  });
  const handler = (signal: NodeJS.Signals) => {
    if (received !== undefined) {
      onForce();
      process.exit(130);
    }
    received = signal;
    resolveRequested(signal);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, handler);
  return {
    requested,
    untilStopped: <T>(work: Promise<T>) =>
      Promise.race([
        work,
        requested.then((signal): never => {
          throw new StopRequested(signal);
        }),
      ]),
    dispose: () => {
      for (const signal of STOP_SIGNALS) process.removeListener(signal, handler);
    },
  };
}
