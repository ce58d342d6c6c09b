import { sealTo, isRecipientPublicKey } from '../crypto/sealed-box';
import type { SecretBox } from '../crypto/secret-box';
import { matchingStep, newTotpSecret, otpauthUri } from '../crypto/totp';
import { SandboxPlaneError } from '../domain/errors';
import type { SealedText } from '../domain/sealed-text';
import type { Store } from '../store';

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

/** The store's verdict on an approval's proof. */
export type ApprovalProof = { readonly verdict: 'verified' } | { readonly verdict: 'unlisted' } | { readonly verdict: 'unverified'; readonly why: string };

/**
 * Checks `code` against the approver's secret (the current step ±1) and marks it used:
 * each code counts once. `use` names the approval (workflow, run, attempt), so a
 * retried check of the same approval is not taken for a replay. Call inside a write
 * transaction.
 */
export function verifyApprovalCode(store: Store, secrets: SecretBox, input: { approver: string; code: string | null; use: string }, nowMs: number = Date.now()): ApprovalProof {
  const proof = store.approvers.proofOf(input.approver);
  if (proof === undefined) return { verdict: 'unlisted' };
  if (proof.sealedSecret === null) {
    return {
      verdict: 'unverified',
      why: `${input.approver} has no authenticator enrolled (listed before approvals needed a code); re-enrol: sandboxctl approvers remove ${input.approver}, then approvers add ${input.approver}`,
    };
  }
  if (input.code === null) return { verdict: 'unverified', why: `no code: add ${input.approver}'s current 6-digit code from their authenticator ("code": "NNNNNN")` };
  const step = matchingStep(secrets.open(proof.sealedSecret, boundTo(input.approver)), input.code, nowMs);
  if (step === undefined) return { verdict: 'unverified', why: `the code is not ${input.approver}'s current one (wrong, or older than a minute)` };
  if (proof.lastCodeStep !== null && step <= proof.lastCodeStep && proof.lastCodeUse !== input.use) {
    return { verdict: 'unverified', why: `that code of ${input.approver} was already used; wait for the next one` };
  }
  store.approvers.recordCodeUse(input.approver, step, input.use);
  return { verdict: 'verified' };
}
