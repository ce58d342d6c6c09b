import { CAPABILITY_RULES } from './capabilities';
import type { ErrorCode } from './error-codes';
import { flagEnvName, type FeatureFlag, type FeatureFlags } from './feature-flags';
import { evaluatePolicy, type PolicyEffect, type PolicyRow } from './policy';
import type { IdentifiedRequest } from './sandbox-request';
import { screenServices, type AdapterName, type Fidelity } from './service-catalog';
import { snapshotMisfit, type SnapshotSource } from './snapshots';
import { grantTtl, type TtlSettings } from './ttl';
import { dailyCapRefusal, type DailyUsage } from './usage';

const ADAPTER_FLAGS: Readonly<Record<AdapterName, FeatureFlag>> = {
  memory: 'ADAPTER_MEMORY',
  moto: 'ADAPTER_MOTO',
  floci: 'ADAPTER_FLOCI',
};

/** The verdict on one request, as recorded in status, audit and the workflow history. */
export interface Decision {
  readonly effect: PolicyEffect;
  /** Set when the effect is deny: the taxonomy code a caller sees. */
  readonly code?: ErrorCode;
  readonly reasons: readonly string[];
  readonly fidelity: Readonly<Record<string, Fidelity>>;
  readonly matchedPolicyIds: readonly number[];
  /** Granted TTL and the most any extension may reach from "now". */
  readonly ttlSeconds: number;
  readonly maxTtlSeconds: number;
  /** What a refusal has to say besides its reasons (the daily cap: what was used, when it resets). */
  readonly details?: Readonly<Record<string, unknown>>;
}

export interface ScreeningInput {
  readonly request: IdentifiedRequest;
  readonly flags: FeatureFlags;
  readonly policies: readonly PolicyRow[];
  /** Live sandboxes of the principal, this one excluded. */
  readonly liveSandboxes: number;
  /** Adapters this worker can run. */
  readonly availableAdapters: readonly AdapterName[];
  readonly ttl: TtlSettings;
  /** The snapshot a fork starts from, when the principal holds one by the request's `fromSnapshot` id. */
  readonly source?: Pick<SnapshotSource, 'snapshotId' | 'adapter' | 'services'>;
  /** The principal's sandbox-time today (UTC), for a policy row's daily cap; left out: not judged. */
  readonly dailyUsage?: DailyUsage;
}

/**
 * Screens a request before anything touches a runtime, in the order of DESIGN §2:
 * flags, policy, services (catalog and fidelity), TTL, quota (live sandboxes, then sandbox-hours today). The first refusal
 * decides; nothing here has side effects.
 */
export function screenRequest(input: ScreeningInput): Decision {
  const { request } = input;
  const denied = (code: ErrorCode, reason: string, extra: Partial<Decision> = {}): Decision => ({
    effect: 'deny',
    code,
    reasons: [reason],
    fidelity: {},
    matchedPolicyIds: [],
    ttlSeconds: 0,
    maxTtlSeconds: 0,
    ...extra,
  });

  const capabilityFlag = CAPABILITY_RULES[request.capability].flag;
  if (!input.flags[capabilityFlag]) {
    return denied('FLAG_DISABLED', `${request.capability} is behind ${flagEnvName(capabilityFlag)}, which is off`);
  }
  const adapterFlag = ADAPTER_FLAGS[request.adapter];
  if (!input.flags[adapterFlag]) {
    return denied('FLAG_DISABLED', `the ${request.adapter} adapter is behind ${flagEnvName(adapterFlag)}, which is off`);
  }
  if (!input.availableAdapters.includes(request.adapter)) {
    return denied('ADAPTER_UNAVAILABLE', `no docker host of this plane runs the ${request.adapter} adapter`);
  }

  if (request.fromSnapshot !== undefined) {
    if (input.source === undefined) return denied('NOT_FOUND', `${request.principal} holds no snapshot ${request.fromSnapshot} (\`sandboxctl snapshots\` lists yours)`);
    const misfit = snapshotMisfit(input.source, request);
    if (misfit !== undefined) return denied(misfit.code, misfit.message);
  }

  const policy = evaluatePolicy({
    principal: request.principal,
    capability: request.capability,
    services: request.services,
    policies: input.policies,
  });
  if (policy.effect === 'deny') {
    return denied(policy.code ?? 'POLICY_DENIED', policy.reasons.join('; '), { matchedPolicyIds: policy.matchedPolicyIds });
  }

  const services = screenServices(request.adapter, request.services);
  if (services.unknown.length > 0) {
    return denied('SERVICE_UNKNOWN', `the ${request.adapter} adapter does not offer ${services.unknown.join(', ')}`, {
      matchedPolicyIds: policy.matchedPolicyIds,
    });
  }

  const ttl = grantTtl(request.ttlSeconds, policy.maxTtlSeconds, input.ttl);
  if (!ttl.ok) return denied('TTL_EXCEEDS_CEILING', ttl.reason, { matchedPolicyIds: policy.matchedPolicyIds, fidelity: services.fidelity });

  if (policy.maxConcurrent !== null && input.liveSandboxes >= policy.maxConcurrent) {
    return denied('QUOTA_EXCEEDED', `${request.principal} already holds ${input.liveSandboxes} live sandboxes; the policy allows ${policy.maxConcurrent} at once`, {
      matchedPolicyIds: policy.matchedPolicyIds,
      fidelity: services.fidelity,
    });
  }

  const overCap = dailyCapRefusal(request.principal, policy.maxSandboxHoursPerDay, input.dailyUsage);
  if (overCap !== undefined) {
    return denied('QUOTA_EXCEEDED', overCap.reason, { matchedPolicyIds: policy.matchedPolicyIds, fidelity: services.fidelity, details: overCap.details });
  }

  return {
    effect: policy.effect,
    reasons: policy.reasons,
    fidelity: services.fidelity,
    matchedPolicyIds: policy.matchedPolicyIds,
    ttlSeconds: ttl.ttlSeconds,
    maxTtlSeconds: ttl.maxTtlSeconds,
  };
}
