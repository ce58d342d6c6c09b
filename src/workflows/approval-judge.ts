import { isCancellation, workflowInfo } from '@temporalio/workflow';
import type { z } from 'zod';
import type { ApprovalProof } from '../activities';
import { MAX_PAYLOAD_CHARS, type ApprovalAttempt, type ApprovalRefusal } from '../domain/lifecycle-messages';
import { describeIssues } from '../domain/validation';
import type { PendingApproval } from './approval-inbox';
import { failureCode } from './workflow-failures';

/** What one kind of request (a sandbox, an IaC change) adds to the rules every approval follows. */
export interface ApprovalRules<Payload extends { approver: string; reason: string; code?: string | undefined }> {
  readonly schema: z.ZodType<Payload, z.ZodTypeDef, unknown>;
  /** What to send, shown when a payload is malformed or too large. */
  readonly example: string;
  /** Who asked, and what they asked for ("sandbox", "change"): they cannot decide their own request. */
  readonly requester: string;
  readonly subject: string;
  /** This kind's own reason the approval does not count (another plan's digest, an approver twice), checked before the code. */
  readonly check?: (payload: Payload) => string | undefined;
  /** The approver's code checked by the store role (one proof check `use` each: a retried check is not a replayed code). */
  readonly verify: (input: { approver: string; code: string | null; use: string }) => Promise<ApprovalProof>;
  readonly nextProofCheck: () => number;
  /** Records an attempt that did not count: noted for status and audited. */
  readonly ignored: (attempt: ApprovalAttempt) => Promise<void>;
}

/**
 * Judges one approve or deny (DESIGN §12): its payload, that the requester does not
 * decide their own request, this kind's own checks, then the approver's code. One that
 * does not count is recorded and ignored, never fatal: the request goes on waiting.
 */
export async function judgeApproval<Payload extends { approver: string; reason: string; code?: string | undefined }>(
  pending: PendingApproval,
  rules: ApprovalRules<Payload>,
): Promise<ApprovalAttempt> {
  const at = new Date().toISOString();
  const ignore = async (approver: string | null, why: string, refusal?: ApprovalRefusal): Promise<ApprovalAttempt> => {
    const attempt: ApprovalAttempt = { signal: pending.signal, approver, verdict: 'ignored', reason: why, at, ...(refusal !== undefined ? { refusal } : {}) };
    await rules.ignored(attempt);
    return attempt;
  };
  if (pending.oversizedChars !== undefined) return ignore(null, `the payload is ${pending.oversizedChars} characters of JSON, more than ${MAX_PAYLOAD_CHARS}; send ${rules.example}`);
  const parsed = rules.schema.safeParse(pending.payload);
  if (!parsed.success) return ignore(null, `malformed payload (${describeIssues(parsed.error.issues)}); send ${rules.example}`);
  const { approver, reason } = parsed.data;
  if (approver === rules.requester) return ignore(approver, `${approver} requested this ${rules.subject} and cannot ${pending.signal} it`);
  const own = rules.check?.(parsed.data);
  if (own !== undefined) return ignore(approver, own);
  const { workflowId, runId } = workflowInfo();
  let proof: ApprovalProof;
  try {
    proof = await rules.verify({ approver, code: parsed.data.code ?? null, use: `${workflowId}/${runId}/${rules.nextProofCheck()}` });
  } catch (err) {
    if (isCancellation(err)) throw err;
    const error = failureCode(err, 'STORE_UNAVAILABLE');
    return ignore(approver, `the approval could not be checked (${error.code}: ${error.message}); send the ${pending.signal} again`);
  }
  if (proof.verdict === 'unlisted') return ignore(approver, `${approver} is not on the approvers list`);
  // A forged or replayed approval is audited and ignored: the request goes on waiting for a real one.
  if (proof.verdict === 'unverified') return ignore(approver, `${proof.refusal ?? 'APPROVAL_UNVERIFIED'}: ${proof.why}`, proof.refusal ?? 'APPROVAL_UNVERIFIED');
  return { signal: pending.signal, approver, verdict: 'accepted', reason, at };
}
