import { formatDuration } from './duration';

/** Operator-wide limits, from the worker's configuration. */
export interface TtlSettings {
  /** TTL of a request that names none (capped by the policy's max TTL). */
  readonly defaultTtlSeconds: number;
  /** No TTL, and no extension, may reach further than this from now. */
  readonly ttlCeilingSeconds: number;
  /** No sandbox may live longer than this in total, extensions included. */
  readonly maxLifetimeSeconds: number;
}

export type TtlVerdict = { ok: true; ttlSeconds: number; maxTtlSeconds: number } | { ok: false; reason: string };

/** The TTL a request gets: its own, or the default, never above the policy's max or the ceiling. */
export function grantTtl(requested: number | undefined, policyMaxTtlSeconds: number | null, settings: TtlSettings): TtlVerdict {
  const fromPolicy = policyMaxTtlSeconds !== null && policyMaxTtlSeconds < settings.ttlCeilingSeconds;
  const maxTtlSeconds = fromPolicy ? (policyMaxTtlSeconds as number) : settings.ttlCeilingSeconds;
  const ttlSeconds = requested ?? Math.min(settings.defaultTtlSeconds, maxTtlSeconds);
  if (ttlSeconds > maxTtlSeconds) {
    const source = fromPolicy ? "the policy row's max TTL" : 'the global TTL ceiling';
    return {
      ok: false,
      reason: `ttlSeconds must be at most ${maxTtlSeconds} (${formatDuration(maxTtlSeconds)}, ${source}), got ${ttlSeconds} (${formatDuration(ttlSeconds)})`,
    };
  }
  return { ok: true, ttlSeconds, maxTtlSeconds };
}

export type ExtensionVerdict = { ok: true; expiresAtMs: number } | { ok: false; reason: string };

/**
 * An extension adds `extendBySeconds` to the current expiry. It may not move expiry
 * past now + the sandbox's max TTL, nor its total life past the global maximum.
 */
export function checkExtension(input: {
  nowMs: number;
  createdAtMs: number;
  expiresAtMs: number;
  extendBySeconds: number;
  maxTtlSeconds: number;
  maxLifetimeSeconds: number;
}): ExtensionVerdict {
  const expiresAtMs = input.expiresAtMs + input.extendBySeconds * 1000;
  const latestByTtl = input.nowMs + input.maxTtlSeconds * 1000;
  if (expiresAtMs > latestByTtl) {
    return {
      ok: false,
      reason: `extending by ${formatDuration(input.extendBySeconds)} would expire at ${new Date(expiresAtMs).toISOString()}, past now + the max TTL of ${formatDuration(input.maxTtlSeconds)} (${new Date(latestByTtl).toISOString()})`,
    };
  }
  const latestByLife = input.createdAtMs + input.maxLifetimeSeconds * 1000;
  if (expiresAtMs > latestByLife) {
    return {
      ok: false,
      reason: `extending by ${formatDuration(input.extendBySeconds)} would make the sandbox live past its maximum lifetime of ${formatDuration(input.maxLifetimeSeconds)} (${new Date(latestByLife).toISOString()})`,
    };
  }
  return { ok: true, expiresAtMs };
}
