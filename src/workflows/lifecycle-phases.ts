import { condition, isCancellation, log } from '@temporalio/workflow';
import { formatDuration } from '../domain/duration';
import { approvalPayloadSchema, type ApprovalAttempt } from '../domain/lifecycle-messages';
import { snapshotOf, type Approval, type EndState, type LifecycleError, type Phase, type PhaseNamed, type Screening } from '../domain/lifecycle-record';
import type { PolicyEffect } from '../domain/policy';
import type { SandboxState } from '../domain/sandbox-states';
import { describeIssues } from '../domain/validation';
import { projection, runtime, type DestroyRequest, type LifecycleContext, type PendingApproval } from './lifecycle-context';
import { failureCode } from './workflow-failures';

/** What a person types into the UI's signal dialog. */
export const APPROVAL_EXAMPLE = '{"approver": "<your name>", "reason": "<why>"}';

/** The state screening leads to, by the policy's effect; the screening activity records it. */
const STATE_AFTER_SCREENING: Readonly<Record<PolicyEffect, SandboxState>> = {
  deny: 'DENIED',
  require_approval: 'AWAITING_APPROVAL',
  allow: 'PROVISIONING',
};

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function ended(state: EndState, from: { screening?: Screening | null; error?: LifecycleError | null } = {}): PhaseNamed<'ended'> {
  return { name: 'ended', state, screening: from.screening ?? null, runtime: null, expiresAtMs: null, error: from.error ?? null };
}

/** Ends a request before anything was provisioned: DESTROYED, recorded as `withdrawn`. */
function withdraw(ctx: LifecycleContext, screening: Screening | null, by: DestroyRequest, when: string): Promise<Phase> {
  return ctx.enter(ended('DESTROYED', { screening }), `Withdrawn ${when} (${by.reason}). Nothing was provisioned.`, {
    action: 'withdrawn',
    actor: by.actor,
    effect: 'destroyed',
    reason: by.reason,
  });
}

export function readyDetails(phase: PhaseNamed<'ready'>): string {
  return (
    `Ready at ${phase.runtime.endpoint}. Expires at ${iso(phase.expiresAtMs)} unless extended (update "extend" with ` +
    `{"ttlSeconds": N}) or destroyed earlier (update "destroy").`
  );
}

/**
 * REQUESTED: recorded and screened in one projection transaction (nothing has touched a
 * runtime yet); the verdict chooses the next phase.
 */
export async function requested(ctx: LifecycleContext): Promise<Phase> {
  const { request } = ctx.record;
  let screening: Screening;
  try {
    screening = await projection.screenNewRequest({
      snapshot: snapshotOf(ctx.record),
      request,
      requested: ctx.numbered({
        action: 'requested',
        actor: request.principal,
        effect: 'requested',
        reason: request.purpose ?? null,
        summary: { services: request.services, adapter: request.adapter, capability: request.capability },
      }),
      step: ctx.nextStep(),
      nextStates: STATE_AFTER_SCREENING,
    });
  } catch (err) {
    if (isCancellation(err)) throw err;
    // The projection refuses a reused id (IDEMPOTENCY_CONFLICT): end here, having touched nothing.
    const error = failureCode(err, 'INTERNAL');
    return ctx.adopt(ended('DENIED', { error }), `Refused before screening (${error.code}): ${error.message}. Nothing was recorded or provisioned.`);
  }
  const { decision, settings } = screening;
  if (decision.effect === 'deny') {
    const error = { code: decision.code ?? 'POLICY_DENIED', message: decision.reasons.join('; ') };
    return ctx.adopt(ended('DENIED', { screening, error }), `Denied at screening (${error.code}): ${error.message}. Nothing was provisioned.`);
  }
  if (decision.effect === 'require_approval') {
    const deadlineMs = Date.now() + settings.approvalTimeoutSeconds * 1000;
    return ctx.adopt(
      { name: 'awaiting_approval', screening, deadlineMs },
      // The Temporal UI renders this as Markdown in a small frame: code spans keep the payload
      // copyable (no tags eaten, no curly quotes), and the reasons stay in status.decision.
      `Waiting for a human's approval until ${iso(deadlineMs)} (${formatDuration(settings.approvalTimeoutSeconds)}). ` +
        `To approve, send the signal \`approve\` with the JSON payload \`${APPROVAL_EXAMPLE}\`; to refuse, send \`deny\` with the same payload. ` +
        `The approver must be on the approvers list and must not be ${request.principal}.`,
    );
  }
  return ctx.adopt({ name: 'provisioning', screening }, `Provisioning through the ${request.adapter} adapter.`);
}

