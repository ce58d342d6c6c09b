import type { SandboxStatus } from './lifecycle-messages';

/** How a reviewer is named to an agent: who approved is for people, not for the agent that asked (DESIGN §12). */
export const REVIEWER_FOR_AGENTS = 'a reviewer';

/**
 * A status as a principal-bound caller (an agent) sees it: the names of approvers and
 * of those who tried to approve are replaced, wherever they appear. Pure, so the SDK,
 * the CLI and the MCP server show the same thing.
 */
export function agentView(status: SandboxStatus): SandboxStatus {
  const names = new Set([status.approval?.approver, ...status.approvalAttempts.map((attempt) => attempt.approver)].filter((name): name is string => !!name));
  // Whole names only (not inside other words), longest first so `alice` goes before `al`.
  const patterns = [...names].sort((a, b) => b.length - a.length).map((name) => new RegExp(`(?<![\\w.-])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`, 'g'));
  const hide = (text: string) => patterns.reduce((shown, pattern) => shown.replace(pattern, REVIEWER_FOR_AGENTS), text);
  return {
    ...status,
    waitingFor: hide(status.waitingFor),
    approval: status.approval === null ? null : { ...status.approval, approver: REVIEWER_FOR_AGENTS, reason: hide(status.approval.reason) },
    approvalAttempts: status.approvalAttempts.map((attempt) => ({ ...attempt, approver: attempt.approver === null ? null : REVIEWER_FOR_AGENTS, reason: hide(attempt.reason) })),
    error: status.error === null ? null : { ...status.error, message: hide(status.error.message) },
    decision: status.decision === null ? null : { ...status.decision, reasons: status.decision.reasons.map(hide) },
  };
}
