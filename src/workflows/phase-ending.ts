import { isCancellation } from '@temporalio/workflow';
import type { EndState, LifecycleError, Phase, PhaseNamed, Screening } from '../domain/lifecycle-record';
import type { DestroyRequest, LifecycleContext } from './lifecycle-context';
import { failureCode } from './workflow-failures';
import { usageSummary } from './usage-meter';

/** How a sandbox that never ran ends: no runtime, no expiry (teardown keeps its own). */
export function ended(state: EndState, from: { screening?: Screening | null; error?: LifecycleError | null } = {}): PhaseNamed<'ended'> {
  return { name: 'ended', state, screening: from.screening ?? null, runtime: null, expiresAtMs: null, error: from.error ?? null };
}

/** Ends a sandbox with nothing running (before anything was provisioned, or paused): DESTROYED, recorded as `withdrawn`. */
export function withdraw(ctx: LifecycleContext, screening: Screening | null, by: DestroyRequest, when: string, after = 'Nothing was provisioned.'): Promise<Phase> {
  return ctx.enter(ended('DESTROYED', { screening }), `Withdrawn ${when} (${by.reason}). ${after}`, {
    action: 'withdrawn',
    actor: by.actor,
    effect: 'destroyed',
    reason: by.reason,
  });
}

/**
 * DESTROYING: the runtime goes first, then the audit rows; DESTROYED (FAILED when the
 * sandbox ends because something failed), or DESTROY_FAILED with the leak recorded for the sweep.
 */
export async function ending(ctx: LifecycleContext, phase: PhaseNamed<'ending'>): Promise<Phase> {
  const { request } = ctx.record;
  const { screening, runtime: handle, expiresAtMs, reason, actor, failure } = phase;
  const destroying = { action: 'destroying', actor, effect: 'destroy', reason };
  let error: LifecycleError;
  try {
    const report = await ctx.runtime.destroySandbox({ sandboxId: request.id, adapter: request.adapter, runtime: handle });
    if (report.remaining.length === 0) {
      const outcome = failure === undefined ? `Destroyed (${reason}).` : `Failed (${failure.code}): ${failure.message}. Everything was torn down.`;
      return await ctx.enter({ name: 'ended', state: failure === undefined ? 'DESTROYED' : 'FAILED', screening, runtime: handle, expiresAtMs, error: failure ?? null }, outcome, [
        destroying,
        // With the reads teardown took just before the containers went: the store ends the live stretch with them (DESIGN §19).
        { action: 'destroyed', actor: 'worker', effect: 'destroyed', summary: { removed: report.removed, ...usageSummary(report.usage) } },
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
      // Not placed yet: nothing can have been provisioned anywhere.
      if (!ctx.mayHoldRuntime) return withdraw(ctx, phase.screening, { reason, actor: CANCELLATION_ACTOR }, 'by cancellation');
      return ending(ctx, ctx.adopt({ name: 'ending', screening: phase.screening, runtime: null, expiresAtMs: null, reason, actor: CANCELLATION_ACTOR }, `Tearing down (${reason}).`));
    case 'ready':
      return ending(ctx, ctx.adopt({ ...phase, name: 'ending', reason, actor: CANCELLATION_ACTOR }, `Tearing down (${reason}).`));
    case 'paused':
      // No container runs: nothing to tear down.
      return withdraw(ctx, phase.screening, { reason, actor: CANCELLATION_ACTOR }, 'while paused', `No container ran; snapshot ${phase.snapshotId} is kept.`);
    case 'ending':
      // Teardown was under way: run it again (destroy is idempotent) under the cancellation.
      return ending(ctx, phase);
  }
}
