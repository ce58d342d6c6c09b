import { condition } from '@temporalio/workflow';
import { formatDuration } from '../domain/duration';
import type { ShownPlan } from '../domain/iac/iac-run';
import type { PendingApproval } from './approval-inbox';
import type { IacPhase } from './iac-phases';
import { IacRefused } from './iac-refusal';
import type { IacRunContext } from './iac-run-context';
import { iso } from './iso-time';

/** Approvals that did not count, at most, before the run ends DENIED: the history of one run stays bounded. */
const MAX_IGNORED_APPROVALS = 100;

/**
 * AWAITING_APPROVAL: judges approves and denies in arrival order, each naming the plan's
 * digest with the approver's code, until enough different people approved (two for
 * production), one denied, the sandbox stopped being READY, or time ran out.
 */
export async function awaitingApproval(ctx: IacRunContext, phase: Extract<IacPhase, { name: 'awaiting_approval' }>): Promise<IacPhase> {
  const run = ctx.run;
  const { approvals } = ctx;
  const plan = ctx.shown.plan as ShownPlan;
  const timeoutSeconds = phase.approvalTimeoutSeconds;
  const deadlineMs = Date.now() + timeoutSeconds * 1000;
  const needed = ctx.shown.approvalsNeeded;
  const waitingNow = () =>
    `Waiting for ${needed === 1 ? 'a reviewer' : `${needed - approvals.given.length} more of ${needed} different reviewers`} to approve plan ${plan.digest} by ${iso(deadlineMs)}, ` +
    `each with their current code; ${run.principal}, who asked, cannot.`;
  let waiting = waitingNow();
  ctx.enter('AWAITING_APPROVAL', waiting);
  await ctx.audit('iac_awaiting_approval', 'policy', 'require_approval', (ctx.shown.decision?.reasons ?? []).join('; ') || null, { digest: plan.digest });
  for (;;) {
    const remaining = deadlineMs - Date.now();
    if (remaining <= 0 || !(await condition(() => approvals.inbox.size > 0 || ctx.place.turn?.ended !== undefined, remaining))) {
      approvals.inbox.closeWith('the run has EXPIRED, no longer awaiting approval');
      throw new IacRefused('EXPIRED', 'APPROVAL_EXPIRED', `no approval within ${formatDuration(timeoutSeconds)}; nothing was applied`);
    }
    const ended = ctx.place.turn?.ended;
    if (ended !== undefined) {
      approvals.inbox.closeWith('the sandbox is no longer READY');
      throw new IacRefused('FAILED', ended.code, ended.message);
    }
    const pending = approvals.inbox.take() as PendingApproval;
    const attempt = await approvals.judge(pending, plan.digest, needed);
    pending.verdict = attempt;
    if (attempt.verdict === 'ignored' && approvals.ignoredInAll >= MAX_IGNORED_APPROVALS) {
      // Each judged attempt stays in the history: a flood must not grow it until Temporal ends the run without a verdict.
      approvals.inbox.closeWith('the run has ended: too many approvals that did not count');
      throw new IacRefused('DENIED', 'RATE_LIMITED', `${MAX_IGNORED_APPROVALS} approvals or denials did not count; nothing was applied. Apply again for a fresh run`);
    }
    if (attempt.verdict === 'ignored') {
      // Whoever signalled from the UI reads why here: a signal has no answer of its own.
      ctx.tell(`${waiting} The last ${attempt.signal} (${attempt.approver ?? 'unnamed'}, ${attempt.at}) was ignored: ${attempt.reason}`);
      continue;
    }
    const approval = approvals.count(attempt);
    if (pending.signal === 'deny') {
      approvals.inbox.closeWith('the run was denied already');
      throw new IacRefused('DENIED', 'APPROVAL_DENIED', `denied by ${approval.approver}${approval.reason ? `: ${approval.reason}` : ''}; nothing was applied`);
    }
    await ctx.audit('iac_approved', approval.approver, 'allow', approval.reason || null, { digest: plan.digest, approvals: approvals.given.length, needed });
    if (approvals.given.length >= needed) {
      approvals.inbox.closeWith('the run was approved already');
      return { name: 'applying' };
    }
    waiting = waitingNow();
    ctx.tell(`${waiting} Approved so far by ${approvals.given.map((given) => given.approver).join(', ')}.`);
    approvals.answer(pending);
  }
}
