import { upsertSearchAttributes } from '@temporalio/workflow';
import { PROOF_WINDOW_SECONDS } from '../domain/iac/iac-run';
import { templateDigest } from '../domain/iac/plan';
import { SandboxCapability } from '../domain/search-attributes';
import { approvalsNeeded, capabilityOfEnvironment } from '../domain/targets';
import { storeActivities } from './activity-routes';
import type { IacPhase } from './iac-phases';
import { IacRefused } from './iac-refusal';
import type { IacRunContext } from './iac-run-context';

/**
 * Screening: the target (for a promotion), the capability's flag and the policy rows over
 * the template's services, and a promotion's sandbox proof; nothing is asked of the place yet.
 */
export async function screening(ctx: IacRunContext): Promise<IacPhase> {
  const run = ctx.run;
  await ctx.audit('iac_requested', run.principal, 'requested', null, { mode: run.mode, source: run.source });
  if (run.target !== undefined) ctx.place.target = await storeActivities().iacTarget({ name: run.target });
  const target = ctx.place.target;
  const capability = target === undefined ? 'cloud.iac.local' : capabilityOfEnvironment(target.environment);
  if (target !== undefined) upsertSearchAttributes([{ key: SandboxCapability, value: capability }]);
  const screened = await storeActivities().screenIacRun({ principal: run.principal, template: run.template, capability });
  ctx.shown.decision = screened.decision;
  if (screened.decision.effect === 'deny') throw new IacRefused('DENIED', screened.decision.code ?? 'POLICY_DENIED', screened.decision.reasons.join('; '));
  ctx.shown.approvalsNeeded = target !== undefined ? approvalsNeeded(target.environment) : screened.decision.effect === 'require_approval' ? 1 : 0;
  if (target !== undefined && run.mode === 'apply') await findProof(ctx);
  return { name: 'planning', capability, approvalTimeoutSeconds: screened.approvalTimeoutSeconds };
}

/**
 * The gate of a promotion: the same template and parameters APPLIED, every supported
 * resource verified, in a sandbox of the same principal within the window. Without it
 * the run ends before anything is asked of the target.
 */
export async function findProof(ctx: IacRunContext): Promise<void> {
  const run = ctx.run;
  const digest = templateDigest(run.template, run.parameters);
  ctx.shown.proof = await storeActivities().findIacProof({ principal: run.principal, templateDigest: digest, withinSeconds: PROOF_WINDOW_SECONDS });
  if (ctx.shown.proof === null) {
    await ctx.audit('iac_proof_missing', 'plane', 'refused', null, { templateDigest: digest });
    throw new IacRefused(
      'FAILED',
      'PROOF_MISSING',
      `no sandbox of ${run.principal} APPLIED this template with these parameters (digest ${digest}) with every supported resource verified in the last ${PROOF_WINDOW_SECONDS / 3600} h; nothing was asked of ${ctx.whereText}`,
    );
  }
  await ctx.audit('iac_proof_found', 'plane', 'proof', null, { templateDigest: digest, ...ctx.shown.proof });
}
