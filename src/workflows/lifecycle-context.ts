import { isCancellation, log, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
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
import type { Placement } from '../domain/hosts';
import { SandboxExpiresAt, SandboxHost, SandboxState as SandboxStateKey } from '../domain/search-attributes';
import { hostActivities, storeActivities } from './activity-routes';
import { failureCode } from './workflow-failures';

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
  /** `true` for the `decide` update (a caller waits), absent for signals. */
  readonly fromUpdate?: boolean;
  /** Set instead of judging the payload when it is larger than the lifecycle takes. */
  readonly oversizedChars?: number;
  /** Set when the run handed over to a new run before judging it: the caller asks again. */
  continued?: boolean;
}

/** Who asked for the sandbox to end early, and why. */
export interface DestroyRequest {
  readonly reason: string;
  readonly actor: string;
}

/** Signals and updates beyond this many waiting are dropped: a flood must not grow memory without bound. */
const INBOX_LIMIT = 100;

/** Audit rows kept while the projection is down; older ones are dropped (and logged). */
const UNRECORDED_LIMIT = 200;

/** The approval attempts status shows: the most recent ones (the audit trail has them all). */
const APPROVAL_ATTEMPTS_SHOWN = 20;

/**
 * A run continues as new past this many history events (or when Temporal suggests it):
 * well below the server's limits, so a flood of signals or updates never gets the run
 * terminated — which would leak its sandbox (DESIGN §2).
 */
export const HISTORY_EVENTS_BEFORE_CONTINUE = 2_000;

/** Extensions one sandbox may take per window. */
export const EXTENDS_PER_WINDOW = 10;
export const EXTEND_WINDOW_MS = 60_000;

/** What a run hands to the next one when it continues as new. */
export interface CarriedLifecycle {
  readonly record: SandboxRecord;
  readonly step: number;
  readonly unrecorded: readonly OperationRecord[];
  readonly extendTimesMs: readonly number[];
  readonly destroyRequest: DestroyRequest | null;
  /** Signals still to be judged (their payloads); waiting `decide` updates are asked to send again instead. */
  readonly inbox: readonly Pick<PendingApproval, 'signal' | 'payload' | 'oversizedChars'>[];
}

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
  private unrecorded: OperationRecord[] = [];
  private readonly background: Promise<void>[] = [];
  /** When recent extensions were accepted: the rate limit's window. */
  private extendTimesMs: number[] = [];
  destroyRequest: DestroyRequest | undefined;
  readonly inbox: PendingApproval[] = [];
  /** Set once the run is handing over to a new run: waiting updates are told to ask again. */
  continuing = false;
  /** Approvals judged in this run: names each proof check, so a retried check is not a replayed code. */
  proofChecks = 0;

  constructor(record: SandboxRecord, carried?: Omit<CarriedLifecycle, 'record'>) {
    this.current = record;
    if (carried !== undefined) {
      this.step = carried.step;
      this.unrecorded = [...carried.unrecorded];
      this.extendTimesMs = [...carried.extendTimesMs];
      this.inbox.push(...carried.inbox);
      this.destroyRequest = carried.destroyRequest ?? undefined;
    }
  }

  /** What the next run needs to go on exactly where this one stops. */
  carried(): CarriedLifecycle {
    const inbox = this.inbox.filter((pending) => pending.fromUpdate !== true).map(({ signal, payload, oversizedChars }) => ({ signal, payload, oversizedChars }));
    return {
      record: this.current,
      step: this.step,
      unrecorded: this.unrecorded,
      extendTimesMs: this.extendTimesMs,
      destroyRequest: this.destroyRequest ?? null,
      inbox,
    };
  }

  /** Tells every waiting `decide` caller to send again (to the next run); signals stay queued to be carried. */
  releaseWaitingDecisions(): void {
    for (const pending of this.inbox) {
      if (pending.fromUpdate === true) pending.continued = true;
    }
  }

  /** The projection's activities: on the store role's queue. */
  get projection() {
    return storeActivities();
  }

  /** The runtime's activities: on the queue of the host the sandbox was placed on. */
  get runtime() {
    return hostActivities(this.placement).runtime;
  }

  /** A short look at the runtime, on the same host queue as {@link runtime}. */
  get briefLook() {
    return hostActivities(this.placement).briefLook;
  }

  /** Whether the sandbox may hold a runtime somewhere: once it is placed on a host. */
  get mayHoldRuntime(): boolean {
    return (this.current.host ?? null) !== null;
  }

  private get placement(): Placement {
    const host = this.current.host;
    if (host === undefined || host === null) throw new Error(`sandbox ${this.current.request.id} has no docker host yet: nothing runs anywhere`);
    return host;
  }

  /** Records where the sandbox runs: from now on its runtime activities go to that host's queue. */
  placed(placement: Placement): void {
    this.current = { ...this.current, host: placement };
    upsertSearchAttributes([{ key: SandboxHost, value: placement.hostId }]);
  }

  /** Whether this run's history is long enough to hand over to a new run. */
  historyIsLong(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= HISTORY_EVENTS_BEFORE_CONTINUE;
  }

  /** `undefined` when another extension may be taken now, else why not. */
  extendRefusal(nowMs: number): string | undefined {
    const recent = this.extendTimesMs.filter((at) => at > nowMs - EXTEND_WINDOW_MS);
    if (recent.length < EXTENDS_PER_WINDOW) return undefined;
    return `at most ${EXTENDS_PER_WINDOW} extensions per ${EXTEND_WINDOW_MS / 1000} s for one sandbox; the next is possible after ${new Date(Math.min(...recent) + EXTEND_WINDOW_MS).toISOString()}`;
  }

  noteExtension(nowMs: number): void {
    this.extendTimesMs = [...this.extendTimesMs.filter((at) => at > nowMs - EXTEND_WINDOW_MS), nowMs];
  }

  /** Whether a transition is being recorded right now (its audit row is on the way). */
  get moving(): boolean {
    return this.next !== undefined;
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

  /**
   * Appends audit rows (one activity, one transaction) with the projection snapshot of
   * `record`. A projection that stays down past the bounded retry (STORE_UNAVAILABLE)
   * does not stop the lifecycle: the rows wait here and go with the next write, and a
   * row left behind when the run ends is closed by the sweep (DESIGN §2, §8).
   */
  async audit(operations: Operation | readonly Operation[], record: SandboxRecord = this.current): Promise<void> {
    const list = Array.isArray(operations) ? (operations as readonly Operation[]) : [operations as Operation];
    const pending = [...this.unrecorded, ...list.map((operation) => this.numbered(operation))];
    const sent = new Set(pending.map((operation) => operation.step));
    try {
      await this.projection.recordTransitions({ snapshot: snapshotOf(record), operations: pending });
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

  /** Writes what is still unrecorded, with the current snapshot; once, at the end of a run. */
  async flushAudit(): Promise<void> {
    if (this.unrecorded.length > 0) await this.audit([]);
  }

  /** Runs an audit without waiting for it: a slow projection must not hold back a timer (the expiry). */
  auditInBackground(operations: Operation | readonly Operation[]): void {
    // `audit` throws only a cancellation, which the run itself handles.
    this.background.push(this.audit(operations).catch(() => undefined));
  }

  /** Waits for background audits (before the run ends or continues as new). */
  async settleBackground(): Promise<void> {
    await Promise.all(this.background.splice(0));
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
    this.current = { ...this.current, approvalAttempts: [...this.current.approvalAttempts, attempt].slice(-APPROVAL_ATTEMPTS_SHOWN) };
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
