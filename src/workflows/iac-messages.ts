import { defineQuery, defineSignal, defineUpdate, getExternalWorkflowHandle, log } from '@temporalio/workflow';
import { IAC_MESSAGES, iacWorkflowIdFor } from '../domain/contract-names';
import type { IacApprovalPayload, IacAwaitPayload, IacClaimAnswer, IacDecidePayload, IacStackClaim, IacStatus } from '../domain/iac/iac-run';

export { IAC_RUN_WORKFLOW } from '../domain/contract-names';

/** Signals for people in the Temporal UI; the payload is checked inside the run. */
export const iacApproveSignal = defineSignal<[IacApprovalPayload]>(IAC_MESSAGES.approveSignal);
export const iacDenySignal = defineSignal<[IacApprovalPayload]>(IAC_MESSAGES.denySignal);

/** Waits inside the run until it is planned or ended; `iac plan|apply` send it with the start. */
export const iacAwaitUpdate = defineUpdate<IacStatus, [IacAwaitPayload]>(IAC_MESSAGES.awaitUpdate);

/** Approve or deny from a program: judged like the signals, and the verdict is the result. */
export const iacDecideUpdate = defineUpdate<IacStatus, [IacDecidePayload]>(IAC_MESSAGES.decideUpdate);

export const iacStatusQuery = defineQuery<IacStatus>(IAC_MESSAGES.statusQuery);

/** Between a run and its sandbox's lifecycle: whose turn it is to change a stack. */
export const claimStackSignal = defineSignal<[IacStackClaim]>(IAC_MESSAGES.claimStackSignal);
export const releaseStackSignal = defineSignal<[{ runId: string; stack: string }]>(IAC_MESSAGES.releaseStackSignal);
export const stackAnswerSignal = defineSignal<[IacClaimAnswer]>(IAC_MESSAGES.stackAnswerSignal);

/**
 * Tells a run the keeper's answer to its claim (a lifecycle, or a target's turns). A run
 * that is gone is not told; `onGone` then gives its turn on rather than waiting for its lease.
 */
export function tellRun(claim: IacStackClaim, message: IacClaimAnswer, onGone?: () => void): void {
  getExternalWorkflowHandle(iacWorkflowIdFor(claim.runId))
    .signal(stackAnswerSignal, message)
    .catch((err: unknown) => {
      log.info('IaC run not told: it has ended', { runId: claim.runId, answer: message.answer, error: String(err) });
      onGone?.();
    });
}
