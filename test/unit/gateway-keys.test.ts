/** The gateway's keys and limits (DESIGN §18), without a server: the slow hash, the verifier's refusals and cache, the token bucket. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { newApiKey, parseApiKey, secretMatches } from '../../src/crypto/api-key-hash';
import { SandboxPlaneError } from '../../src/domain/errors';
import { httpStatusOf } from '../../src/gateway/http-errors';
import { KeyVerifier } from '../../src/gateway/key-verifier';
import { RateLimiter } from '../../src/gateway/rate-limiter';
import type { ApiKeyCredential } from '../../src/store';

const codeOf = async (work: Promise<unknown>) => {
  try {
    await work;
    return 'accepted';
  } catch (err) {
    return (err as SandboxPlaneError).code;
  }
};

describe('API keys', () => {
  test('a key is spk_<id>_<secret>; its hash is scrypt, matches only its own secret, and holds no part of it', async () => {
    const { keyId, key, secretHash } = await newApiKey();
    const parsed = parseApiKey(key);
    assert.equal(parsed?.keyId, keyId);
    assert.match(secretHash, /^scrypt\$32768\$8\$1\$/);
    assert.ok(!secretHash.includes(parsed?.secret ?? '?'));
    assert.equal(await secretMatches(parsed?.secret ?? '', secretHash), true);
    // Its last character changed (to A, or B when it was A: a secret ending in A once in 64 made this check flaky).
    const secret = parsed?.secret ?? '';
    assert.equal(await secretMatches(`${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`, secretHash), false);
    for (const text of ['', 'spk_', `${key}x`, key.replace('spk_', 'sk_'), key.toUpperCase()]) assert.equal(parseApiKey(text), undefined, text);
  });

  test('the verifier: the key names its principal; missing, malformed, wrong and revoked keys are all UNAUTHENTICATED; a revocation counts after the hash is cached', async () => {
    const made = await newApiKey();
    const rows = new Map<string, ApiKeyCredential>([
      [made.keyId, { keyId: made.keyId, principal: 'agent-v', ratePerMinute: 5, maxInFlight: 16, createdAt: 'now', revokedAt: null, secretHash: made.secretHash }],
    ]);
    const verifier = new KeyVerifier({ credential: (keyId) => rows.get(keyId) });
    assert.deepEqual(await verifier.verify(`Bearer ${made.key}`), { keyId: made.keyId, principal: 'agent-v', ratePerMinute: 5, maxInFlight: 16 });
    assert.deepEqual(await verifier.verify(`bearer   ${made.key}`), { keyId: made.keyId, principal: 'agent-v', ratePerMinute: 5, maxInFlight: 16 }, 'the scheme is case-insensitive');
    const wrong = `spk_${made.keyId}_${'B'.repeat(43)}`;
    const refusals = await Promise.all(
      [undefined, '', made.key, `Basic ${made.key}`, `Bearer ${wrong}`, `Bearer spk_000000000000_${'C'.repeat(43)}`].map((header) => codeOf(verifier.verify(header))),
    );
    assert.deepEqual(refusals, Array(6).fill('UNAUTHENTICATED'));
    rows.set(made.keyId, { ...(rows.get(made.keyId) as ApiKeyCredential), revokedAt: 'now' });
    assert.equal(await codeOf(verifier.verify(`Bearer ${made.key}`)), 'UNAUTHENTICATED');
  });

  test('a key id costs at most ten slow hashes a minute, two at a time; past that the key waits too, unless already verified', async () => {
    const made = await newApiKey();
    const row: ApiKeyCredential = { keyId: made.keyId, principal: 'agent-g', ratePerMinute: 5, maxInFlight: 16, createdAt: 'now', revokedAt: null, secretHash: made.secretHash };
    let now = 0;
    let hashes = 0;
    let running = 0;
    let mostAtOnce = 0;
    const counted = async (secret: string, hash: string) => {
      hashes += 1;
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      try {
        return await secretMatches(secret, hash);
      } finally {
        running -= 1;
      }
    };
    const cached = new KeyVerifier({ credential: () => row }, { now: () => now });
    const fresh = new KeyVerifier({ credential: () => row }, { now: () => now, check: counted });
    await cached.verify(`Bearer ${made.key}`);
    const guess = `Bearer spk_${made.keyId}_${'G'.repeat(43)}`;
    const concurrent = await Promise.all(Array.from({ length: 40 }, () => codeOf(fresh.verify(guess))));
    assert.deepEqual(new Set(concurrent), new Set(['UNAUTHENTICATED']), 'one refusal for all');
    assert.equal(hashes, 10, 'forty guesses at once: ten hashed, the rest refused unhashed');
    assert.equal(mostAtOnce, 2, 'two at a time');
    assert.equal(await codeOf(fresh.verify(guess)), 'UNAUTHENTICATED');
    assert.equal(await codeOf(fresh.verify(`Bearer ${made.key}`)), 'UNAUTHENTICATED', 'the key itself is not hashed now');
    assert.equal(hashes, 10);
    for (let i = 0; i < 10; i += 1) await codeOf(cached.verify(guess));
    assert.equal(await codeOf(cached.verify(`Bearer ${made.key}`)), 'accepted', 'a key verified before goes on');
    now = 6_000;
    assert.equal(await codeOf(fresh.verify(`Bearer ${made.key}`)), 'accepted', 'a hash a minute comes back');
  });
});

describe('the slow hash under bursts (issue 39)', () => {
  test('200 concurrent bad keys, twice over: never more than two hashes at once, never more than 64 waiting, and the count comes back to zero', async () => {
    // Every id is a key (a wrong secret for each): each one pays a hash, old code and new.
    const anyKey = (keyId: string): ApiKeyCredential => ({
      keyId,
      principal: 'agent-b',
      ratePerMinute: 5,
      maxInFlight: 16,
      createdAt: 'now',
      revokedAt: null,
      secretHash: `scrypt$2$1$1$${'A'.repeat(22)}$${'A'.repeat(43)}`,
    });
    let running = 0;
    let mostAtOnce = 0;
    const slow = async () => {
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      await new Promise((resolve) => setTimeout(resolve, 2));
      running -= 1;
      return false;
    };
    const verifier = new KeyVerifier({ credential: anyKey }, { check: slow });
    let mostWaiting = 0;
    for (let round = 0; round < 2; round += 1) {
      const keys = Array.from({ length: 200 }, (_, index) => `Bearer spk_${(round * 1000 + index).toString(16).padStart(12, '0')}_${'K'.repeat(43)}`);
      const watching = setInterval(() => (mostWaiting = Math.max(mostWaiting, verifier.load.waiting)), 0);
      const codes = await Promise.all(keys.map((key) => codeOf(verifier.verify(key))));
      clearInterval(watching);
      assert.deepEqual(new Set(codes), new Set(['UNAUTHENTICATED']));
      assert.deepEqual(verifier.load, { hashing: 0, waiting: 0 }, `round ${round + 1}: every slot is back`);
    }
    assert.equal(mostAtOnce, 2, 'two hashes at once, in the second burst too');
    assert.ok(mostWaiting <= 64, `${mostWaiting} waiting`);
  });

  test('an unknown key id costs the same slow hash as a wrong secret for a known one', async () => {
    const made = await newApiKey();
    const row: ApiKeyCredential = { keyId: made.keyId, principal: 'agent-t', ratePerMinute: 5, maxInFlight: 16, createdAt: 'now', revokedAt: null, secretHash: made.secretHash };
    const hashed: string[] = [];
    const verifier = new KeyVerifier(
      { credential: (keyId) => (keyId === made.keyId ? row : undefined) },
      { check: async (secret, hash) => (hashed.push(hash), secretMatches(secret, hash)) },
    );
    assert.equal(await codeOf(verifier.verify(`Bearer spk_${made.keyId}_${'W'.repeat(43)}`)), 'UNAUTHENTICATED');
    assert.equal(await codeOf(verifier.verify(`Bearer spk_ffffffffffff_${'W'.repeat(43)}`)), 'UNAUTHENTICATED');
    assert.equal(hashed.length, 2, 'both paid a slow hash');
    const cost = (hash: string | undefined) => hash?.split('$').slice(0, 4).join('$');
    assert.equal(cost(hashed[1]), cost(hashed[0]), 'of the same cost (scrypt, N, r, p)');
  });
});

describe('the per-key rate limit', () => {
  test('a key holds its rate per minute at once, gets them back evenly, and is told how long to wait; each key its own bucket', () => {
    let now = 0;
    const limiter = new RateLimiter(() => now);
    for (let i = 0; i < 3; i += 1) limiter.take('a', 3);
    assert.throws(
      () => limiter.take('a', 3),
      (err: SandboxPlaneError) => err.code === 'RATE_LIMITED' && err.details.retryAfterSeconds === 20 && httpStatusOf(err) === 429,
    );
    limiter.take('b', 3);
    now = 19_000;
    assert.throws(() => limiter.take('a', 3));
    now = 20_000;
    limiter.take('a', 3);
    assert.throws(() => limiter.take('a', 3));
  });

  test('HTTP statuses follow the taxonomy', () => {
    const status = (code: ConstructorParameters<typeof SandboxPlaneError>[0]) => httpStatusOf(new SandboxPlaneError(code, 'x'));
    assert.deepEqual(
      ['INVALID_INPUT', 'UNAUTHENTICATED', 'POLICY_DENIED', 'PRINCIPAL_MISMATCH', 'NOT_FOUND', 'INVALID_STATE', 'WAIT_TIMEOUT', 'TEMPORAL_UNREACHABLE', 'INTERNAL'].map((code) =>
        status(code as never),
      ),
      [400, 401, 403, 403, 404, 409, 504, 503, 500],
    );
  });
});
