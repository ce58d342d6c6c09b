import { workflowInfo } from '@temporalio/workflow';
import type { Placement } from '../domain/hosts';
import type { ApprovalAttempt } from '../domain/lifecycle-messages';
import type { IdentifiedRequest } from '../domain/sandbox-request';
import { statusOf, statusWithoutCredentials, type Approval, type LifecycleError, type OperationRecord, type Phase, type SandboxRecord } from '../domain/lifecycle-record';
import { hostActivities, storeActivities } from './activity-routes';
import { ApprovalInbox, type CarriedApproval } from './approval-inbox';
import { AuditJournal, type Operation } from './audit-journal';
import { ExtendRateLimit } from './extend-rate-limit';
import { IacStackLocks, type CarriedIacLocks } from './iac-stack-locks';
import { showRecord } from './lifecycle-display';
import { UsageMeter } from './usage-meter';

/** Who asked for the sandbox to end early, and why. */
export interface DestroyRequest {
  readonly reason: string;
  readonly actor: string;
}

/** A pause asked for (DESIGN §15): the READY loop takes the snapshot and removes the container, then says how it went. */
export interface PauseRequest {
  readonly actor: string;
  outcome?: { readonly paused: true } | { readonly error: LifecycleError };
}

/** The approval attempts status shows: the most recent ones (the audit trail has them all). */
const APPROVAL_ATTEMPTS_SHOWN = 20;

/**
 * A run continues as new past this many history events (or when Temporal suggests it):
 * well below the server's limits, so a flood of signals or updates never gets the run
 * terminated — which would leak its sandbox (DESIGN §2).
 */
export const HISTORY_EVENTS_BEFORE_CONTINUE = 2_000;

/** What a run hands to the next one when it continues as new. */
export interface CarriedLifecycle {
  readonly record: SandboxRecord;
  readonly step: number;
  readonly unrecorded: readonly OperationRecord[];
  readonly extendTimesMs: readonly number[];
  readonly destroyRequest: DestroyRequest | null;
  /** Signals still to be judged (their payloads); waiting `decide` updates are asked to send again instead. */
  readonly inbox: readonly CarriedApproval[];
  /** The stacks IaC runs hold or wait for. */
  readonly iacLocks: CarriedIacLocks;
}

/**
 * A lifecycle's record and the parts that serve it: the audit journal, the approval
 * inbox, the extend rate limit. Every change of phase goes through {@link enter}, which
 * records it in the journal and only then shows it (status, search attributes, details).
 */
export class LifecycleContext {
  private current: SandboxRecord;
  /** Set while a transition is being recorded: validators judge by where the sandbox is going. */
  private next: Phase | undefined;
  readonly journal: AuditJournal;
  readonly inbox: ApprovalInbox;
  readonly extendLimit: ExtendRateLimit;
  readonly iacLocks: IacStackLocks;
  /** Usage reports to the store (DESIGN §19); nothing to carry: each run settles its own. */
  readonly usage: UsageMeter;
  destroyRequest: DestroyRequest | undefined;
  /** Asked by the `pause` and `resume` updates; never carried: a caller whose run hands over sends again. */
  pauseRequest: PauseRequest | undefined;
  resumeRequest: { readonly actor: string; taken?: boolean } | undefined;
  /** The snapshot, restore or pause under way: one at a time, and no IaC run takes a stack meanwhile. */
  stateChange: 'snapshot' | 'restore' | 'pause' | undefined;
  /** Set once the run is handing over to a new run: waiting updates are told to ask again. */
  continuing = false;

  constructor(record: SandboxRecord, carried?: Omit<CarriedLifecycle, 'record'>) {
    this.current = record;
    this.journal = new AuditJournal(carried?.step ?? 0, carried?.unrecorded ?? []);
    this.inbox = new ApprovalInbox(carried?.inbox ?? []);
    this.extendLimit = new ExtendRateLimit(carried?.extendTimesMs ?? []);
    this.iacLocks = new IacStackLocks(carried?.iacLocks ?? []);
    this.usage = new UsageMeter(() => this.current.request);
    this.destroyRequest = carried?.destroyRequest ?? undefined;
  }

  /** What the next run needs to go on exactly where this one stops. */
  carried(): CarriedLifecycle {
    return {
      record: this.current,
      ...this.journal.carried(),
      extendTimesMs: this.extendLimit.carried(),
      destroyRequest: this.destroyRequest ?? null,
      inbox: this.inbox.carried(),
      iacLocks: this.iacLocks.carried(),
    };
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

  /** A paused sandbox runs nowhere: a resume places it again, on whichever host has room. */
  unplaced(): void {
    this.show({ ...this.current, host: null });
  }

  /** Records where the sandbox runs: from now on its runtime activities go to that host's queue. */
  placed(placement: Placement): void {
    this.show({ ...this.current, host: placement });
  }

  /** Whether this run's history is long enough to hand over to a new run. */
  historyIsLong(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= HISTORY_EVENTS_BEFORE_CONTINUE;
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

  /**
   * Records the move to `phase` first and shows it after: whoever sees the new state
   * in status, the UI or a search also finds it in the audit trail.
   */
  async enter<P extends Phase>(phase: P, waitingFor: string, operations: Operation | readonly Operation[]): Promise<P> {
    const next = { ...this.current, phase, waitingFor };
    this.next = phase;
    try {
      await this.journal.audit(operations, next);
    } finally {
      this.next = undefined;
    }
    this.show(next);
    return phase;
  }

  /**
   * Shows a phase without recording it here: screening records its own rows (and the
   * placement it made, shown in the same upsert), and teardown records once the runtime is gone.
   */
  adopt<P extends Phase>(phase: P, waitingFor: string, placement?: Placement): P {
    this.show({ ...this.current, phase, waitingFor, ...(placement !== undefined ? { host: placement } : {}) });
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

  /** Shows the initial record (search attributes and details) once, at the start; who asked, for a request that was admitted. */
  showInitial(requester?: IdentifiedRequest): void {
    showRecord(this.current, this.current, requester);
  }

  private show(record: SandboxRecord): void {
    const before = this.current;
    this.current = record;
    showRecord(before, record);
  }
}
