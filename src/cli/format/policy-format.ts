import { formatDuration } from '../../domain/duration';
import type { ApproverRecord, PolicyRecord } from '../../domain/store-commands';
import { formatTable } from './table';

function limitsText(policy: PolicyRecord): string {
  const limits = [
    policy.maxTtlSeconds === null ? null : `max TTL ${formatDuration(policy.maxTtlSeconds)}`,
    policy.services === null ? null : `services ${policy.services.join(', ')}`,
    policy.maxConcurrent === null ? null : `at most ${policy.maxConcurrent} live`,
    policy.maxSandboxHoursPerDay === null ? null : `at most ${policy.maxSandboxHoursPerDay} sandbox-hours per day`,
  ].filter((limit): limit is string => limit !== null);
  return limits.length === 0 ? 'no limits' : limits.join('; ');
}

/** One sentence for one row: `policy row 3: agent-* / cloud.sandbox → allow (max TTL 2h)`. */
export function formatPolicy(policy: PolicyRecord): string {
  return `policy row ${policy.id}: ${policy.principalPattern} / ${policy.capability} → ${policy.effect} (${limitsText(policy)})`;
}

export function formatPolicyList(policies: readonly PolicyRecord[]): string {
  if (policies.length === 0) return 'No policy rows: every request is denied. Add one with `sandboxctl policy add`.';
  return formatTable(
    ['ID', 'PRINCIPAL', 'CAPABILITY', 'EFFECT', 'MAX-TTL', 'SERVICES', 'MAX-CONCURRENT', 'MAX-HOURS/DAY'],
    policies.map((p) => [
      String(p.id),
      p.principalPattern,
      p.capability,
      p.effect,
      p.maxTtlSeconds === null ? '-' : formatDuration(p.maxTtlSeconds),
      p.services === null ? 'any' : p.services.join(','),
      p.maxConcurrent === null ? '-' : String(p.maxConcurrent),
      p.maxSandboxHoursPerDay === null ? '-' : String(p.maxSandboxHoursPerDay),
    ]),
  );
}

export function formatApproverList(approvers: readonly ApproverRecord[]): string {
  if (approvers.length === 0) return 'No approvers: nobody can approve a request. Add one with `sandboxctl approvers add NAME`.';
  return formatTable(
    ['NAME', 'ADDED'],
    approvers.map((a) => [a.name, a.addedAt]),
  );
}
