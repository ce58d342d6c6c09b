import { isCancellation, workflowInfo } from '@temporalio/workflow';
import { iacApprovalPayloadSchema, type IacApproval } from '../domain/iac/iac-run';
import { MAX_PAYLOAD_CHARS, type ApprovalAttempt, type ApprovalRefusal } from '../domain/lifecycle-messages';
import { describeIssues } from '../domain/validation';
import { storeActivities } from './activity-routes';
import { ApprovalInbox, type PendingApproval } from './approval-inbox';
import { failureCode } from './workflow-failures';

/** The approvals that did not count that status shows: the newest (the audit trail has them all). */
const ATTEMPTS_SHOWN = 20;

/** Writes one audit row of the run. */
type Audit = (action: string, actor: string, effect: string, reason: string | null) => Promise<void>;

/**
 * An IaC run's approvals (DESIGN §12, §14): the approves and denies waiting to be judged,
 * those that counted, and the newest that did not. Judging one checks who sends it
 * (listed, not the requester, not twice), that it names the plan the run holds, and the
 * approver's code; one that does not count is audited and ignored, never fatal.
 */
export class IacApprovals {
  readonly inbox = new ApprovalInbox([]);
  /** Approvals and denials that counted, oldest first. */
  readonly given: IacApproval[] = [];
  /** Those that did not, newest last. */
  readonly ignored: ApprovalAttempt[] = [];
  /** Approvals that counted while more are needed (production's first): their decide update may answer. */
  private readonly taken = new Set<PendingApproval>();
  /** How many did not count in all (only the newest are kept in `ignored`). */
  ignoredInAll = 0;

  constructor(
    private readonly requester: string,
    private readonly audit: Audit,
  ) {}

  /** Whether `pending` counted while the run waits on for more approvers. */
  hasTaken(pending: PendingApproval): boolean {
    return this.taken.has(pending);
  }

  /** Records an approval or denial that counted. */
  count(attempt: ApprovalAttempt): IacApproval {
    const approval = { approver: attempt.approver as string, reason: attempt.reason, at: attempt.at };
    this.given.push(approval);
    return approval;
  }

  /** Answers the caller of an approval that counted while the run waits on for more approvers (once the run shows so). */
  answer(pending: PendingApproval): void {
    this.taken.add(pending);
  }

  /** Validates one approve/deny of plan `digest`, for a run that needs `needed` different approvers. */
  async judge(pending: PendingApproval, digest: string, needed: number): Promise<ApprovalAttempt> {
    const at = new Date().toISOString();
    const ignore = async (approver: string | null, why: string, refusalCode?: ApprovalRefusal): Promise<ApprovalAttempt> => {
      const attempt: ApprovalAttempt = { signal: pending.signal, approver, verdict: 'ignored', reason: why, at, ...(refusalCode !== undefined ? { refusal: refusalCode } : {}) };
      this.ignored.push(attempt);
      this.ignoredInAll += 1;
      if (this.ignored.length > ATTEMPTS_SHOWN) this.ignored.shift();
      await this.audit(`iac_${pending.signal}_ignored`, approver ?? 'unknown', 'ignored', why);
      return attempt;
    };
    if (pending.oversizedChars !== undefined) return ignore(null, `the payload is ${pending.oversizedChars} characters of JSON, more than ${MAX_PAYLOAD_CHARS}`);
    const parsed = iacApprovalPayloadSchema.safeParse(pending.payload);
    if (!parsed.success) return ignore(null, `malformed payload (${describeIssues(parsed.error.issues)}); send {"approver", "reason", "code", "planDigest": "${digest}"}`);
    const { approver, reason, code, planDigest } = parsed.data;
    if (approver === this.requester) return ignore(approver, `${approver} requested this change and cannot ${pending.signal} it`);
    if (pending.signal === 'approve' && this.given.some((given) => given.approver === approver)) {
      return ignore(approver, `${approver} approved this run already; it needs ${needed} different approvers`);
    }
    if (planDigest !== digest) return ignore(approver, `PLAN_STALE: the ${pending.signal} names plan ${planDigest}, but this run holds plan ${digest}`);
    const { workflowId, runId } = workflowInfo();
    let proof;
    try {
      proof = await storeActivities().verifyApproval({ approver, code: code ?? null, use: `${workflowId}/${runId}/${this.inbox.nextProofCheck()}` });
    } catch (err) {
      if (isCancellation(err)) throw err;
      const error = failureCode(err, 'STORE_UNAVAILABLE');
      return ignore(approver, `the approval could not be checked (${error.code}: ${error.message}); send it again`);
    }
    if (proof.verdict === 'unlisted') return ignore(approver, `${approver} is not on the approvers list`);
    if (proof.verdict === 'unverified') return ignore(approver, `${proof.refusal ?? 'APPROVAL_UNVERIFIED'}: ${proof.why}`, proof.refusal ?? 'APPROVAL_UNVERIFIED');
    return { signal: pending.signal, approver, verdict: 'accepted', reason, at };
  }
}
