import { isCancellation } from '@temporalio/workflow';
import { formatDuration } from '../domain/duration';
import type { Placement } from '../domain/hosts';
import { snapshotOf, type Phase, type Screening } from '../domain/lifecycle-record';
import type { PolicyEffect } from '../domain/policy';
import type { SandboxState } from '../domain/sandbox-states';
import { iso } from './iso-time';
import type { LifecycleContext } from './lifecycle-context';
import { APPROVAL_EXAMPLE } from './phase-awaiting-approval';
import { ended } from './phase-ending';
import { placedOperation, provisioningOn } from './phase-provisioning';
import { failureCode } from './workflow-failures';

/** The state screening leads to, by the policy's effect; the screening activity records it. */
const STATE_AFTER_SCREENING: Readonly<Record<PolicyEffect, SandboxState>> = {
  deny: 'DENIED',
  require_approval: 'AWAITING_APPROVAL',
  allow: 'PROVISIONING',
};

/**
 * REQUESTED: recorded and screened in one projection transaction (nothing has touched a
 * runtime yet); the verdict chooses the next phase.
 */
export async function requested(ctx: LifecycleContext): Promise<Phase> {
  const { request } = ctx.record;
  let screening: Screening;
  let placement: Placement | undefined;
  try {
    ({ placement, ...screening } = await ctx.projection.screenNewRequest({
      snapshot: snapshotOf(ctx.record),
      request,
      requested: ctx.journal.numbered({
        action: 'requested',
        actor: request.principal,
        effect: 'requested',
        reason: request.purpose ?? null,
        summary: { services: request.services, adapter: request.adapter, capability: request.capability },
      }),
      step: ctx.journal.nextStep(),
      nextStates: STATE_AFTER_SCREENING,
      // An allowed sandbox is placed in the same transaction when a host has room; else provisioning places it.
      placement: { adapter: request.adapter, operation: ctx.journal.numberedAhead(placedOperation(request.adapter)) },
    }));
  } catch (err) {
    if (isCancellation(err)) throw err;
    // The projection refuses a reused id (IDEMPOTENCY_CONFLICT), or stayed down past its
    // retries (STORE_UNAVAILABLE: quota cannot be judged): end here, having touched nothing.
    const error = failureCode(err, 'STORE_UNAVAILABLE');
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
        `The approver must be on the approvers list, must not be ${request.principal}, and gives the code their authenticator shows now.`,
    );
  }
  if (placement === undefined) return ctx.adopt({ name: 'provisioning', screening }, `Provisioning through the ${request.adapter} adapter.`);
  ctx.journal.nextStep(); // the `placed` row the screening wrote
  return ctx.adopt({ name: 'provisioning', screening }, provisioningOn(placement, request.adapter), placement);
}
