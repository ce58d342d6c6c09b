/** Approvals carry proof (DESIGN §12): RFC 6238 codes, a ±1 step window, each code once, secrets sealed at rest. Fixed clocks, a real SQLite file. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { enrolApprover, FIRST_LOCKOUT_MS, notAcceptedWhy, verifyApprovalCode, WRONG_CODES_BEFORE_LOCKOUT } from '../../src/activities/approver-proof';
import { newRecipient, sealTo } from '../../src/crypto/sealed-box';
import { SecretBox } from '../../src/crypto/secret-box';
import { fromBase32, matchingStep, secretOfOtpauthUri, toBase32, totpCode, totpStep } from '../../src/crypto/totp';
import { Store } from '../../src/store';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandboxplane-proof-'));
const store = Store.open(path.join(dir, 'plane.sqlite'));
const secrets = SecretBox.fromKeyFile(path.join(dir, 'store.key'));
after(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('TOTP', () => {
  test("RFC 6238's SHA-1 test vectors, as 6 digits", () => {
    const secret = Buffer.from('12345678901234567890');
    for (const [seconds, code] of [
      [59, '287082'],
      [1111111109, '081804'],
      [1111111111, '050471'],
      [1234567890, '005924'],
      [2000000000, '279037'],
    ] as const) {
      assert.equal(totpCode(secret, totpStep(seconds * 1000)), code, `T=${seconds}`);
    }
  });

  test('base32 round-trips; one step either side counts, two do not', () => {
    const secret = Buffer.from('12345678901234567890');
    assert.deepEqual(fromBase32(toBase32(secret)), secret);
    const now = 1_700_000_000_000;
    const step = totpStep(now);
    assert.equal(matchingStep(secret, totpCode(secret, step - 1), now), step - 1);
    assert.equal(matchingStep(secret, totpCode(secret, step + 1), now), step + 1);
    assert.equal(matchingStep(secret, totpCode(secret, step - 2), now), undefined);
    assert.equal(matchingStep(secret, totpCode(secret, step + 2), now), undefined);
  });

  test('a sealed text opens only for its recipient', () => {
    const recipient = newRecipient();
    assert.equal(recipient.open(sealTo(recipient.publicKey, 'otpauth://x')), 'otpauth://x');
    assert.throws(() => newRecipient().open(sealTo(recipient.publicKey, 'otpauth://x')));
  });
});

describe('verifying an approval (fixed clock)', () => {
  const cli = newRecipient();
  const enrolled = store.sandboxes.atomically(() => enrolApprover(store, secrets, { name: 'alice', recipient: cli.publicKey }));
  const secret = secretOfOtpauthUri(cli.open(enrolled.enrolment));
  const t0 = 1_800_000_000_000;
  const verify = (code: string | null, use: string, at = t0) => store.sandboxes.atomically(() => verifyApprovalCode(store, secrets, { approver: 'alice', code, use }, at));

  test('the current code is verified once; the same code for another approval is a replay', () => {
    const code = totpCode(secret, totpStep(t0));
    assert.deepEqual(verify(code, 'wf/run/1'), { verdict: 'verified' });
    assert.deepEqual(verify(code, 'wf/run/1'), { verdict: 'verified' }, 'a retried check of the same approval is not a replay');
    const replay = verify(code, 'wf/run/2');
    assert.equal(replay.verdict, 'unverified');
    assert.match((replay as { why: string }).why, /already used/);
    assert.deepEqual(verify(totpCode(secret, totpStep(t0) + 1), 'wf/run/3'), { verdict: 'verified' }, "the next step's code still counts");
    assert.equal(verify(totpCode(secret, totpStep(t0)), 'wf/run/4').verdict, 'unverified', 'an older step after a newer one is refused');
  });

  test('a wrong code, a stale one, an unlisted name and a legacy approver read the same to the caller', () => {
    const later = t0 + 10 * 60_000;
    const why = (approver: string, code: string | null, use: string) =>
      (store.sandboxes.atomically(() => verifyApprovalCode(store, secrets, { approver, code, use }, later)) as { verdict: string; why: string }).why.replaceAll(approver, 'NAME');
    assert.match(why('alice', null, 'x/1'), /no code/);
    const wrong = '000000' === totpCode(secret, totpStep(later)) ? '111111' : '000000';
    const refusals = new Set([why('alice', wrong, 'x/2'), why('alice', totpCode(secret, totpStep(later) - 2), 'x/3'), why('mallory', '123456', 'x/4')]);
    store.approvers.add('legacy');
    refusals.add(why('legacy', '123456', 'x/5'));
    assert.deepEqual([...refusals], [notAcceptedWhy('NAME')]);
    assert.deepEqual(verify(totpCode(secret, totpStep(later)), 'x/6', later), { verdict: 'verified' }, 'a right code clears the wrong ones');
    assert.deepEqual(store.approvers.failuresOf('alice'), { failures: 0, lockouts: 0, lockedUntil: null, lastUse: null });
  });

  test(`${WRONG_CODES_BEFORE_LOCKOUT} wrong codes lock a name out, listed or not; the right code is refused until then; each lock-out doubles`, () => {
    const start = t0 + 60 * 60_000;
    const wrongAt = (at: number) => (totpCode(secret, totpStep(at)) === '000000' ? '111111' : '000000');
    const attempt = (approver: string, code: string, use: string, at: number) => store.sandboxes.atomically(() => verifyApprovalCode(store, secrets, { approver, code, use }, at));
    for (const name of ['alice', 'nobody']) {
      const results = Array.from({ length: 8 }, (_, i) => attempt(name, wrongAt(start), `lock/${name}/${i}`, start));
      assert.deepEqual(
        results.map((result) => (result as { refusal?: string }).refusal ?? null),
        [null, null, null, null, 'RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED'],
        name,
      );
      assert.match((results[4] as { why: string }).why, /locked out until/);
      assert.deepEqual(store.approvers.failuresOf(name), { failures: 0, lockouts: 1, lockedUntil: new Date(start + FIRST_LOCKOUT_MS).toISOString(), lastUse: `lock/${name}/4` });
    }
    const locked = attempt('alice', totpCode(secret, totpStep(start)), 'lock/right', start + 30_000);
    assert.equal((locked as { refusal?: string }).refusal, 'RATE_LIMITED', 'the right code is refused while locked out');
    const afterLock = start + FIRST_LOCKOUT_MS + 1_000;
    for (let i = 0; i < WRONG_CODES_BEFORE_LOCKOUT; i += 1) attempt('alice', wrongAt(afterLock), `lock/again/${i}`, afterLock);
    assert.deepEqual(
      store.approvers.failuresOf('alice'),
      { failures: 0, lockouts: 2, lockedUntil: new Date(afterLock + 2 * FIRST_LOCKOUT_MS).toISOString(), lastUse: `lock/again/${WRONG_CODES_BEFORE_LOCKOUT - 1}` },
      'the second lock-out is twice as long',
    );
    const free = afterLock + 2 * FIRST_LOCKOUT_MS + 1_000;
    assert.deepEqual(attempt('alice', totpCode(secret, totpStep(free)), 'lock/free', free), { verdict: 'verified' });
    assert.deepEqual(store.approvers.failuresOf('alice'), { failures: 0, lockouts: 0, lockedUntil: null, lastUse: null });
  });

  test('a retried check of the same wrong code (its answer lost) counts once', () => {
    const at = t0 + 3 * 60 * 60_000;
    const check = (use: string) => store.sandboxes.atomically(() => verifyApprovalCode(store, secrets, { approver: 'dave', code: '123456', use }, at));
    for (let retry = 0; retry < 6; retry += 1) assert.equal((check('retried/1') as { refusal?: string }).refusal, undefined);
    assert.equal(store.approvers.failuresOf('dave').failures, 1);
  });

  test("a secret sealed for one approver does not open as another's", () => {
    const sealed = store.approvers.proofOf('alice')?.sealedSecret as string;
    assert.throws(() => secrets.open(sealed, 'approver:bob'));
  });
});
