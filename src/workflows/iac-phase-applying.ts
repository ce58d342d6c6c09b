import { isCancellation, log } from '@temporalio/workflow';
import type { AppliedChange } from '../activities';
import { isIacTerminal, type IacResourceRow, type ShownPlan } from '../domain/iac/iac-run';
import { templateDigest } from '../domain/iac/plan';
import { IacCheckpoint } from './iac-checkpoint';
import { findProof } from './iac-phase-screening';
import type { IacPhase } from './iac-phases';
import { IacRefused } from './iac-refusal';
import type { IacRunContext } from './iac-run-context';
import { executeStep, planningSteps, settleStep } from './iac-steps';
import { failureCode } from './workflow-failures';

/** Resource statuses a sandbox proof accepts: every supported resource checked through its service, nothing left standing. */
const PROVEN_STATUSES: ReadonlySet<IacResourceRow['status']> = new Set(['VERIFIED', 'REMOVED', 'NOT_CREATED']);

/** APPLYING: the approved plan, planned again against the stack as it is now, executed once, waited for and checked. */
export async function applying(ctx: IacRunContext): Promise<IacPhase> {
  const run = ctx.run;
  const granted = ctx.granted;
  const approved = (ctx.shown.plan as ShownPlan).digest;
  const leftBehind =
    granted.place.kind === 'sandbox'
      ? ' The sandbox is checkpointed first, so that a failed apply can be undone.'
      : ' A failed apply is rolled back by CloudFormation as it does; what the stack then holds is listed here.';
  ctx.enter('APPLYING', `Applying plan ${approved} to stack ${run.stack} in ${ctx.whereText}.${leftBehind}`);
  // Before the change set is made: put back, the sandbox holds neither it nor a new stack's shell.
  if (granted.place.kind === 'sandbox') await takeCheckpoint(ctx, new IacCheckpoint(granted.place, granted.taskQueue));
  const steps = planningSteps(granted.taskQueue);
  const prepared = await steps.prepareIacApply(ctx.changeRequest());
  if (prepared.plan.digest !== approved) {
    await steps.discardIacApply({ place: granted.place, runId: run.runId, stack: run.stack });
    ctx.shown.plan = prepared.plan;
    throw new IacRefused('FAILED', 'PLAN_STALE', `stack ${run.stack} changed since the plan was approved (plan ${approved}, now ${prepared.plan.digest}); nothing was applied: plan again`);
  }
  ctx.apply.removed = prepared.removed;
  ctx.apply.preexisting = prepared.preexisting;
  // The proof must still hold when the change is made, not only when it was asked for.
  if (ctx.place.target !== undefined) await findProof(ctx);
  const lost = ctx.place.turn?.ended;
  if (lost !== undefined) {
    await steps.discardIacApply({ place: granted.place, runId: run.runId, stack: run.stack });
    throw new IacRefused('FAILED', lost.code, `${lost.message}; nothing was applied`);
  }
  ctx.apply.started = true;
  ctx.apply.startedAt = new Date().toISOString();
  let executionError: string | null = null;
  try {
    // The place made no change set when nothing changes (moto): the stack is checked all the same.
    const executed = prepared.executable === false ? undefined : await executeStep(granted.taskQueue).executeIacChange({ place: granted.place, runId: run.runId, stack: run.stack });
    if (executed?.outcome === 'failed') executionError = executed.error;
  } catch (err) {
    if (isCancellation(err)) throw err;
    // Whether it ran is unknown: the stack is waited for and checked as if it had, and says.
    log.warn("the change set's execution did not answer; waiting for the stack", { error: failureCode(err, 'INTERNAL').message });
  }
  await settle(ctx, executionError);
  return { name: 'ended' };
}

/** The sandbox's state before the apply (DESIGN §14, §15): recorded in its trail, and said in the run's details. */
async function takeCheckpoint(ctx: IacRunContext, checkpoint: IacCheckpoint): Promise<void> {
  ctx.apply.checkpoint = checkpoint;
  const taken = await checkpoint.take();
  if (taken !== undefined) await ctx.audit('iac_checkpoint', 'plane', 'snapshot', null, taken);
  ctx.tell(`${ctx.shown.waitingFor.replace(/ The sandbox is checkpointed first.*$/, '')} ${checkpoint.promise}`);
}

/** Waits for the stack, checks it, and gives the verdict: APPLIED only when the stack holds what the plan said. */
async function settle(ctx: IacRunContext, executionError: string | null, note = ''): Promise<void> {
  const run = ctx.run;
  const outcome: AppliedChange = await settleStep(ctx.granted.taskQueue).settleIacChange({
    ...ctx.changeRequest(),
    removed: ctx.apply.removed,
    preexisting: ctx.apply.preexisting,
    executionError,
    sinceIso: ctx.apply.startedAt,
  });
  ctx.shown.resources = outcome.resources;
  ctx.shown.events = outcome.events;
  const summary = {
    stackStatus: outcome.stackStatus,
    resources: outcome.resources.map((row) => `${row.logicalId}:${row.status}`),
    // What a promotion's proof is looked up by (see findProof).
    principal: run.principal,
    templateDigest: templateDigest(run.template, run.parameters),
    // A template the sandbox could not make any of proves nothing.
    allVerified: outcome.ok && outcome.resources.some((row) => row.status === 'VERIFIED') && outcome.resources.every((row) => PROVEN_STATUSES.has(row.status)),
  };
  if (outcome.ok) {
    await ctx.audit('iac_applied', 'plane', 'applied', null, summary);
    ctx.enter('APPLIED', `${note ? `${note} ` : ''}Applied to stack ${run.stack}: ${describeRows(outcome.resources)}.`);
    return;
  }
  ctx.shown.error = { code: 'IAC_APPLY_FAILED', message: outcome.problems.join('; ') };
  await ctx.audit('iac_failed', 'plane', 'failed', ctx.shown.error.message, summary);
  const undone = await ctx.apply.checkpoint?.putBack();
  if (undone?.restored === true) await ctx.audit('iac_rolled_back', 'plane', 'restored', null, { stack: run.stack });
  ctx.enter('FAILED', `${note ? `${note} ` : ''}Failed: ${ctx.shown.error.message}. ${undone?.note ?? 'What the stack holds is in resources.'}`);
}

/** A cancelled run ends with a verdict: after the apply began, what the stack holds is checked first. */
export async function cancelledRun(ctx: IacRunContext): Promise<void> {
  ctx.approvals.inbox.closeWith('the run was cancelled');
  if (ctx.admitted === undefined || isIacTerminal(ctx.shown.state)) return;
  if (ctx.apply.started && ctx.place.granted !== undefined) {
    try {
      // A change set once executed runs to its end: the run waits for it, and says what it made.
      await settle(ctx, null, 'The run was cancelled during the apply, too late to stop it.');
      return;
    } catch (err) {
      ctx.shown.error = failureCode(err, 'INTERNAL');
    }
  }
  ctx.shown.error ??= { code: 'INVALID_STATE', message: 'the run was cancelled before anything was applied' };
  await ctx.audit('iac_failed', 'plane', 'failed', ctx.shown.error.message, { code: ctx.shown.error.code });
  ctx.enter('FAILED', `Cancelled (${ctx.shown.error.code}): ${ctx.shown.error.message}.`);
}

function describeRows(rows: readonly IacResourceRow[]): string {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.status, (counts.get(row.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${count} ${status}`).join(', ') || 'no resources';
}
