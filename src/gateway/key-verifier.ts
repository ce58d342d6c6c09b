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

/** Slow hashes one key id may cost a minute before this process has matched its secret. */
const HASHES_PER_KEY_PER_MINUTE = 10;
/** Slow hashes at once, all keys together: each takes a thread of libuv's pool and 32 MiB. */
const HASHES_AT_ONCE = 2;

/** Keys waiting for a slot; past it, refused at once (many keys at once, at a gateway start, still get through). */
const MAX_WAITING = 64;

/** One text for every reason, so a refusal says nothing of which keys exist. */
const refused = () => new SandboxPlaneError('UNAUTHENTICATED', 'no valid API key: send `Authorization: Bearer spk_…` with a key that is not revoked');

/**
 * Checks bearer keys against the store's rows. The row is read at every request, so a
 * revocation counts from the next one. The slow hash is paid once per key and process
 * (then a digest of the secret it matched stands in), at most {@link HASHES_PER_KEY_PER_MINUTE}
 * times a minute for a key id and {@link HASHES_AT_ONCE} at once, so guessing costs the
 * guesser, not the gateway.
 */
export class KeyVerifier {
  /** `keyId` → the stored hash and the digest of the secret that matched it. */
  private readonly matched = new Map<string, string>();
  private readonly hashBudget: RateLimiter;
  private hashing = 0;
  private readonly waiting: (() => void)[] = [];

  private readonly check: typeof secretMatches;

  constructor(
    private readonly keys: KeyLookup,
    options: { readonly now?: () => number; readonly check?: typeof secretMatches } = {},
  ) {
    this.hashBudget = new RateLimiter(options.now ?? Date.now);
    this.check = options.check ?? secretMatches;
  }

  /** The caller a request's `Authorization` header names; UNAUTHENTICATED otherwise. */
  async verify(authorization: string | undefined): Promise<Caller> {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    const parsed = bearer === undefined ? undefined : parseApiKey(bearer);
    if (parsed === undefined) throw refused();
    const row = this.keys.credential(parsed.keyId);
    if (row === undefined || row.revokedAt !== null) throw refused();
    const seen = `${row.secretHash} ${createHash('sha256').update(parsed.secret).digest('hex')}`;
    if (this.matched.get(row.keyId) !== seen) {
      await this.slowCheck(parsed.secret, row);
      this.matched.set(row.keyId, seen);
    }
    return { keyId: row.keyId, principal: row.principal, ratePerMinute: row.ratePerMinute };
  }

  private async slowCheck(secret: string, row: ApiKeyCredential): Promise<void> {
    try {
      this.hashBudget.take(row.keyId, HASHES_PER_KEY_PER_MINUTE);
    } catch {
      throw refused();
    }
    await this.hashSlot();
    try {
      if (!(await this.check(secret, row.secretHash))) throw refused();
    } finally {
      this.hashing -= 1;
      this.waiting.shift()?.();
    }
  }

  /** Waits for one of the {@link HASHES_AT_ONCE} slots; refused when {@link MAX_WAITING} wait already. */
  private async hashSlot(): Promise<void> {
    if (this.hashing < HASHES_AT_ONCE) {
      this.hashing += 1;
      return;
    }
    if (this.waiting.length >= MAX_WAITING) throw refused();
    // The slot passes straight from the one that frees it (hashing stays counted).
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
}
