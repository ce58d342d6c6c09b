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
  readonly maxInFlight: number;
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

/**
 * What a key id that does not exist (or is revoked) is checked against: a hash of the
 * same cost that no secret matches, so such a key takes as long to refuse as a wrong
 * secret for a real one, and its time says nothing of which key ids exist.
 */
const NO_KEY_HASH = `scrypt$32768$8$1$${'A'.repeat(22)}$${'A'.repeat(43)}`;

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
    const found = this.keys.credential(parsed.keyId);
    const row = found === undefined || found.revokedAt !== null ? undefined : found;
    const seen = row === undefined ? undefined : `${row.secretHash} ${createHash('sha256').update(parsed.secret).digest('hex')}`;
    if (row === undefined || this.matched.get(row.keyId) !== seen) {
      // An unknown or revoked key id pays the same slow hash as a wrong secret would, under the same limits.
      await this.slowCheck(parsed.keyId, parsed.secret, row?.secretHash ?? NO_KEY_HASH);
      if (row === undefined || seen === undefined) throw refused();
      this.matched.set(row.keyId, seen);
    }
    return { keyId: row.keyId, principal: row.principal, ratePerMinute: row.ratePerMinute, maxInFlight: row.maxInFlight };
  }

  private async slowCheck(keyId: string, secret: string, secretHash: string): Promise<void> {
    try {
      this.hashBudget.take(keyId, HASHES_PER_KEY_PER_MINUTE);
    } catch {
      throw refused();
    }
    await this.hashSlot();
    try {
      if (!(await this.check(secret, secretHash))) throw refused();
    } finally {
      this.releaseSlot();
    }
  }

  /** Gives the slot to the next waiter (it stays counted: it passes straight on), or frees it. */
  private releaseSlot(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
    else this.hashing -= 1;
  }

  /** Slow hashes running now and keys waiting for a slot: at most {@link HASHES_AT_ONCE} and {@link MAX_WAITING}, whatever came before. */
  get load(): { readonly hashing: number; readonly waiting: number } {
    return { hashing: this.hashing, waiting: this.waiting.length };
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
