import { createHash } from 'node:crypto';
import { parseApiKey, secretMatches } from '../crypto/api-key-hash';
import { SandboxPlaneError } from '../domain/errors';
import type { ApiKeyCredential } from '../store';
import { RateLimiter } from './rate-limiter';

/** Who a request comes from: the key's id and principal, never a payload field (DESIGN §18). */
export interface Caller {
  readonly keyId: string;
  readonly principal: string;
  readonly ratePerMinute: number;
}

/** Where the verifier reads a key's row: the store's file, read at every request. */
export interface KeyLookup {
  credential(keyId: string): ApiKeyCredential | undefined;
}

/** Wrong secrets for one key id a minute that are still hashed. */
const WRONG_SECRETS_PER_MINUTE = 10;

const REFUSED = () => new SandboxPlaneError('UNAUTHENTICATED', 'no valid API key: send `Authorization: Bearer spk_…` with a key that is not revoked', {});

/**
 * Checks bearer keys against the store's rows. The row is read at every request, so a
 * revocation counts from the next one; the slow hash is paid once per key and process,
 * after which a digest of the secret it matched stands in for it.
 */
export class KeyVerifier {
  private readonly matched = new Map<string, string>();
  private readonly wrongSecrets: RateLimiter;

  constructor(
    private readonly keys: KeyLookup,
    now: () => number = Date.now,
  ) {
    this.wrongSecrets = new RateLimiter(now);
  }

  /** The caller a request's `Authorization` header names; UNAUTHENTICATED (one text for every reason) otherwise. */
  async verify(authorization: string | undefined): Promise<Caller> {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    const parsed = bearer === undefined ? undefined : parseApiKey(bearer);
    if (parsed === undefined) throw REFUSED();
    const row = this.keys.credential(parsed.keyId);
    if (row === undefined || row.revokedAt !== null) throw REFUSED();
    const digest = createHash('sha256').update(parsed.secret).digest('hex');
    if (this.matched.get(row.keyId) !== digest) {
      // Guessing a key's secret costs the gateway a slow hash per guess: past a few wrong ones a minute, no more hashing for that key id.
      if (!this.wrongSecrets.has(row.keyId, WRONG_SECRETS_PER_MINUTE)) throw REFUSED();
      if (!(await secretMatches(parsed.secret, row.secretHash))) {
        this.wrongSecrets.take(row.keyId, WRONG_SECRETS_PER_MINUTE);
        throw REFUSED();
      }
      this.matched.set(row.keyId, digest);
    }
    return { keyId: row.keyId, principal: row.principal, ratePerMinute: row.ratePerMinute };
  }
}
