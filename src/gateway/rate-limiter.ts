import { SandboxPlaneError } from '../domain/errors';

interface Bucket {
  tokens: number;
  at: number;
  rate: number;
}

/**
 * A token bucket per key (DESIGN §18): a key holds up to its rate per minute at once and
 * gets them back evenly over the minute. In memory: each gateway process counts its own.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  /** Buckets kept before the full ones are forgotten: guessed key ids must not grow the map without end. */
  private static readonly PRUNE_ABOVE = 10_000;

  constructor(private readonly now: () => number = Date.now) {}

  /** Takes one request from `keyId`'s bucket; RATE_LIMITED (with the seconds to wait) when it is empty. */
  take(keyId: string, ratePerMinute: number): void {
    const perMs = ratePerMinute / 60_000;
    const bucket = this.refilled(keyId, ratePerMinute);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return;
    }
    const retryAfterSeconds = Math.ceil((1 - bucket.tokens) / perMs / 1000);
    throw new SandboxPlaneError('RATE_LIMITED', `key ${keyId} may make ${ratePerMinute} requests a minute; try again in ${retryAfterSeconds} s`, {
      hint: 'Wait the seconds named, or ask an operator for a key with a higher --rate-per-minute.',
      details: { retryAfterSeconds },
    });
  }

  private refilled(keyId: string, ratePerMinute: number): Bucket {
    const now = this.now();
    const bucket = this.buckets.get(keyId) ?? { tokens: ratePerMinute, at: now, rate: ratePerMinute };
    bucket.tokens = Math.min(ratePerMinute, bucket.tokens + ((now - bucket.at) * ratePerMinute) / 60_000);
    bucket.at = now;
    bucket.rate = ratePerMinute;
    this.buckets.set(keyId, bucket);
    if (this.buckets.size > RateLimiter.PRUNE_ABOVE) this.forgetFull(now);
    return bucket;
  }

  /** A bucket refilled to its rate is what a new one would be: forgetting it changes nothing. */
  private forgetFull(now: number): void {
    for (const [keyId, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) * bucket.rate) / 60_000 >= bucket.rate) this.buckets.delete(keyId);
    }
  }
}
