import type { Capability } from '../domain/capabilities';
import type { ShownPlan } from '../domain/iac/iac-run';
import { planScreening, templateServices } from '../domain/iac/iac-screening';
import { storeActivities } from './activity-routes';
import type { IacPhase } from './iac-phases';
import { IacRefused } from './iac-refusal';
import type { IacRunContext } from './iac-run-context';
import { IacStackTurn } from './iac-stack-turn';
import { iso } from './iso-time';
import { planningSteps } from './iac-steps';

/**
 * What a run may take beyond waiting for people: planning, applying and checking with
 * every retry its steps allow (the settle step alone may take 5 × 15 minutes). Its stack
 * turn is leased for that long, counted from the grant, and the approval wait on top.
 */
const RUN_BUDGET_MS = 3 * 3_600_000;

/**
 * Planning: the stack's turn (one run at a time changes a stack), the plan (the plane's
 * own, cross-checked with the place's change set), and the plan screened as well as the
 * template. A plan run ends here; an apply waits for people when it must, then applies.
 */
export async function planning(ctx: IacRunContext, phase: Extract<IacPhase, { name: 'planning' }>): Promise<IacPhase> {
  const run = ctx.run;
  ctx.enter('PLANNING', `Waiting for the turn of stack ${run.stack} in ${ctx.whereText}.`);
  const leaseMs = RUN_BUDGET_MS + (run.mode === 'apply' ? phase.approvalTimeoutSeconds * 1000 : 0);
  ctx.place.turn = new IacStackTurn(run, ctx.place.target);
  ctx.place.granted = await ctx.place.turn.claim(leaseMs, templateServices(run.template), (behind, leaseUntilMs) =>
    ctx.enter('PLANNING', `Waiting for stack ${run.stack}: run ${behind} changes it now (its turn ends by ${iso(leaseUntilMs)} at the latest).`),
  );
  ctx.enter('PLANNING', `Planning stack ${run.stack} in ${ctx.whereText}.`);
  const planned = await planningSteps(ctx.granted.taskQueue).planIacChange(ctx.changeRequest());
  ctx.shown.plan = planned.plan;
  await ctx.audit('iac_planned', 'plane', 'planned', null, {
    digest: planned.plan.digest,
    changes: planned.plan.changes.length,
    unsupported: planned.plan.unsupported.length,
    security: planned.plan.security.length,
  });
  await screenPlan(ctx, phase.capability);
  if (run.mode === 'plan') {
    const seeded = run.source.kind === 'cdk' && run.sandboxId !== undefined ? " (but for the CDK bootstrap parameter, the plane's own, which it keeps in the sandbox)" : '';
    const next =
      planned.plan.changes.length === 0
        ? `the stack already matches this template: applying it would change nothing`
        : `to make these changes, apply the same template and parameters to ${ctx.whereText} (sandboxctl iac apply)`;
    ctx.enter('PLANNED', `Planned: nothing was changed${seeded}; ${next}.`);
    return { name: 'ended' };
  }
  return ctx.shown.approvalsNeeded > 0 ? { name: 'awaiting_approval', approvalTimeoutSeconds: phase.approvalTimeoutSeconds } : { name: 'applying' };
}

/**
 * Screens the plan as well as the template (DESIGN §14): what it removes or replaces is
 * screened by its service too, and a change that loses data needs a person whatever the
 * row says. Asked only when the plan adds something to judge.
 */
async function screenPlan(ctx: IacRunContext, capability: Capability): Promise<void> {
  const run = ctx.run;
  const fromTemplate = templateServices(run.template);
  const screening = planScreening((ctx.shown.plan as ShownPlan).changes);
  const more = screening.services.some((service) => !fromTemplate.includes(service));
  if (!more && screening.dataLoss.length === 0) return;
  const services = [...new Set([...fromTemplate, ...screening.services])].sort();
  const again = await storeActivities().screenIacRun({ principal: run.principal, capability, plan: { services, dataLoss: screening.dataLoss } });
  ctx.shown.decision = again.decision;
  if (again.decision.effect === 'deny')
    throw new IacRefused('DENIED', again.decision.code ?? 'POLICY_DENIED', `${again.decision.reasons.join('; ')} (screened with what the plan removes or replaces)`);
  if (again.decision.effect === 'require_approval') ctx.shown.approvalsNeeded = Math.max(ctx.shown.approvalsNeeded, 1);
}
