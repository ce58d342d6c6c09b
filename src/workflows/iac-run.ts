import { ActivityFailure, allHandlersFinished, CancellationScope, condition, isCancellation, TimeoutFailure, workflowInfo } from '@temporalio/workflow';
import { iacWorkflowIdFor } from '../domain/contract-names';
import type { ErrorCode } from '../domain/error-codes';
import { isSandboxPlaneError } from '../domain/errors';
import { iacRunInputSchema, type AdmittedIacRun, type IacStatus } from '../domain/iac/iac-run';
import { sealingProblems } from '../domain/iac/sealed-parameters';
import { validateTemplate } from '../domain/iac/template';
import { describeIssues } from '../domain/validation';
import { awaitingApproval } from './iac-phase-approval';
import { applying, cancelledRun } from './iac-phase-applying';
import { planning } from './iac-phase-planning';
import { screening } from './iac-phase-screening';
import type { IacPhase } from './iac-phases';
import { IacRefused } from './iac-refusal';
import { IacRunContext } from './iac-run-context';
import { registerIacRunHandlers } from './iac-run-handlers';
import type { Granted } from './iac-stack-turn';
import { STEP_PICKUP } from './iac-steps';
import { failureCode } from './workflow-failures';

/**
 * One infrastructure-as-code change of one stack, in a sandbox or promoted to an
 * operator's target (DESIGN §14); each phase is one function that returns the next, so
 * the loop below is the diagram:
 *
 *   screening ─▶ planning ─▶ PLANNED                              (iac plan)
 *                   └──────▶ awaiting_approval ─▶ applying ─▶ APPLIED | FAILED
 *                   └──────────────────────────────┘  └─▶ DENIED | EXPIRED
 *
 * The plan is the plane's own, cross-checked with the place's change set; an approval
 * names its digest; the apply is checked through each service's own API. A target's run
 * needs a sandbox proof (the same template APPLIED in a sandbox of the same principal),
 * and always people: two different ones for production.
 */
export async function iacRun(input: unknown): Promise<IacStatus> {
  const admitted = admit(input);
  const ctx = new IacRunContext(input, admitted.run, admitted.problem);
  registerIacRunHandlers(ctx);
  try {
    if (admitted.run !== undefined) await proceed(ctx);
  } catch (err) {
    if (!isCancellation(err)) throw err;
    await CancellationScope.nonCancellable(() => cancelledRun(ctx));
  } finally {
    // The stack's turn (or the run's place in line) goes back to its keeper, whatever happened.
    await CancellationScope.nonCancellable(async () => ctx.place.turn?.release());
  }
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  return ctx.status();
}

/** The run's input checked as every caller's is (the workflow id is the run id's); a refused input ends the run FAILED at once. */
function admit(input: unknown): { run?: AdmittedIacRun; problem?: string } {
  const parsed = iacRunInputSchema.safeParse(input);
  if (!parsed.success) return { problem: describeIssues(parsed.error.issues) };
  const { workflowId } = workflowInfo();
  if (iacWorkflowIdFor(parsed.data.runId) !== workflowId) return { problem: `runId: must match the workflow id (${workflowId}), got '${parsed.data.runId}'` };
  try {
    validateTemplate(parsed.data.template, parsed.data.parameters);
  } catch (err) {
    return { problem: isSandboxPlaneError(err) ? err.message : String(err) };
  }
  const sealing = sealingProblems(parsed.data.template, parsed.data.parameters);
  if (sealing.length > 0) return { problem: `parameters: ${sealing.join('; ')}` };
  return { run: parsed.data };
}

/** The phases in turn; a refusal or failure the run decides ends it in its state, anything else FAILED with its code. */
async function proceed(ctx: IacRunContext): Promise<void> {
  try {
    let phase: IacPhase = { name: 'screening' };
    while (phase.name !== 'ended') {
      switch (phase.name) {
        case 'screening':
          phase = await screening(ctx);
          break;
        case 'planning':
          phase = await planning(ctx, phase);
          break;
        case 'awaiting_approval':
          phase = await awaitingApproval(ctx, phase);
          break;
        case 'applying':
          phase = await applying(ctx);
          break;
      }
    }
  } catch (err) {
    if (err instanceof IacRefused) {
      ctx.shown.error = { code: err.code, message: err.message };
      await ctx.audit(`iac_${err.state.toLowerCase()}`, 'plane', err.state.toLowerCase(), err.message, { code: err.code });
      ctx.enter(err.state, `${err.state === 'DENIED' ? 'Refused' : 'Failed'} (${err.code}): ${err.message}`);
      return;
    }
    if (isCancellation(err)) throw err;
    const error = noWorkerFor(err, ctx.place.granted) ?? failureCode(err, 'INTERNAL');
    ctx.shown.error = error;
    await ctx.audit('iac_failed', 'plane', 'failed', error.message, { code: error.code });
    ctx.enter('FAILED', `Failed (${error.code}): ${error.message}`);
  }
}

/** A step nobody picked up: no worker serves the queue of the run's sandbox host or of targets, said so with what to start. */
function noWorkerFor(err: unknown, granted: Granted | undefined): { code: ErrorCode; message: string } | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof TimeoutFailure) || cause.timeoutType !== 'SCHEDULE_TO_START' || granted === undefined) return undefined;
  const start = granted.place.kind === 'target' ? "`sandboxctl worker --role targets`, where the targets' AWS profiles are" : "the docker worker of the sandbox's host";
  return { code: 'PROVISION_UNAVAILABLE', message: `no worker took the step from ${granted.taskQueue} within ${STEP_PICKUP}: start ${start}` };
}
