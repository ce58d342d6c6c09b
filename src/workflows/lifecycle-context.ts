import { ActivityCancellationType, log, proxyActivities, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_ERROR_TYPES } from '../domain/error-codes';
import type { ApprovalAttempt } from '../domain/lifecycle-messages';
import type { OperationRecord } from '../domain/lifecycle-record';
import {
  expiresAtMsOf,
  snapshotOf,
  stateOf,
  statusOf,
  statusWithoutCredentials,
  type Approval,
  type Phase,
  type SandboxRecord,
} from '../domain/lifecycle-record';
import { SandboxExpiresAt, SandboxState as SandboxStateKey } from '../domain/search-attributes';

const nonRetryableErrorTypes = [...NON_RETRYABLE_ERROR_TYPES];

// No attempt cap: giving up on the projection would end the workflow, and with it the
// TTL timer that tears the sandbox down. Non-retryable taxonomy codes still stop at once.
export const projection = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumInterval: '1 minute', nonRetryableErrorTypes },
});

export const runtime = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  // On cancellation, wait until a provision has really stopped: tearing down while it
  // still runs would let it create a container after the teardown.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '2 seconds', maximumAttempts: 5, nonRetryableErrorTypes },
});

/** One audit row, as the workflow describes it; the step number is added when it is recorded. */
export interface Operation {
  readonly action: string;
  readonly actor: string;
  readonly effect: string;
  readonly reason?: string | null;
  readonly summary?: Record<string, unknown>;
}

/** An approve or deny waiting to be judged: from a signal (no one waits) or the `decide` update. */
export interface PendingApproval {
  readonly signal: 'approve' | 'deny';
  readonly payload: unknown;
  /** Set once judged; the `decide` update waits for it. */
  verdict?: ApprovalAttempt;
  /** Set when the sandbox stopped awaiting approval before this one was judged. */
  tooLate?: boolean;
}

/** Who asked for the sandbox to end early, and why. */
export interface DestroyRequest {
  readonly reason: string;
  readonly actor: string;
}

/** Signals and updates beyond this many waiting are dropped: a flood must not grow memory without bound. */
const INBOX_LIMIT = 100;

/**
 * The one mutable thing of a lifecycle: its record, and the requests that arrived for
 * it. Every change of phase goes through {@link enter}, which numbers the audit step,
 * records it, and only then shows it (status, search attributes, the UI's details).
 */
export class LifecycleContext {
  private current: SandboxRecord;
  /** Set while a transition is being recorded: validators judge by where the sandbox is going. */
  private next: Phase | undefined;
  private step = 0;
  destroyRequest: DestroyRequest | undefined;
  readonly inbox: PendingApproval[] = [];

  constructor(record: SandboxRecord) {
    this.current = record;
  }

  get record(): SandboxRecord {
    return this.current;
  }

  get phase(): Phase {
    return this.current.phase;
  }

  /** The phase a request is judged by: the one being entered, while its audit row is written. */
  get judgedPhase(): Phase {
    return this.next ?? this.current.phase;
  }

  status() {
    return statusOf(this.current);
  }

  statusForHistory() {
    return statusWithoutCredentials(this.current);
  }

  /** The next audit step; steps are numbered by the workflow alone, in order. */
  nextStep(): number {
    this.step += 1;
    return this.step;
  }

  /** The operation with the next step number: what the projection stores. */
  numbered(operation: Operation): OperationRecord {
    return { reason: null, summary: {}, ...operation, step: this.nextStep() };
  }

  /** Appends audit rows (one activity, one transaction) with the projection snapshot of `record`. */
  async audit(operations: Operation | readonly Operation[], record: SandboxRecord = this.current): Promise<void> {
    const list = Array.isArray(operations) ? (operations as readonly Operation[]) : [operations as Operation];
    await projection.recordTransitions({ snapshot: snapshotOf(record), operations: list.map((operation) => this.numbered(operation)) });
  }

  /**
   * Records the move to `phase` first and shows it after: whoever sees the new state
   * in status, the UI or a search also finds it in the audit trail.
   */
  async enter<P extends Phase>(phase: P, waitingFor: string, operations: Operation | readonly Operation[]): Promise<P> {
    const next = { ...this.current, phase, waitingFor };
    this.next = phase;
    try {
      await this.audit(operations, next);
    } finally {
      this.next = undefined;
    }
    this.show(next);
    return phase;
  }

  /** Shows a phase without recording it here: screening records its own rows, and teardown records once the runtime is gone. */
  adopt<P extends Phase>(phase: P, waitingFor: string): P {
    this.show({ ...this.current, phase, waitingFor });
    return phase;
  }

  /** Replaces the current phase's data without a change of state (an extension, the expiry warning). */
  revise(phase: Phase, waitingFor: string = this.current.waitingFor): void {
    this.show({ ...this.current, phase, waitingFor });
  }

  approved(approval: Approval): void {
    this.current = { ...this.current, approval };
  }

  noteAttempt(attempt: ApprovalAttempt): void {
    this.current = { ...this.current, approvalAttempts: [...this.current.approvalAttempts, attempt] };
  }

  /** Queues an approve/deny for judging; `false` when the inbox is full (the request is dropped). */
  enqueue(pending: PendingApproval): boolean {
    if (this.inbox.length >= INBOX_LIMIT) {
      log.warn('approval inbox full; request dropped', { signal: pending.signal });
      return false;
    }
    this.inbox.push(pending);
    return true;
  }

  /** Answers every request still waiting once the sandbox no longer awaits approval. */
  closeInbox(): void {
    const state = stateOf(this.current.phase);
    for (const pending of this.inbox.splice(0)) {
      pending.tooLate = true;
      pending.verdict = {
        signal: pending.signal,
        approver: null,
        verdict: 'ignored',
        reason: `the sandbox is ${state}, no longer awaiting approval`,
        at: new Date().toISOString(),
      };
    }
  }

  private show(record: SandboxRecord): void {
    const before = this.current;
    this.current = record;
    const expiresAtMs = expiresAtMsOf(record.phase);
    if (stateOf(before.phase) !== stateOf(record.phase) || expiresAtMsOf(before.phase) !== expiresAtMs || before === record) {
      upsertSearchAttributes([
        { key: SandboxStateKey, value: stateOf(record.phase) },
        { key: SandboxExpiresAt, value: expiresAtMs === null ? null : new Date(expiresAtMs) },
      ]);
    }
    if (before.waitingFor !== record.waitingFor || before === record) setCurrentDetails(record.waitingFor);
  }

  /** Shows the initial record (search attributes and details) once, at the start. */
  showInitial(): void {
    this.show(this.current);
  }
}
