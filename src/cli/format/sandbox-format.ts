import type { ApprovalOutcome, SandboxSummary } from '../../client/sandbox-client';
import { fakeCredentialValues } from '../../domain/client-config';
import type { SandboxStatus } from '../../domain/lifecycle-messages';
import { isTerminal } from '../../domain/sandbox-states';
import type { AuditEntry } from '../../domain/store-commands';
import type { FamilyOutcome } from '../../client/family-outcome';
import { formatFields, formatTable, formatTimeLeft } from './table';

function expiryText(status: SandboxStatus): string {
  if (status.expiresAt === null) return 'not set (starts when READY)';
  if (status.timeLeftSeconds === null) return status.expiresAt;
  return `${status.expiresAt} (${formatTimeLeft(status.timeLeftSeconds)} left)`;
}

function healthText(status: SandboxStatus): string {
  const { health } = status;
  const checked = health.checkedAt === null ? 'not checked yet' : `checked ${health.checkedAt}`;
  return `${health.status} (${checked}${health.restarts > 0 ? `; restarted ${health.restarts}×, its state was lost` : ''})`;
}

function servicesText(status: SandboxStatus): string {
  return status.services.map((service) => (status.fidelity[service] ? `${service} (${status.fidelity[service]})` : service)).join(', ');
}

/** What READY's text says after a restore or a resume (lifecycle-snapshots.ts, phase-provisioning.ts). */
const CHANGED_UNDER_IT = /(Restored|Resumed) from snapshot snap-/;

/** What a person needs to see of one sandbox: state, endpoint, expiry, what it waits for, what to do. */
export function formatStatus(status: SandboxStatus): string {
  const fields: [string, string][] = [
    ['principal', `${status.principal}  (capability ${status.capability}, adapter ${status.adapter})`],
    ['services', servicesText(status)],
  ];
  if (status.purpose !== null) fields.push(['purpose', status.purpose]);
  if (status.parent !== null) fields.push(['forked from', `${status.parent}  (tree of ${status.root}: \`sandboxctl tree ${status.id}\`; it never outlives ${status.root})`]);
  if (status.endpoint !== null) fields.push(['endpoint', status.endpoint]);
  if (status.runtimeIds.length > 0) fields.push(['containers', status.runtimeIds.map((id) => id.slice(0, 12)).join(', ')]);
  if (status.state === 'READY') fields.push(['health', healthText(status)]);
  fields.push(['expires', expiryText(status)]);
  if (status.decision !== null) fields.push(['decision', `${status.decision.effect}: ${status.decision.reasons.join('; ')}`]);
  if (status.approval !== null) fields.push(['approved by', `${status.approval.approver}${status.approval.reason ? ` (${status.approval.reason})` : ''}`]);
  if (status.error !== null) fields.push(['error', `${status.error.code}: ${status.error.message}`]);
  // READY's text addresses people in the Temporal UI; the lines below say the same in CLI terms —
  // except after a restart, a restore or a resume, which the agent must hear about: its state was
  // lost or replaced, its endpoint or key may have changed.
  if (status.state !== 'READY' || status.health.restarts > 0 || CHANGED_UNDER_IT.test(status.waitingFor)) fields.push(['now', status.waitingFor]);

  const lines = [`sandbox ${status.id}  ${status.state}`, formatFields(fields)];
  if (status.state === 'AWAITING_APPROVAL') {
    lines.push(
      '',
      'To approve (as a listed approver other than the requester, with the code their authenticator shows):',
      `  sandboxctl approve ${status.id} --approver NAME --code NNNNNN --reason TEXT`,
      'To refuse:',
      `  sandboxctl deny ${status.id} --approver NAME --code NNNNNN --reason TEXT`,
    );
  }
  if (status.state === 'READY') {
    lines.push(
      '',
      `AWS SDK settings (${credentialsKind(status)}): \`sandboxctl status ${status.id} --json\` → clientConfig`,
      `More time: sandboxctl extend ${status.id} --ttl 15m    Done: sandboxctl destroy ${status.id}`,
    );
  }
  return lines.join('\n');
}

/**
 * A fork's or a tree's sandboxes, one a line: its id, state, what it came from, its
 * expiry or why it failed; then the commands that act on them all.
 */
export function formatFamily(outcomes: readonly FamilyOutcome[], root?: string): string {
  const rows = outcomes.map((outcome) => {
    if (!('state' in outcome)) return [outcome.id, 'NOT STARTED', '-', '-', `${outcome.error.code}: ${outcome.error.message}`];
    const note = outcome.error !== null ? `${outcome.error.code}: ${outcome.error.message}` : (outcome.endpoint ?? '');
    return [outcome.id, outcome.state, outcome.parent ?? '(root)', outcome.expiresAt ?? '-', note];
  });
  const lines = [formatTable(['ID', 'STATE', 'PARENT', 'EXPIRES', 'ENDPOINT OR ERROR'], rows)];
  const anchor = root ?? outcomes.find((outcome): outcome is SandboxStatus => 'state' in outcome)?.root;
  const live = outcomes.some((outcome) => 'state' in outcome && !isTerminal(outcome.state));
  if (anchor !== undefined && live)
    lines.push('', `The family: sandboxctl tree ${anchor}    More time: sandboxctl extend ${anchor} --tree --ttl 15m    Done: sandboxctl destroy ${anchor} --tree`);
  return lines.join('\n');
}

/** The verdict on an approve or deny, then the sandbox as it now is. */
export function formatApprovalOutcome(outcome: ApprovalOutcome): string {
  const { attempt, status } = outcome;
  return `${attempt.signal} by ${attempt.approver ?? 'unknown'} ${attempt.verdict}.\n${formatStatus(status)}`;
}

export function formatSandboxList(rows: readonly SandboxSummary[]): string {
  if (rows.length === 0) return 'No sandboxes match.';
  return formatTable(
    ['ID', 'STATE', 'PRINCIPAL', 'CAPABILITY', 'EXPIRES', 'STARTED'],
    rows.map((row) => [row.id, row.state ?? '?', row.principal ?? '?', row.capability ?? '?', row.expiresAt ?? '-', row.startedAt]),
  );
}

export function formatAudit(sandboxId: string, operations: readonly AuditEntry[]): string {
  if (operations.length === 0) return `No audit rows for sandbox ${sandboxId} yet.`;
  return `Audit trail of sandbox ${sandboxId}, oldest first:\n${formatTable(
    ['STEP', 'AT', 'ACTION', 'ACTOR', 'EFFECT', 'REASON'],
    operations.map((op) => [String(op.step), op.at, op.action, op.actor, op.effect, op.reason ?? '']),
  )}`;
}

/** Whether a READY sandbox's client settings carry credentials of its own (moto) or an adapter's fake ones. */
function credentialsKind(status: SandboxStatus): string {
  const keyId = status.clientConfig?.credentials.accessKeyId;
  return keyId === undefined || fakeCredentialValues().includes(keyId) ? 'fake credentials' : "the sandbox's own credentials, valid only at its endpoint";
}
