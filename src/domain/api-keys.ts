/**
 * The gateway's API keys (DESIGN §18): one bearer key per principal, shown once. A key
 * reads `spk_<keyId>_<secret>`; the store keeps its id, principal and a slow hash of the
 * secret, never the key.
 */
import { z } from 'zod';
import { principalSchema } from './sandbox-request';

/** What `keys add` answers: the key itself is in it this once. */
export interface NewApiKey {
  readonly principal: string;
  readonly keyId: string;
  readonly key: string;
}

/** A key as `keys list` shows it: never its secret or hash. */
export interface ApiKeyRecord {
  readonly keyId: string;
  readonly principal: string;
  readonly ratePerMinute: number;
  /** Requests this key may have in flight through the gateway at once. */
  readonly maxInFlight: number;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

export const API_KEY_PREFIX = 'spk_';

export const apiKeyIdSchema = z.string().regex(/^[0-9a-f]{12}$/, 'must be a key id: 12 lowercase hex digits, as `sandboxctl keys list` shows');

/** Requests a key may make per minute (its bucket also holds this many at once). */
export const DEFAULT_RATE_PER_MINUTE = 120;
export const ratePerMinuteSchema = z.number().int('must be a whole number').min(1, 'must be at least 1').max(60_000, 'must be at most 60000');

/** Requests a key may have in flight at once (DESIGN §18): a wait holds a socket and an update for as long as it waits. */
export const DEFAULT_MAX_IN_FLIGHT = 16;
export const maxInFlightSchema = z.number().int('must be a whole number').min(1, 'must be at least 1').max(1_000, 'must be at most 1000');

/** The `keys.add` store command's fields: the hash travels, the key never does. */
export const newApiKeySchema = z
  .object({
    keyId: apiKeyIdSchema,
    principal: principalSchema,
    secretHash: z.string().regex(/^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/, 'must be an scrypt hash'),
    ratePerMinute: ratePerMinuteSchema.default(DEFAULT_RATE_PER_MINUTE),
    maxInFlight: maxInFlightSchema.default(DEFAULT_MAX_IN_FLIGHT),
  })
  .strict();
export type NewApiKeyRow = z.output<typeof newApiKeySchema>;
