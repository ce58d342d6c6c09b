import { condition, log } from '@temporalio/workflow';
import { formatDuration } from '../domain/duration';
import { approvalPayloadSchema, type ApprovalAttempt } from '../domain/lifecycle-messages';
import type { Approval, Phase, PhaseNamed } from '../domain/lifecycle-record';
import type { PendingApproval } from './approval-inbox';
import { judgeApproval } from './approval-judge';
import type { LifecycleContext } from './lifecycle-context';
import { ended, withdraw } from './phase-ending';

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

/** Validates one approve/deny (the rules every approval follows); an invalid or unauthorized one is audited and ignored, never fatal. */
async function judge(ctx: LifecycleContext, pending: PendingApproval): Promise<ApprovalAttempt> {
  const attempt = await judgeApproval(pending, {
    schema: approvalPayloadSchema,
    example: APPROVAL_EXAMPLE,
    requester: ctx.record.request.principal,
    subject: 'sandbox',
    verify: (input) => ctx.projection.verifyApproval(input),
    nextProofCheck: () => ctx.inbox.nextProofCheck(),
    ignored: async (ignored) => {
      ctx.noteAttempt(ignored);
      log.warn('approval ignored', { signal: ignored.signal, approver: ignored.approver, why: ignored.reason });
      await ctx.journal.audit({ action: `${ignored.signal}_ignored`, actor: ignored.approver ?? 'unknown', effect: 'ignored', reason: ignored.reason }, ctx.record);
    },
  });
  if (attempt.verdict === 'accepted') ctx.noteAttempt(attempt);
  return attempt;
}
