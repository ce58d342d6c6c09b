import { isCancellation, log, workflowInfo } from '@temporalio/workflow';
import { snapshotOf, type OperationRecord, type SandboxRecord } from '../domain/lifecycle-record';
import { storeActivities } from './activity-routes';
import { failureCode } from './workflow-failures';

/** One audit row, as the workflow describes it; the step number is added when it is recorded. */
export interface Operation {
  readonly action: string;
  readonly actor: string;
  readonly effect: string;
  readonly reason?: string | null;
  readonly summary?: Record<string, unknown>;
}

/** Audit rows kept while the projection is down; older ones are dropped (and logged). */
const UNRECORDED_LIMIT = 200;

/**
 * A lifecycle's audit trail: steps numbered by the workflow alone, in order, and the rows
 * the projection has not taken yet. A projection that stays down past the bounded retry
 * (STORE_UNAVAILABLE) does not stop the lifecycle: the rows wait here and go with the next
 * write, and a row left behind when the run ends is closed by the sweep (DESIGN §2, §8).
 */
export class AuditJournal {
  private readonly background: Promise<void>[] = [];

  constructor(
    private step: number,
    private unrecorded: readonly OperationRecord[],
  ) {}

  /** What the next run needs to number on without gaps and still write what waits. */
  carried(): { step: number; unrecorded: readonly OperationRecord[] } {
    return { step: this.step, unrecorded: this.unrecorded };
  }

  /** The next audit step. */
  nextStep(): number {
    this.step += 1;
    return this.step;
  }

  /** The operation with the next step number: what the projection stores. */
  numbered(operation: Operation): OperationRecord {
    return { reason: null, summary: {}, ...operation, runId: workflowInfo().runId, step: this.nextStep() };
  }

  /**
   * The operation with the step the next numbered one will get, not yet taken: for a row
   * an activity writes only sometimes. Take the step with nextStep() once it did, so
   * the steps stay without gaps.
   */
  numberedAhead(operation: Operation): OperationRecord {
    return { reason: null, summary: {}, ...operation, runId: workflowInfo().runId, step: this.step + 1 };
  }

  /** Appends audit rows (one activity, one transaction) with the projection snapshot of `record`. */
  async audit(operations: Operation | readonly Operation[], record: SandboxRecord): Promise<void> {
    const list = Array.isArray(operations) ? (operations as readonly Operation[]) : [operations as Operation];
    const pending = [...this.unrecorded, ...list.map((operation) => this.numbered(operation))];
    const sent = new Set(pending.map((operation) => operation.step));
    try {
      await storeActivities().recordTransitions({ snapshot: snapshotOf(record), operations: pending });
      // Only what this write carried: a background write may have queued rows meanwhile.
      this.unrecorded = this.unrecorded.filter((operation) => !sent.has(operation.step));
    } catch (err) {
      if (isCancellation(err)) throw err;
      const error = failureCode(err, 'STORE_UNAVAILABLE');
      log.error('projection unavailable; audit rows kept for the next write', { code: error.code, message: error.message, waiting: pending.length });
      const merged = [...this.unrecorded.filter((operation) => !sent.has(operation.step)), ...pending].sort((a, b) => a.step - b.step);
      // Bounded: the oldest rows go first, so a long outage cannot grow the carried state without end.
      this.unrecorded = merged.slice(-UNRECORDED_LIMIT);
    }
  }

  /** Writes what is still unrecorded, with the snapshot of `record`; once, at the end of a run. */
  async flush(record: SandboxRecord): Promise<void> {
    if (this.unrecorded.length > 0) await this.audit([], record);
  }

  /** Runs an audit without waiting for it: a slow projection must not hold back a timer (the expiry). */
  inBackground(operations: Operation | readonly Operation[], record: SandboxRecord): void {
    // `audit` throws only a cancellation, which the run itself handles.
    this.background.push(this.audit(operations, record).catch(() => undefined));
  }

  /** Waits for background audits (before the run ends or continues as new). */
  async settleBackground(): Promise<void> {
    await Promise.all(this.background.splice(0));
  }
}
