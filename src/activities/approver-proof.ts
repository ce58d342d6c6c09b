import { sealTo, isRecipientPublicKey } from '../crypto/sealed-box';
import type { SecretBox } from '../crypto/secret-box';
import { matchingStep, newTotpSecret, otpauthUri } from '../crypto/totp';
import { SandboxPlaneError } from '../domain/errors';
import type { SealedText } from '../domain/sealed-text';
import { NO_FAILURES, type Store } from '../store';

/** The issuer an authenticator app shows beside the approver's name. */
export const TOTP_ISSUER = 'Cloud Sandbox Plane';

/** The store's key binds each sealed secret to its approver. */
const boundTo = (name: string) => `approver:${name}`;

/**
 * Enrols an approver (DESIGN §12): a fresh TOTP secret, sealed at rest with the store's
 * key, and its `otpauth://` URI sealed to the enrolling CLI's one-time key, so neither
 * the store command's result in history nor the SQLite file holds it in clear.
 */
export function enrolApprover(store: Store, secrets: SecretBox, input: { name: string; recipient: string }): { name: string; addedAt: string; enrolment: SealedText } {
  if (!isRecipientPublicKey(input.recipient)) {
    throw new SandboxPlaneError('INVALID_INPUT', 'recipient is not an X25519 public key', { hint: 'Enrol with `sandboxctl approvers add NAME` or StoreClient.addApprover.' });
  }
  const enrolled = store.approvers.enrol(input.name, input.recipient, () => secrets.seal(newTotpSecret(), boundTo(input.name)));
  if (enrolled === 'already_enrolled') {
    throw new SandboxPlaneError('INVALID_STATE', `${input.name} is already enrolled with an authenticator`, {
      hint: `To give ${input.name} a new secret (a lost phone): \`sandboxctl approvers remove ${input.name}\`, then \`sandboxctl approvers add ${input.name}\`.`,
    });
  }
  const secret = secrets.open(enrolled.sealedSecret, boundTo(input.name));
  return { name: enrolled.name, addedAt: enrolled.addedAt, enrolment: sealTo(input.recipient, otpauthUri(secret, input.name, TOTP_ISSUER)) };
}

/**
 * The store's verdict on an approval's proof. `unlisted` is no longer given (an unlisted
 * name reads like a wrong code, DESIGN §18) but workflows still refuse it. `refusal` names
 * the code an `unverified` proof is refused with: APPROVAL_UNVERIFIED, or RATE_LIMITED for a
 * name locked out (a workflow that predates it refuses it as APPROVAL_UNVERIFIED).
 */
export type ApprovalProof =
  { readonly verdict: 'verified' } | { readonly verdict: 'unlisted' } | { readonly verdict: 'unverified'; readonly why: string; readonly refusal?: 'APPROVAL_UNVERIFIED' | 'RATE_LIMITED' };

/** Wrong codes in a row that lock a name out. */
export const WRONG_CODES_BEFORE_LOCKOUT = 5;
/** The first lock-out; each further one (without a right code between) doubles it, up to {@link MAX_LOCKOUT_MS}. */
export const FIRST_LOCKOUT_MS = 60_000;
export const MAX_LOCKOUT_MS = 3_600_000;

/** What the caller is told of a wrong code and of a name that is not an approver alike, so guessing cannot find the approvers. */
export const notAcceptedWhy = (name: string) => `the code is not a current code of an approver named ${name} (a wrong code, an old one, or not a listed approver)`;

/**
 * Counts a wrong code against `name` (listed or not) and locks the name out after
 * {@link WRONG_CODES_BEFORE_LOCKOUT} in a row, so about an hour of guessing inside an
 * approval's timeout no longer finds a code (DESIGN §18).
 */
function countWrongCode(store: Store, name: string, use: string, nowMs: number): ApprovalProof {
  const before = store.approvers.failuresOf(name);
  // A retried check (the activity ran, its answer was lost) is the same guess: counted once.
  // (A retry of the guess that locked the name out meets the lock-out first.)
  if (before.lastUse === use) return { verdict: 'unverified', why: notAcceptedWhy(name) };
  const failures = before.failures + 1;
  if (failures < WRONG_CODES_BEFORE_LOCKOUT) {
    store.approvers.recordFailures(name, { ...before, failures, lastUse: use });
    return { verdict: 'unverified', why: notAcceptedWhy(name) };
  }
  const lockMs = Math.min(MAX_LOCKOUT_MS, FIRST_LOCKOUT_MS * 2 ** before.lockouts);
  const lockedUntil = new Date(nowMs + lockMs).toISOString();
  store.approvers.recordFailures(name, { failures: 0, lockouts: before.lockouts + 1, lockedUntil, lastUse: use });
  return lockedOut(name, lockedUntil);
}

function lockedOut(name: string, lockedUntil: string): ApprovalProof {
  return {
    verdict: 'unverified',
    refusal: 'RATE_LIMITED',
    why: `${notAcceptedWhy(name)}; after ${WRONG_CODES_BEFORE_LOCKOUT} wrong codes in a row, ${name} is locked out until ${lockedUntil}`,
  };
}

/**
 * Checks `code` against the approver's secret (the current step ±1) and marks it used:
 * each code counts once. `use` names the approval (workflow, run, attempt), so a
 * retried check of the same approval is not taken for a replay. A name locked out by
 * wrong codes is refused whatever the code, right ones included. Call inside a write
 * transaction.
 */
export function verifyApprovalCode(store: Store, secrets: SecretBox, input: { approver: string; code: string | null; use: string }, nowMs: number = Date.now()): ApprovalProof {
  const { lockedUntil } = store.approvers.failuresOf(input.approver);
  if (lockedUntil !== null && Date.parse(lockedUntil) > nowMs) {
    return { verdict: 'unverified', refusal: 'RATE_LIMITED', why: `${input.approver} is locked out after too many wrong codes, until ${lockedUntil}; try again then with a current code` };
  }
  if (input.code === null) return { verdict: 'unverified', why: `no code: add ${input.approver}'s current 6-digit code from their authenticator ("code": "NNNNNN")` };
  const proof = store.approvers.proofOf(input.approver);
  // An approver listed before approvals needed a code has no secret: no code of theirs is right.
  const step = proof?.sealedSecret == null ? undefined : matchingStep(secrets.open(proof.sealedSecret, boundTo(input.approver)), input.code, nowMs);
  if (proof === undefined || step === undefined) return countWrongCode(store, input.approver, input.use, nowMs);
  if (proof.lastCodeStep !== null && step <= proof.lastCodeStep && proof.lastCodeUse !== input.use) {
    return { verdict: 'unverified', why: `that code of ${input.approver} was already used; wait for the next one` };
  }
  store.approvers.recordCodeUse(input.approver, step, input.use);
  store.approvers.recordFailures(input.approver, NO_FAILURES);
  return { verdict: 'verified' };
}
