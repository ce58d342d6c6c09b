import { allHandlersFinished, condition, continueAsNew, log, setHandler, workflowInfo } from '@temporalio/workflow';
import { z } from 'zod';
import { iacStackClaimSchema, type IacStackClaim } from '../domain/iac/iac-run';
import { targetNameSchema } from '../domain/targets';
import { claimStackSignal, releaseStackSignal, tellRun } from './iac-messages';
import { IacStackLocks, WAITING_PER_PRINCIPAL, type CarriedIacLocks, type Handover } from './iac-stack-locks';

export interface IacTargetTurnsInput {
  readonly target: string;
  /** Set only by the workflow itself when it continues as new. */
  readonly carried?: CarriedIacLocks;
}

/** Checked like any workflow input: a keeper started by hand with a bad one ends at once, not failing its tasks for ever. */
const inputSchema = z.object({
  target: targetNameSchema,
  carried: z.array(z.object({ stack: z.string(), holder: iacStackClaimSchema.extend({ leaseUntilMs: z.number().int() }), waiting: z.array(iacStackClaimSchema) })).optional(),
});

/** With nothing held or waited for this long, the keeper ends; the next claim starts a new one. */
const IDLE_MS = 10 * 60_000;
const HISTORY_EVENTS_BEFORE_CONTINUE = 2_000;

/**
 * The turns of one target's stacks (DESIGN §14: one run at a time changes a given stack
 * of a given target), as a sandbox's lifecycle keeps its own: runs claim with a signal
 * (the first one starts this workflow, signal-with-start), hear granted, queued or
 * refused, and give the stack back when they end. A holder whose lease runs out (its run
 * terminated) is passed over on a timer, so a dead run never keeps a stack.
 */
export async function iacTargetTurns(input: unknown): Promise<void> {
  const parsed = inputSchema.safeParse(input);
  if (!parsed.success) {
    log.error('iacTargetTurns started with a bad input; ending', { input: JSON.stringify(input)?.slice(0, 500) });
    return;
  }
  const { target } = parsed.data;
  const locks = new IacStackLocks(parsed.data.carried ?? []);
  const grant = (claim: IacStackClaim): void =>
    tellRun(claim, { answer: 'granted' }, () => {
      const next = locks.release(claim.runId, claim.stack, Date.now());
      if (next !== undefined) grant(next);
    });
  const handOver = (handover: Handover, claimant?: string): void => {
    tellRun(handover.passedOver, {
      answer: 'refused',
      code: 'INVALID_STATE',
      message: `the turn of stack ${handover.passedOver.stack} of target ${target} ran out; the change was not made`,
    });
    if (handover.next !== undefined && handover.next.runId !== claimant) grant(handover.next);
  };

  setHandler(claimStackSignal, (payload) => {
    const claimed = iacStackClaimSchema.safeParse(payload);
    if (!claimed.success) {
      log.warn('malformed stack claim ignored');
      return;
    }
    const claim = claimed.data;
    const outcome = locks.claim(claim, Date.now());
    if ('full' in outcome) {
      const message =
        outcome.principal === true
          ? `${claim.principal} already has ${WAITING_PER_PRINCIPAL} IaC runs holding or waiting for stack ${claim.stack} of target ${target}; try again once one has ended`
          : `too many IaC runs wait for one stack of target ${target}; try again once some have ended`;
      tellRun(claim, { answer: 'refused', code: 'RATE_LIMITED', message });
      return;
    }
    if (outcome.handover !== undefined) handOver(outcome.handover, claim.runId);
    if (outcome.granted) grant(claim);
    else tellRun(claim, { answer: 'queued', behind: outcome.behind.runId, leaseUntilMs: outcome.behind.leaseUntilMs });
  });
  setHandler(releaseStackSignal, (payload) => {
    const { runId, stack } = payload ?? ({} as { runId?: unknown; stack?: unknown });
    if (typeof runId !== 'string' || typeof stack !== 'string') return;
    const next = locks.release(runId, stack, Date.now());
    if (next !== undefined) grant(next);
  });

  const long = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= HISTORY_EVENTS_BEFORE_CONTINUE;
  for (;;) {
    const expiry = locks.nextExpiryMs;
    const wait = expiry === undefined ? IDLE_MS : Math.max(1_000, expiry - Date.now());
    const woken = await condition(() => long() || locks.nextExpiryMs !== expiry, wait);
    for (const handover of locks.expire(Date.now())) handOver(handover);
    if (long()) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof iacTargetTurns>({ target, carried: locks.carried() });
    }
    // Idle for the whole wait, and still: a claim that arrives as it ends is delivered to a new run by the server.
    if (!woken && !locks.busy) break;
  }
  await condition(allHandlersFinished);
}
