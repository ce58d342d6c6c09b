/**
 * API keys (DESIGN §18): made here, shown once, kept as an scrypt hash. scrypt is slow on
 * purpose (about 50 ms here), so a stolen key table does not give its keys back; the
 * gateway pays it once per key and process (see gateway/key-verifier.ts).
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { API_KEY_PREFIX } from '../domain/api-keys';

const COST = { N: 2 ** 15, r: 8, p: 1 } as const;
const HASH_BYTES = 32;
/** scrypt with N = 2^15, r = 8 needs 32 MiB; node's default ceiling is exactly that. */
const MAX_MEMORY = 64 * 1024 * 1024;

function derive(secret: string, salt: Buffer, cost: { N: number; r: number; p: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(secret, salt, HASH_BYTES, { ...cost, maxmem: MAX_MEMORY }, (err, hash) => (err === null ? resolve(hash) : reject(err))));
}

/** A new key: its id, the key text to show once, and the hash to store. */
export async function newApiKey(): Promise<{ keyId: string; key: string; secretHash: string }> {
  const keyId = randomBytes(6).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  const salt = randomBytes(16);
  const hash = await derive(secret, salt, COST);
  return {
    keyId,
    key: `${API_KEY_PREFIX}${keyId}_${secret}`,
    secretHash: `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`,
  };
}

/** A presented key's parts; `undefined` for text that is not a key of this plane. */
export function parseApiKey(text: string): { keyId: string; secret: string } | undefined {
  const match = /^spk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/.exec(text);
  return match === null ? undefined : { keyId: match[1] as string, secret: match[2] as string };
}

/** Whether `secret` hashes to `secretHash` (in constant time). */
export async function secretMatches(secret: string, secretHash: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = secretHash.split('$');
  if (scheme !== 'scrypt' || salt === undefined || hash === undefined) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await derive(secret, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
