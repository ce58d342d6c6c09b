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

/** What a plan adds to the screening of its template (DESIGN §14): the services it removes or replaces, and the changes that lose data. */
export interface PlanScreening {
  /** Every service the plan touches, removed resources' included. */
  readonly services: readonly string[];
  /** Logical ids of the changes that lose data (a stateful resource removed or replaced without a policy that keeps it). */
  readonly dataLoss: readonly string[];
}

/** The services and data-losing changes of a plan's changes, for {@link screenIacRun}. */
export function planScreening(changes: readonly { logicalId: string; type: string; dataLoss?: boolean }[]): PlanScreening {
  return {
    services: [...new Set(changes.map((change) => serviceOfType(change.type)))].sort(),
    dataLoss: changes.filter((change) => change.dataLoss === true).map((change) => change.logicalId),
  };
}

/**
 * Screens an IaC run before anything touches the emulator: the capability's flag, then
 * the policy rows over the services the template touches (no row: deny). The same
 * rules as a sandbox request, so one policy table governs both. Once planned, the run is
 * screened again with its `plan` alone (the template stays out of a second activity input):
 * the services of what it removes or replaces count too, and a change that loses data
 * needs a person whatever the row says.
 */
export function screenIacRun(input: {
  principal: string;
  capability: Capability;
  template?: CfnTemplate;
  flags: FeatureFlags;
  policies: readonly PolicyRow[];
  plan?: PlanScreening;
}): IacDecision {
  const flag = CAPABILITY_RULES[input.capability].flag;
  if (!input.flags[flag]) return { effect: 'deny', code: 'FLAG_DISABLED', reasons: [`${input.capability} is behind ${flagEnvName(flag)}, which is off`] };
  const services = [...new Set([...(input.template === undefined ? [] : templateServices(input.template)), ...(input.plan?.services ?? [])])].sort();
  const outcome = evaluatePolicy({ principal: input.principal, capability: input.capability, services, policies: input.policies });
  if (outcome.effect === 'deny') return { effect: 'deny', code: outcome.code ?? 'POLICY_DENIED', reasons: outcome.reasons };
  const losing = input.plan?.dataLoss ?? [];
  if (losing.length > 0) {
    const reason = `the plan loses data (${losing.join(', ')}: stateful, removed or replaced without a Retain or Snapshot policy), which a person decides whatever the policy allows`;
    return { effect: 'require_approval', reasons: [...outcome.reasons, reason] };
  }
  return { effect: outcome.effect, reasons: outcome.reasons };
}
