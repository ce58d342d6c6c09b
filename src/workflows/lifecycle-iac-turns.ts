import { log, setHandler } from '@temporalio/workflow';
import { iacStackClaimSchema, type IacStackClaim } from '../domain/iac/iac-run';
import { stateOf } from '../domain/lifecycle-record';
import { claimStackSignal, releaseStackSignal, tellRun } from './iac-messages';
import { WAITING_PER_PRINCIPAL, type Handover } from './iac-stack-locks';
import type { LifecycleContext } from './lifecycle-context';

/**
 * The lifecycle's side of IaC runs (DESIGN §14): it is the authority on its sandbox, so
 * it says whether the caller may change it at all (same principal, READY) and whose turn
 * each stack is. Answers go back to the run as a signal; a run that is gone when told
 * it holds the stack gives its turn straight on.
 */
export function registerIacTurns(ctx: LifecycleContext): void {
  setHandler(claimStackSignal, (payload) => {
    const parsed = iacStackClaimSchema.safeParse(payload);
    if (!parsed.success) {
      log.warn('malformed stack claim ignored');
      return;
    }
    const claim = parsed.data;
    const { request } = ctx.record;
    // Another principal's run hears what it would of a sandbox that does not exist.
    if (claim.principal !== request.principal) return tellRun(claim, { answer: 'refused', code: 'NOT_FOUND', message: `no sandbox ${request.id}` });
    const phase = ctx.judgedPhase;
    if (phase.name !== 'ready' || ctx.destroyRequest !== undefined) {
      return tellRun(claim, {
        answer: 'refused',
        code: 'INVALID_STATE',
        message: `sandbox ${request.id} is ${stateOf(phase)}; infrastructure is planned and applied only in a READY sandbox`,
      });
    }
    // A snapshot, restore or pause under way: an apply would be half in it, or undone under it.
    const busy = ctx.stateChange ?? (ctx.pauseRequest !== undefined ? 'pause' : undefined);
    if (busy !== undefined) {
      return tellRun(claim, { answer: 'refused', code: 'INVALID_STATE', message: `sandbox ${request.id} is busy with a ${busy}; plan or apply again when it is done` });
    }
    // The plane applies as itself: a template may touch only what the sandbox was granted, as its own key may.
    const ungranted = claim.services.filter((service) => service !== 'cloudformation' && !request.services.includes(service));
    if (ungranted.length > 0) {
      return tellRun(claim, {
        answer: 'refused',
        code: 'SERVICE_NOT_ALLOWED',
        message: `the template touches ${ungranted.join(', ')}, which sandbox ${request.id} was not granted (it has ${request.services.join(', ')}); create a sandbox with those services`,
      });
    }
    const outcome = ctx.iacLocks.claim(claim, Date.now());
    if ('full' in outcome) {
      const message =
        outcome.principal === true
          ? `${claim.principal} already has ${WAITING_PER_PRINCIPAL} IaC runs holding or waiting for stack ${claim.stack} of sandbox ${request.id}; try again once one has ended`
          : `too many IaC runs wait for one stack of sandbox ${request.id}; try again once some have ended`;
      return tellRun(claim, { answer: 'refused', code: 'RATE_LIMITED', message });
    }
    if (outcome.handover !== undefined) handOver(ctx, outcome.handover, claim.runId);
    if (outcome.granted) return grant(ctx, claim);
    return tellRun(claim, { answer: 'queued', behind: outcome.behind.runId, leaseUntilMs: outcome.behind.leaseUntilMs });
  });

  setHandler(releaseStackSignal, (payload) => {
    const { runId, stack } = payload ?? ({} as { runId?: unknown; stack?: unknown });
    if (typeof runId !== 'string' || typeof stack !== 'string') return;
    const next = ctx.iacLocks.release(runId, stack, Date.now());
    if (next !== undefined) grant(ctx, next);
  });
}

/** Tells a holder whose lease ran out that it lost the stack, and the next holder (unless it is `claimant`, told by its own claim) that it has it. */
function handOver(ctx: LifecycleContext, handover: Handover, claimant: string): void {
  tellRun(handover.passedOver, { answer: 'refused', code: 'INVALID_STATE', message: `the turn of stack ${handover.passedOver.stack} ran out; the change was not made` });
  if (handover.next !== undefined && handover.next.runId !== claimant) grant(ctx, handover.next);
}

/** Tells every run that holds or waits for a stack that the sandbox is no longer READY. */
export function endIacTurns(ctx: LifecycleContext): void {
  for (const claim of ctx.iacLocks.drain()) {
    tellRun(claim, { answer: 'refused', code: 'INVALID_STATE', message: `sandbox ${ctx.record.request.id} is ${stateOf(ctx.phase)}; the change was not made` });
  }
}

function grant(ctx: LifecycleContext, claim: IacStackClaim): void {
  const { record } = ctx;
  const phase = record.phase;
  const host = record.host;
  if (phase.name !== 'ready' || host === undefined || host === null) {
    tellRun(claim, { answer: 'refused', code: 'INVALID_STATE', message: `sandbox ${record.request.id} is ${stateOf(phase)}` });
    return;
  }
  const { runtimeIds, engineId } = phase.runtime;
  tellRun(
    claim,
    {
      answer: 'granted',
      sandbox: {
        adapter: record.request.adapter,
        placement: { hostId: host.hostId, taskQueue: host.taskQueue },
        runtime: { runtimeIds: [...runtimeIds], ...(engineId === undefined ? {} : { engineId }) },
      },
    },
    () => {
      // The run is gone (terminated, timed out): its turn passes on rather than waiting for its lease.
      const next = ctx.iacLocks.release(claim.runId, claim.stack, Date.now());
      if (next !== undefined) grant(ctx, next);
    },
  );
}
