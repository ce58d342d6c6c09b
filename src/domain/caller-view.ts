import type { IacStatus } from './iac/iac-run';
import type { ApprovalAttempt, SandboxStatus } from './lifecycle-messages';

/** How a reviewer is named to an agent: who approved is for people, not for the agent that asked (DESIGN §12). */
export const REVIEWER_FOR_AGENTS = 'a reviewer';

/** A function that replaces each of `names`, as a whole word, in a text. */
function hiderOf(names: Iterable<string | null | undefined>): (text: string) => string {
  const unique = new Set([...names].filter((name): name is string => !!name));
  // Whole names only (not inside other words), longest first so `alice` goes before `al`.
  const patterns = [...unique].sort((a, b) => b.length - a.length).map((name) => new RegExp(`(?<![\\w.-])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`, 'g'));
  return (text) => patterns.reduce((shown, pattern) => shown.replace(pattern, REVIEWER_FOR_AGENTS), text);
}

function attemptsSeen(attempts: readonly ApprovalAttempt[], hide: (text: string) => string): ApprovalAttempt[] {
  return attempts.map((attempt) => ({ ...attempt, approver: attempt.approver === null ? null : REVIEWER_FOR_AGENTS, reason: hide(attempt.reason) }));
}

/**
 * A status as a principal-bound caller (an agent) sees it: the names of approvers and
 * of those who tried to approve are replaced, wherever they appear. Pure, so the SDK,
 * the CLI, the MCP server and the gateway show the same thing.
 */
export function agentView(status: SandboxStatus): SandboxStatus {
  const hide = hiderOf([status.approval?.approver, ...status.approvalAttempts.map((attempt) => attempt.approver)]);
  return {
    ...status,
    waitingFor: hide(status.waitingFor),
    approval: status.approval === null ? null : { ...status.approval, approver: REVIEWER_FOR_AGENTS, reason: hide(status.approval.reason) },
    approvalAttempts: attemptsSeen(status.approvalAttempts, hide),
    error: status.error === null ? null : { ...status.error, message: hide(status.error.message) },
    decision: status.decision === null ? null : { ...status.decision, reasons: status.decision.reasons.map(hide) },
  };
}

/** Why an agent sees no plan of a run against a target: the plan is the target's stack compared with the template. */
export const TARGET_PLAN_WITHHELD = "the plan against the target is for its reviewers: it compares the target's current stack with your template, which would tell you what the target holds";

/**
 * A run against a target's plan as its agent sees it (DESIGN §18: an agent learns nothing
 * of a target before a person acts): the digest, and no change, value or note drawn from
 * the target's stack. The agent knows its own template.
 */
function withheldTargetPlan(plan: NonNullable<IacStatus['plan']>): NonNullable<IacStatus['plan']> {
  return {
    digest: plan.digest,
    changes: [],
    unsupported: [],
    security: [],
    conditions: {},
    skipped: [],
    outputs: [],
    warnings: [{ logicalId: '', code: 'TARGET_PLAN_WITHHELD', message: TARGET_PLAN_WITHHELD }],
    crossCheck: [],
  };
}

/** An IaC run as its agent sees it: the same, for the run's approvals and attempts; a target's plan withheld. */
export function agentIacView(status: IacStatus): IacStatus {
  const hide = hiderOf([...status.approvals.map((approval) => approval.approver), ...status.approvalAttempts.map((attempt) => attempt.approver)]);
  return {
    ...status,
    plan: typeof status.target === 'string' && status.plan ? withheldTargetPlan(status.plan) : status.plan,
    waitingFor: hide(status.waitingFor),
    approvals: status.approvals.map((approval) => ({ ...approval, approver: REVIEWER_FOR_AGENTS, reason: hide(approval.reason) })),
    approvalAttempts: attemptsSeen(status.approvalAttempts, hide),
    events: status.events.map(hide),
    error: status.error === null ? null : { ...status.error, message: hide(status.error.message) },
    decision: status.decision === null ? null : { ...status.decision, reasons: status.decision.reasons.map(hide) },
  };
}
