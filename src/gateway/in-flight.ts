import { SandboxPlaneError } from '../domain/errors';

/**
 * Requests in flight per key (DESIGN §18): a request that waits (a create with `wait:
 * ready`, an IaC apply waiting for its end) holds a socket and a Temporal update for as
 * long as it waits, so a key may hold only so many at once. In memory: each gateway
 * process counts its own.
 */
export class InFlight {
  private readonly counts = new Map<string, number>();

  /** Counts one more request of `keyId`; RATE_LIMITED when it already holds `max`. Call the returned function once it ends. */
  enter(keyId: string, max: number): () => void {
    const now = this.counts.get(keyId) ?? 0;
    if (now >= max) {
      throw new SandboxPlaneError('RATE_LIMITED', `key ${keyId} has ${now} requests in flight, the most it may have at once`, {
        hint: 'Wait for one to end (or wait less long in each), or ask an operator for a key with a higher --max-in-flight.',
        details: { retryAfterSeconds: 1 },
      });
    }
    this.counts.set(keyId, now + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const remaining = (this.counts.get(keyId) ?? 1) - 1;
      if (remaining <= 0) this.counts.delete(keyId);
      else this.counts.set(keyId, remaining);
    };
  }
}
