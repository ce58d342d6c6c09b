import type { IacRunSummary } from '../../client/iac-client';
import { cleanDisplayText } from '../../domain/display-text';
import type { IacStatus } from '../../domain/iac/iac-run';
import type { PlanChange } from '../../domain/iac/plan';
import { impactWords } from '../../domain/iac/plan-text';
import { formatFields, formatTable } from './table';

const SYMBOL: Readonly<Record<PlanChange['action'], string>> = { Add: '+', Modify: '~', Remove: '-' };

/** A value as a reviewer reads it: compact JSON, cut when long. */
function shown(value: unknown): string {
  // An agent's strings: never a control character to the reviewer's terminal.
  const text = cleanDisplayText(value === null || value === undefined ? '(none)' : typeof value === 'string' ? value : JSON.stringify(value));
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}

/** The plan as `terraform plan` readers expect it: one line per resource, its changed properties under it. */
function planLines(status: IacStatus): string[] {
  const plan = status.plan;
  if (plan === null) return [];
  const lines = [`plan ${plan.digest}`];
  if (plan.changes.length === 0) lines.push('  no changes');
  for (const change of plan.changes) {
    const impact = impactWords(change);
    lines.push(`  ${SYMBOL[change.action]} ${change.logicalId}  ${change.type}  (${change.action}${impact.length > 0 ? `; ${impact.join(', ')}` : ''})`);
    if (change.action !== 'Modify') continue;
    for (const property of change.properties) {
      const forces = property.requiresRecreation === 'Always' ? '  (forces replacement)' : property.requiresRecreation === 'Conditionally' ? '  (may force replacement)' : '';
      lines.push(`      ${property.path}: ${shown(property.before)} → ${shown(property.after)}${forces}`);
    }
  }
  for (const row of plan.skipped ?? []) lines.push(`  . ${row.logicalId}  not created: condition ${row.condition} is false`);
  for (const output of plan.outputs ?? []) lines.push(`  output ${SYMBOL[output.action]} ${output.name}: ${shown(output.before)} → ${shown(output.after)}`);
  if ((plan.warnings ?? []).length > 0) {
    lines.push('warnings:');
    for (const warning of plan.warnings) lines.push(`  ! ${warning.logicalId}  ${warning.code}: ${cleanDisplayText(warning.message)}`);
  }
  if (plan.unsupported.length > 0) {
    lines.push('unsupported (will NOT be created there):');
    for (const row of plan.unsupported) lines.push(`  ! ${row.logicalId}  ${row.type}`);
  }
  if (plan.security.length > 0) {
    lines.push('security:');
    for (const row of plan.security) lines.push(`  ! ${row.logicalId}  ${row.type}: ${row.reason}`);
  }
  for (const note of plan.crossCheck) lines.push(`note: ${note}`);
  return lines;
}

/** One run, for a person: what it changes, what the policy said, who approved, what the apply made. */
export function formatIacStatus(status: IacStatus): string {
  const fields: [string, string][] = [
    ['state', status.state],
    status.target !== null ? ['target', status.target] : ['sandbox', status.sandboxId ?? '?'],
    ['stack', `${status.stack}  (from ${status.source.kind} ${status.source.name})`],
    ['principal', status.principal],
  ];
  if (status.decision !== null) fields.push(['decision', `${status.decision.effect}: ${status.decision.reasons.join('; ')}`]);
  if (status.proof !== null) fields.push(['proof', `run ${status.proof.iacRunId} APPLIED it in sandbox ${status.proof.sandboxId} at ${status.proof.at}`]);
  if (status.approvalsNeeded > 1) fields.push(['approvals', `${status.approvals.length} of ${status.approvalsNeeded} different approvers`]);
  for (const approval of status.approvals) fields.push(['decided by', `${approval.approver}${approval.reason ? ` (${approval.reason})` : ''} at ${approval.at}`]);
  if (status.error !== null) fields.push(['error', `${status.error.code}: ${status.error.message}`]);
  fields.push(['now', status.waitingFor]);
  const parts = [`IaC run ${status.runId}`, formatFields(fields), ...planLines(status)];
  if (status.resources.length > 0) {
    parts.push(
      formatTable(
        ['LOGICAL ID', 'TYPE', 'PHYSICAL ID', 'STATUS'],
        status.resources.map((row) => [row.logicalId, row.type, row.physicalId ?? '-', row.status]),
      ),
    );
  }
  if (status.state === 'AWAITING_APPROVAL' && status.plan !== null) {
    parts.push(`\nA reviewer approves it with: sandboxctl iac approve ${status.runId} --approver NAME --code NNNNNN`);
  }
  return parts.join('\n');
}

export function formatIacList(runs: readonly IacRunSummary[]): string {
  if (runs.length === 0) return 'no IaC runs';
  return formatTable(
    ['RUN', 'STATE', 'TARGET', 'PRINCIPAL', 'STARTED'],
    runs.map((run) => [run.runId, run.state ?? '?', run.target ?? '?', run.principal ?? '?', run.startedAt]),
  );
}
