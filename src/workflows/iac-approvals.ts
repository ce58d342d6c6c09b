import { iacApprovalPayloadSchema, type IacApproval } from '../domain/iac/iac-run';
import type { ApprovalAttempt } from '../domain/lifecycle-messages';
import { storeActivities } from './activity-routes';
import { ApprovalInbox, type PendingApproval } from './approval-inbox';
import { judgeApproval } from './approval-judge';

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

  /** Validates one approve/deny of plan `digest`, for a run that needs `needed` different approvers (the rules every approval follows, and these). */
  async judge(pending: PendingApproval, digest: string, needed: number): Promise<ApprovalAttempt> {
    return judgeApproval(pending, {
      schema: iacApprovalPayloadSchema,
      example: `{"approver", "reason", "code", "planDigest": "${digest}"}`,
      requester: this.requester,
      subject: 'change',
      check: ({ approver, planDigest }) => {
        if (pending.signal === 'approve' && this.given.some((given) => given.approver === approver)) return `${approver} approved this run already; it needs ${needed} different approvers`;
        if (planDigest !== digest) return `PLAN_STALE: the ${pending.signal} names plan ${planDigest}, but this run holds plan ${digest}`;
        return undefined;
      },
      verify: (input) => storeActivities().verifyApproval(input),
      nextProofCheck: () => this.inbox.nextProofCheck(),
      ignored: async (attempt) => {
        this.ignored.push(attempt);
        this.ignoredInAll += 1;
        if (this.ignored.length > ATTEMPTS_SHOWN) this.ignored.shift();
        await this.audit(`iac_${attempt.signal}_ignored`, attempt.approver ?? 'unknown', 'ignored', attempt.reason);
      },
    });
  }
}
