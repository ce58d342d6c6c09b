import { CAPABILITY_RULES, type Capability } from '../capabilities';
import type { ErrorCode } from '../error-codes';
import { flagEnvName, type FeatureFlags } from '../feature-flags';
import { evaluatePolicy, type PolicyEffect, type PolicyRow } from '../policy';
import type { CfnTemplate } from './template';

/** The policy's word on one IaC run (DESIGN §14: "policy on the capability decides, as for sandboxes"). */
export interface IacDecision {
  readonly effect: PolicyEffect;
  readonly code?: ErrorCode;
  readonly reasons: readonly string[];
}

/**
 * The services a template touches, as policy rows name them: the service part of each
 * resource type, lowercased (`AWS::SQS::Queue` → `sqs`). So a row `--capability
 * cloud.iac.local --services s3,sqs` lets a principal apply buckets and queues only.
 */
export function templateServices(template: CfnTemplate): string[] {
  const resources = (template.Resources ?? {}) as Record<string, { Type?: unknown }>;
  return [...new Set(Object.values(resources).map((resource) => serviceOfType(String(resource.Type))))].sort();
}

/** The service a resource type belongs to, as catalogs and policy rows name it: `AWS::SQS::Queue` → `sqs`, `Custom::X` → `custom`. */
export function serviceOfType(type: string): string {
  const parts = type.split('::');
  return (parts[0] === 'AWS' ? (parts[1] ?? '') : (parts[0] ?? '')).toLowerCase();
}

/**
 * Screens an IaC run before anything touches the emulator: the capability's flag, then
 * the policy rows over the services the template touches (no row: deny). The same
 * rules as a sandbox request, so one policy table governs both.
 */
export function screenIacRun(input: { principal: string; capability: Capability; template: CfnTemplate; flags: FeatureFlags; policies: readonly PolicyRow[] }): IacDecision {
  const flag = CAPABILITY_RULES[input.capability].flag;
  if (!input.flags[flag]) return { effect: 'deny', code: 'FLAG_DISABLED', reasons: [`${input.capability} is behind ${flagEnvName(flag)}, which is off`] };
  const outcome = evaluatePolicy({ principal: input.principal, capability: input.capability, services: templateServices(input.template), policies: input.policies });
  if (outcome.effect === 'deny') return { effect: 'deny', code: outcome.code ?? 'POLICY_DENIED', reasons: outcome.reasons };
  return { effect: outcome.effect, reasons: outcome.reasons };
}
