import { z } from 'zod';
import type { Capability } from './capabilities';
import { CAPABILITY_RULES } from './capabilities';

export const POLICY_EFFECTS = ['allow', 'require_approval', 'deny'] as const;
export type PolicyEffect = (typeof POLICY_EFFECTS)[number];

const STRICTNESS: Readonly<Record<PolicyEffect, number>> = { allow: 0, require_approval: 1, deny: 2 };

/** deny > require_approval > allow. */
export function stricter(a: PolicyEffect, b: PolicyEffect): PolicyEffect {
  return STRICTNESS[a] >= STRICTNESS[b] ? a : b;
}

/** One row of the policy table. */
export interface PolicyRow {
  readonly id: number;
  /** A principal name, or a glob where `*` stands for any run of characters. */
  readonly principalPattern: string;
  readonly capability: Capability;
  readonly effect: PolicyEffect;
  readonly maxTtlSeconds: number | null;
  /** The services this row covers; `null` covers every service. */
  readonly services: readonly string[] | null;
  /** Live sandboxes the principal may hold at once under this row. */
  readonly maxConcurrent: number | null;
  /** Sandbox-hours the principal may use per UTC day under this row (DESIGN §19); absent in rows from before the cap: none. */
  readonly maxSandboxHoursPerDay?: number | null;
}

/** A principal name, or a glob where `*` stands for any run of characters: what a policy row matches. */
export const principalPatternSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .regex(/^[A-Za-z0-9._@:/+*-]+$/, 'may contain letters, digits, . _ @ : / + - and * (any run of characters) only');

export function principalMatches(pattern: string, principal: string): boolean {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`).test(principal);
}

export interface PolicyOutcome {
  readonly effect: PolicyEffect;
  readonly code?: 'POLICY_DENIED' | 'SERVICE_NOT_ALLOWED';
  readonly reasons: readonly string[];
  readonly matchedPolicyIds: readonly number[];
  /** The tightest limits among the rows that decided. */
  readonly maxTtlSeconds: number | null;
  readonly maxConcurrent: number | null;
  readonly maxSandboxHoursPerDay: number | null;
}

function minOrNull(values: readonly (number | null)[]): number | null {
  const present = values.filter((value): value is number => value !== null);
  return present.length === 0 ? null : Math.min(...present);
}

/**
 * Decides a request from the policy rows. Each service is one part of the request:
 * its effect is the strictest among the rows that cover it, and a service no row
 * covers is denied. The request gets the strictest effect over all its parts, so
 * bundling a gated service with an ungated one cannot slip past the gate. No
 * matching row at all is a denial (fail closed).
 */
export function evaluatePolicy(input: { principal: string; capability: Capability; services: readonly string[]; policies: readonly PolicyRow[] }): PolicyOutcome {
  const rows = input.policies.filter((row) => row.capability === input.capability && principalMatches(row.principalPattern, input.principal));
  if (rows.length === 0) {
    return {
      effect: 'deny',
      code: 'POLICY_DENIED',
      reasons: [`no policy row lets ${input.principal} use ${input.capability}`],
      matchedPolicyIds: [],
      maxTtlSeconds: null,
      maxConcurrent: null,
      maxSandboxHoursPerDay: null,
    };
  }

  let effect: PolicyEffect = 'allow';
  const reasons: string[] = [];
  const deciding = new Map<number, PolicyRow>();
  const uncovered: string[] = [];
  for (const service of input.services) {
    const covering = rows.filter((row) => row.services === null || row.services.includes(service));
    if (covering.length === 0) {
      uncovered.push(service);
      continue;
    }
    const strictest = covering.reduce((a, b) => (STRICTNESS[b.effect] > STRICTNESS[a.effect] ? b : a));
    for (const row of covering) deciding.set(row.id, row);
    effect = stricter(effect, strictest.effect);
    reasons.push(`${service}: policy row ${strictest.id} says ${strictest.effect}`);
  }
  const decidingRows = [...deciding.values()];
  const limits = {
    matchedPolicyIds: decidingRows.map((row) => row.id).sort((a, b) => a - b),
    maxTtlSeconds: minOrNull(decidingRows.map((row) => row.maxTtlSeconds)),
    maxConcurrent: minOrNull(decidingRows.map((row) => row.maxConcurrent)),
    maxSandboxHoursPerDay: minOrNull(decidingRows.map((row) => row.maxSandboxHoursPerDay ?? null)),
  };

  if (uncovered.length > 0) {
    return {
      effect: 'deny',
      code: 'SERVICE_NOT_ALLOWED',
      reasons: [`no policy row covers ${uncovered.join(', ')} for ${input.principal} under ${input.capability}`],
      ...limits,
    };
  }
  if (effect === 'deny') {
    return { effect, code: 'POLICY_DENIED', reasons, ...limits };
  }
  if (CAPABILITY_RULES[input.capability].alwaysRequiresApproval && effect === 'allow') {
    effect = 'require_approval';
    reasons.push(`${input.capability} always requires approval`);
  }
  return { effect, reasons, ...limits };
}
