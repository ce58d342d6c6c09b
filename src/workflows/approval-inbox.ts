import { log } from '@temporalio/workflow';
import type { ApprovalAttempt } from '../domain/lifecycle-messages';
import type { SandboxState } from '../domain/sandbox-states';

/** An approve or deny waiting to be judged: from a signal (no one waits) or the `decide` update. */
export interface PendingApproval {
  readonly signal: 'approve' | 'deny';
  readonly payload: unknown;
  /** Set once judged; the `decide` update waits for it. */
  verdict?: ApprovalAttempt;
  /** Set when the sandbox stopped awaiting approval before this one was judged. */
  tooLate?: boolean;
  /** `true` for the `decide` update (a caller waits), absent for signals. */
  readonly fromUpdate?: boolean;
  /** Set instead of judging the payload when it is larger than the lifecycle takes. */
  readonly oversizedChars?: number;
  /** Set when the run handed over to a new run before judging it: the caller asks again. */
  continued?: boolean;
}

/** A signal still to be judged, as the next run gets it: its payload, never a waiting caller. */
export type CarriedApproval = Pick<PendingApproval, 'signal' | 'payload' | 'oversizedChars'>;

/** Signals and updates beyond this many waiting are dropped: a flood must not grow memory without bound. */
const INBOX_LIMIT = 100;

/** The approves and denies that arrived and wait to be judged, oldest first. */
export class ApprovalInbox {
  private readonly waiting: PendingApproval[];
  /** Approvals judged in this run: names each proof check, so a retried check is not a replayed code. */
  private proofChecks = 0;

  constructor(carried: readonly CarriedApproval[]) {
    this.waiting = [...carried];
  }

  get size(): number {
    return this.waiting.length;
  }

  /** Whether one more would be dropped. */
  get full(): boolean {
    return this.waiting.length >= INBOX_LIMIT;
  }

  /** The oldest request still to be judged. */
  take(): PendingApproval | undefined {
    return this.waiting.shift();
  }

  /** The number of the next proof check in this run. */
  nextProofCheck(): number {
    this.proofChecks += 1;
    return this.proofChecks;
  }

  /** Queues an approve/deny for judging; `false` when the inbox is full (the request is dropped). */
  enqueue(pending: PendingApproval): boolean {
    if (this.waiting.length >= INBOX_LIMIT) {
      log.warn('approval inbox full; request dropped', { signal: pending.signal });
      return false;
    }
    this.waiting.push(pending);
    return true;
  }

  /** Answers every request still waiting once the sandbox (now `state`) no longer awaits approval. */
  close(state: SandboxState): void {
    this.closeWith(`the sandbox is ${state}, no longer awaiting approval`);
  }

  /** Answers every request still waiting with `reason`: what it waited for is over. */
  closeWith(reason: string): void {
    for (const pending of this.waiting.splice(0)) {
      pending.tooLate = true;
      pending.verdict = { signal: pending.signal, approver: null, verdict: 'ignored', reason, at: new Date().toISOString() };
    }
  }

  /** Tells every waiting `decide` caller to send again (to the next run); signals stay queued to be carried. */
  releaseWaitingDecisions(): void {
    for (const pending of this.waiting) {
      if (pending.fromUpdate === true) pending.continued = true;
    }
  }

  /** The signals the next run judges; waiting `decide` updates are asked to send again instead. */
  carried(): CarriedApproval[] {
    return this.waiting.filter((pending) => pending.fromUpdate !== true).map(({ signal, payload, oversizedChars }) => ({ signal, payload, oversizedChars }));
  }
}
