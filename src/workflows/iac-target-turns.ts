import { allHandlersFinished, condition, continueAsNew, log, setHandler, workflowInfo } from '@temporalio/workflow';
import { iacStackClaimSchema, type IacStackClaim } from '../domain/iac/iac-run';
import { claimStackSignal, releaseStackSignal, tellRun } from './iac-messages';
import { IacStackLocks, type CarriedIacLocks } from './iac-stack-locks';

export interface IacTargetTurnsInput {
  readonly target: string;
  /** Set only by the workflow itself when it continues as new. */
  readonly carried?: CarriedIacLocks;
}

/** With nothing held or waited for this long, the keeper ends; the next claim starts a new one. */
const IDLE_MS = 10 * 60_000;
const HISTORY_EVENTS_BEFORE_CONTINUE = 2_000;

/**
 * The turns of one target's stacks (DESIGN §14: one run at a time changes a given stack
 * of a given target), as a sandbox's lifecycle keeps its own: runs claim with a signal
 * (the first one starts this workflow, signal-with-start), hear granted, queued or
 * refused, and give the stack back when they end.
 */
export async function iacTargetTurns(input: IacTargetTurnsInput): Promise<void> {
  const locks = new IacStackLocks(input.carried ?? []);
  const grant = (claim: IacStackClaim): void =>
    tellRun(claim, { answer: 'granted' }, () => {
      const next = locks.release(claim.runId, claim.stack, Date.now());
      if (next !== undefined) grant(next);
    });

  setHandler(claimStackSignal, (payload) => {
    const parsed = iacStackClaimSchema.safeParse(payload);
    if (!parsed.success) {
      log.warn('malformed stack claim ignored');
      return;
    }
    const claim = parsed.data;
    const outcome = locks.claim(claim, Date.now());
    if ('full' in outcome)
      tellRun(claim, { answer: 'refused', code: 'RATE_LIMITED', message: `too many IaC runs wait for one stack of target ${input.target}; try again once some have ended` });
    else if (outcome.granted) grant(claim);
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
    const woken = await condition(() => locks.busy || long(), IDLE_MS);
    if (!woken && !locks.busy) break;
    if (locks.busy) await condition(() => !locks.busy || long());
    if (long()) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof iacTargetTurns>({ target: input.target, carried: locks.carried() });
    }
  }
  await condition(allHandlersFinished);
}
