import { condition, isCancellation, log, workflowInfo } from '@temporalio/workflow';
import { formatDuration } from '../domain/duration';
import { approvalPayloadSchema, MAX_PAYLOAD_CHARS, type ApprovalAttempt, type ApprovalRefusal } from '../domain/lifecycle-messages';
import type { Approval, Phase, PhaseNamed } from '../domain/lifecycle-record';
import { describeIssues } from '../domain/validation';
import type { PendingApproval } from './approval-inbox';
import type { LifecycleContext } from './lifecycle-context';
import { ended, withdraw } from './phase-ending';
import { failureCode } from './workflow-failures';

/** What a person types into the UI's signal dialog. */
export const APPROVAL_EXAMPLE = '{"approver": "<your name>", "reason": "<why>", "code": "<the 6 digits your authenticator shows>"}';

/** AWAITING_APPROVAL: judges approve/deny requests in arrival order until one counts, the request is withdrawn, or time runs out. */
export async function awaitingApproval(ctx: LifecycleContext, phase: PhaseNamed<'awaiting_approval'>): Promise<Phase> {
  const { screening } = phase;
  const timeout = formatDuration(screening.settings.approvalTimeoutSeconds);
  const handOver = () => ctx.historyIsLong();
  for (;;) {
    const remaining = phase.deadlineMs - Date.now();
    const woke = remaining > 0 && (await condition(() => ctx.inbox.size > 0 || ctx.destroyRequest !== undefined || handOver(), remaining));
    if (woke && ctx.destroyRequest === undefined && handOver()) {
      // A flood of approvals must not grow this run's history without end: the queue goes along.
      ctx.continuing = true;
      return phase;
    }
    if (!woke) {
      const error = { code: 'APPROVAL_EXPIRED' as const, message: `no approval within ${timeout}` };
      return ctx.enter(ended('EXPIRED', { screening, error }), `Expired: nobody approved within ${timeout}. Nothing was provisioned.`, {
        action: 'approval_expired',
        actor: 'timer',
        effect: 'expired',
        reason: error.message,
      });
    }
    if (ctx.destroyRequest !== undefined) return withdraw(ctx, screening, ctx.destroyRequest, 'before approval');
    const pending = ctx.inbox.take() as PendingApproval;
    const attempt = await judge(ctx, pending);
    if (attempt.verdict === 'ignored') {
      pending.verdict = attempt;
      continue;
    }
    const approver = attempt.approver as string;
    let next: Phase;
    if (pending.signal === 'deny') {
      const error = { code: 'APPROVAL_DENIED' as const, message: `denied by ${approver}${attempt.reason ? `: ${attempt.reason}` : ''}` };
      next = await ctx.enter(ended('DENIED', { screening, error }), `Denied by ${approver}. Nothing was provisioned.`, {
        action: 'denied',
        actor: approver,
        effect: 'deny',
        reason: attempt.reason || null,
      });
    } else {
      const approval: Approval = { approver, reason: attempt.reason, at: attempt.at };
      ctx.approved(approval);
      next = await ctx.enter({ name: 'provisioning', screening }, `Approved by ${approver}; provisioning through the ${ctx.record.request.adapter} adapter.`, {
        action: 'approved',
        actor: approver,
        effect: 'allow',
        reason: attempt.reason || null,
      });
    }
    pending.verdict = attempt;
    return next;
  }
}

/** Validates one approve/deny; an invalid or unauthorized one is audited and ignored, never fatal. */
async function judge(ctx: LifecycleContext, pending: PendingApproval): Promise<ApprovalAttempt> {
  const at = new Date().toISOString();
  const ignore = async (approver: string | null, why: string, refusal?: ApprovalRefusal): Promise<ApprovalAttempt> => {
    const attempt: ApprovalAttempt = { signal: pending.signal, approver, verdict: 'ignored', reason: why, at, ...(refusal !== undefined ? { refusal } : {}) };
    ctx.noteAttempt(attempt);
    log.warn('approval ignored', { signal: pending.signal, approver, why });
    await ctx.journal.audit({ action: `${pending.signal}_ignored`, actor: approver ?? 'unknown', effect: 'ignored', reason: why }, ctx.record);
    return attempt;
  };
  if (pending.oversizedChars !== undefined) return ignore(null, `the payload is ${pending.oversizedChars} characters of JSON, more than ${MAX_PAYLOAD_CHARS}; send ${APPROVAL_EXAMPLE}`);
  const parsed = approvalPayloadSchema.safeParse(pending.payload);
  if (!parsed.success) return ignore(null, `malformed payload (${describeIssues(parsed.error.issues)}); send ${APPROVAL_EXAMPLE}`);
  const { approver, reason } = parsed.data;
  if (approver === ctx.record.request.principal) return ignore(approver, `${approver} requested this sandbox and cannot ${pending.signal} it`);
  const { workflowId, runId } = workflowInfo();
  let proof: Awaited<ReturnType<LifecycleContext['projection']['verifyApproval']>>;
  try {
    proof = await ctx.projection.verifyApproval({ approver, code: parsed.data.code ?? null, use: `${workflowId}/${runId}/${ctx.inbox.nextProofCheck()}` });
  } catch (err) {
    if (isCancellation(err)) throw err;
    const error = failureCode(err, 'STORE_UNAVAILABLE');
    return ignore(approver, `the approval could not be checked (${error.code}: ${error.message}); send the ${pending.signal} again`);
  }
  if (proof.verdict === 'unlisted') return ignore(approver, `${approver} is not on the approvers list`);
  // A forged or replayed approval is audited and ignored: the sandbox goes on waiting for a real one.
  if (proof.verdict === 'unverified') return ignore(approver, `${proof.refusal ?? 'APPROVAL_UNVERIFIED'}: ${proof.why}`, proof.refusal ?? 'APPROVAL_UNVERIFIED');
  const attempt: ApprovalAttempt = { signal: pending.signal, approver, verdict: 'accepted', reason, at };
  ctx.noteAttempt(attempt);
  return attempt;
}