/** AWAITING_APPROVAL: judges approve/deny requests in arrival order until one counts, the request is withdrawn, or time runs out. */
export async function awaitingApproval(ctx: LifecycleContext, phase: PhaseNamed<'awaiting_approval'>): Promise<Phase> {
  const { screening } = phase;
  const timeout = formatDuration(screening.settings.approvalTimeoutSeconds);
  for (;;) {
    const remaining = phase.deadlineMs - Date.now();
    const woke = remaining > 0 && (await condition(() => ctx.inbox.length > 0 || ctx.destroyRequest !== undefined, remaining));
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
    const pending = ctx.inbox.shift() as PendingApproval;
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
  const ignore = async (approver: string | null, why: string): Promise<ApprovalAttempt> => {
    const attempt: ApprovalAttempt = { signal: pending.signal, approver, verdict: 'ignored', reason: why, at };
    ctx.noteAttempt(attempt);
    log.warn('approval ignored', { signal: pending.signal, approver, why });
    await ctx.audit({ action: `${pending.signal}_ignored`, actor: approver ?? 'unknown', effect: 'ignored', reason: why });
    return attempt;
  };
  const parsed = approvalPayloadSchema.safeParse(pending.payload);
  if (!parsed.success) return ignore(null, `malformed payload (${describeIssues(parsed.error.issues)}); send ${APPROVAL_EXAMPLE}`);
  const { approver, reason } = parsed.data;
  if (approver === ctx.record.request.principal) return ignore(approver, `${approver} requested this sandbox and cannot ${pending.signal} it`);
  if (!(await projection.isListedApprover({ approver }))) return ignore(approver, `${approver} is not on the approvers list`);
  const attempt: ApprovalAttempt = { signal: pending.signal, approver, verdict: 'accepted', reason, at };
  ctx.noteAttempt(attempt);
  return attempt;
}

/** PROVISIONING: the row already says so, so a crash here leaves a visible sandbox for the sweep. */
export async function provisioning(ctx: LifecycleContext, phase: PhaseNamed<'provisioning'>): Promise<Phase> {
  const { request } = ctx.record;
  const { screening } = phase;
  if (ctx.destroyRequest !== undefined) return withdraw(ctx, screening, ctx.destroyRequest, 'before provisioning');
  try {
    const handle = await runtime.provisionSandbox({ sandboxId: request.id, adapter: request.adapter, services: request.services, labels: request.labels });
    const expiresAtMs = Date.now() + screening.decision.ttlSeconds * 1000;
    const ready: PhaseNamed<'ready'> = { name: 'ready', screening, runtime: handle, expiresAtMs, expiringRecorded: false };
    return await ctx.enter(ready, readyDetails(ready), {
      action: 'ready',
      actor: 'worker',
      effect: 'ready',
      summary: { endpoint: handle.endpoint, runtimeIds: handle.runtimeIds, expiresAt: iso(expiresAtMs) },
    });
  } catch (err) {
    if (isCancellation(err)) throw err;
    const error = failureCode(err, 'PROVISION_FAILED');
    const leftovers = await compensate(ctx);
    const teardown = leftovers.length === 0 ? 'Whatever was created was torn down.' : `Teardown left ${leftovers.join(', ')}; the cleanup sweep will find it.`;
    return ctx.enter(ended('FAILED', { screening, error }), `Provisioning failed (${error.code}): ${error.message}. ${teardown}`, {
      action: 'provision_failed',
      actor: 'worker',
      effect: 'failed',
      reason: error.message,
      summary: { code: error.code, leftovers },
    });
  }
}

/** Best effort after a failed provision (the adapter's destroy is idempotent); returns what stayed. */
async function compensate(ctx: LifecycleContext): Promise<string[]> {
  const { request } = ctx.record;
  try {
    return [...(await runtime.destroySandbox({ sandboxId: request.id, adapter: request.adapter })).remaining];
  } catch (err) {
    const failure = failureCode(err, 'DESTROY_FAILED');
    log.error('compensation after a failed provision failed; the sweep will find the leftovers', { error: failure });
    return [`unknown (teardown failed: ${failure.message})`];
  }
}

/** READY: lasts until the TTL timer fires (which `extend` moves) or `destroy` is asked; warns once before expiry. */
export async function ready(ctx: LifecycleContext): Promise<Phase> {
  let ending: { reason: string; actor: string };
  try {
    ending = await untilExpiryOrDestroy(ctx);
  } catch (err) {
    if (isCancellation(err)) throw err;
    // Something provisioned must never outlive its workflow: tear down whatever went wrong.
    ending = { reason: `unexpected failure while READY: ${failureCode(err, 'INTERNAL').message}`, actor: 'worker' };
  }
  const phase = ctx.phase as PhaseNamed<'ready'>;
  // Shown, not yet recorded: teardown never waits on the projection (DESIGN §2).
  return ctx.adopt(
    { name: 'ending', screening: phase.screening, runtime: phase.runtime, expiresAtMs: phase.expiresAtMs, ...ending },
    `Tearing down (${ending.reason}).`,
  );
}

async function untilExpiryOrDestroy(ctx: LifecycleContext): Promise<{ reason: string; actor: string }> {
  for (;;) {
    if (ctx.destroyRequest !== undefined) return ctx.destroyRequest;
    // Read afresh each time: `extend` replaces the phase with a later expiry.
    const phase = ctx.phase as PhaseNamed<'ready'>;
    const now = Date.now();
    const expiry = phase.expiresAtMs;
    if (now >= expiry) return { reason: 'TTL expired', actor: 'timer' };
    const warnAt = expiry - phase.screening.settings.expiryWarningSeconds * 1000;
    if (!phase.expiringRecorded && now >= warnAt) {
      const warned = { ...phase, expiringRecorded: true };
      ctx.revise(warned, `${readyDetails(warned)} Expiring: ${Math.round((expiry - now) / 1000)} s left.`);
      await ctx.audit({ action: 'expiring', actor: 'timer', effect: 'warning', reason: `expires at ${iso(expiry)}`, summary: { expiresAt: iso(expiry) } });
      continue;
    }
    const wakeAt = phase.expiringRecorded ? expiry : Math.min(warnAt, expiry);
    await condition(() => ctx.destroyRequest !== undefined || ctx.phase !== phase, Math.max(1, wakeAt - now));
  }
}

/** DESTROYING: the runtime goes first, then the audit rows; DESTROYED, or DESTROY_FAILED with the leak recorded for the sweep. */
export async function ending(ctx: LifecycleContext, phase: PhaseNamed<'ending'>): Promise<Phase> {
  const { request } = ctx.record;
  const { screening, runtime: handle, expiresAtMs, reason, actor } = phase;
  const destroying = { action: 'destroying', actor, effect: 'destroy', reason };
  let error: LifecycleError;
  try {
    const report = await runtime.destroySandbox({ sandboxId: request.id, adapter: request.adapter, runtime: handle });
    if (report.remaining.length === 0) {
      return await ctx.enter({ name: 'ended', state: 'DESTROYED', screening, runtime: handle, expiresAtMs, error: null }, `Destroyed (${reason}).`, [
        destroying,
        { action: 'destroyed', actor: 'worker', effect: 'destroyed', summary: { removed: report.removed } },
      ]);
    }
    error = { code: 'DESTROY_FAILED', message: `still present after teardown: ${report.remaining.join(', ')}` };
  } catch (err) {
    if (isCancellation(err)) throw err;
    error = failureCode(err, 'DESTROY_FAILED');
  }
  return ctx.enter(
    { name: 'ended', state: 'DESTROY_FAILED', screening, runtime: handle, expiresAtMs, error },
    `Teardown failed (${error.code}): ${error.message}. The leak is recorded; the cleanup sweep retries it.`,
    [destroying, { action: 'destroy_failed', actor: 'worker', effect: 'failed', reason: error.message, summary: { code: error.code } }],
  );
}

/** Who ends a sandbox through Temporal's own cancellation (the UI's "Request Cancellation"). */
export const CANCELLATION_ACTOR = 'temporal-cancellation';

/**
 * The run was cancelled: whatever the phase, end in a correct state with nothing left
 * behind. Runs in a non-cancellable scope (the caller's), so teardown is not itself
 * cancelled; nothing provisioned yet means nothing to tear down.
 */
export async function cancelled(ctx: LifecycleContext): Promise<Phase> {
  const phase = ctx.phase;
  const reason = 'the workflow was cancelled (Temporal UI "Request Cancellation" or `temporal workflow cancel`)';
  switch (phase.name) {
    case 'ended':
      return phase;
    case 'requested':
    case 'awaiting_approval':
      return withdraw(ctx, phase.name === 'requested' ? null : phase.screening, { reason, actor: CANCELLATION_ACTOR }, 'by cancellation');
    case 'provisioning':
      return ending(ctx, ctx.adopt({ name: 'ending', screening: phase.screening, runtime: null, expiresAtMs: null, reason, actor: CANCELLATION_ACTOR }, `Tearing down (${reason}).`));
    case 'ready':
      return ending(ctx, ctx.adopt({ ...phase, name: 'ending', reason, actor: CANCELLATION_ACTOR }, `Tearing down (${reason}).`));
    case 'ending':
      // Teardown was under way: run it again (destroy is idempotent) under the cancellation.
      return ending(ctx, phase);
  }
}
