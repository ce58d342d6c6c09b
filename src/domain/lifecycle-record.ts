import type { Placement } from './hosts';
import { clientConfigFor, type SandboxCredentials } from './client-config';
import type { ErrorCode } from './error-codes';
import type { LifecycleSettings } from './lifecycle-settings';
import type { ApprovalAttempt, HealthStatus, SandboxHealth, SandboxStatus } from './lifecycle-messages';
import type { IdentifiedRequest } from './sandbox-request';
import type { SandboxState, TerminalState } from './sandbox-states';
import type { Decision } from './screening';

/** Where a provisioned sandbox runs, and the credentials its emulator minted for it. */
export interface RuntimeHandle {
  readonly endpoint: string;
  readonly region: string;
  /** Runtime handles (container ids), for audit and teardown checks. */
  readonly runtimeIds: readonly string[];
  /**
   * The Docker engine that runs them (its `docker info` ID), so teardown on another
   * engine is an error rather than a false "nothing found"; absent for runtimes without one.
   */
  readonly engineId?: string;
  /**
   * The warm pool slot its container waited in before this sandbox claimed it; the
   * container's sandbox-id label keeps the slot id (labels are immutable, DESIGN §13).
   */
  readonly warmPoolSlot?: string;
  /**
   * The sandbox's own access key, verified by its emulator and scoped to the granted
   * services (moto). Absent for emulators that check none, and in runs from before
   * credentials were minted: status then hands out the adapter's fake ones. It is in the
   * workflow's state and history, which the payload codec encrypts; never in the projection.
   */
  readonly credentials?: SandboxCredentials;
}

/**
 * A fork's family (DESIGN §15): the sandbox its snapshot was taken of, the first sandbox
 * of the tree, and that root's expiry when the fork was screened (`null`: the root had
 * ended, so nothing caps the fork but its own TTL). The store works it out; never the caller.
 */
export interface Lineage {
  readonly parent: string;
  readonly root: string;
  readonly rootExpiresAt: string | null;
}

/** The verdict of screening and the operator settings it was made under. */
export interface Screening {
  readonly decision: Decision;
  readonly settings: LifecycleSettings;
  /** Set for a fork. */
  readonly lineage?: Lineage;
}

/** `expiresAtMs`, moved no later than the expiry of the root of `lineage` (`rootExpiresAtMs`, when live): a fork never outlives its root. */
export function clampToRoot(expiresAtMs: number, rootExpiresAtMs: number | null | undefined): { expiresAtMs: number; clamped: boolean } {
  if (rootExpiresAtMs === null || rootExpiresAtMs === undefined || expiresAtMs <= rootExpiresAtMs) return { expiresAtMs, clamped: false };
  return { expiresAtMs: rootExpiresAtMs, clamped: true };
}

export interface Approval {
  readonly approver: string;
  readonly reason: string;
  readonly at: string;
}

export interface LifecycleError {
  readonly code: ErrorCode;
  readonly message: string;
}

/** What the health watch knows of a READY sandbox's emulator (DESIGN §2). */
export interface HealthWatch {
  readonly status: HealthStatus;
  readonly checkedAtMs: number | null;
  /** When the watch looks next. */
  readonly nextCheckAtMs: number;
  /** Restarts after the emulator died; a second death ends the sandbox FAILED. */
  readonly restarts: number;
  readonly lastRestartAtMs: number | null;
}

/** A state a sandbox never leaves. */
export type EndState = TerminalState;

/**
 * The phases of DESIGN §2, each with the data it owns: what exists only once screened
 * (the decision), once provisioned (the runtime) or once ending (why) lives in the
 * phases that have it, so no field is "null until later".
 */
export type Phase =
  | { readonly name: 'requested' }
  | { readonly name: 'awaiting_approval'; readonly screening: Screening; readonly deadlineMs: number }
  | {
      readonly name: 'provisioning';
      readonly screening: Screening;
      /** Set when a PAUSED sandbox resumes: it is provisioned anew and its snapshot put back, its expiry and key kept. */
      readonly resume?: Resumption;
    }
  | {
      readonly name: 'ready';
      readonly screening: Screening;
      readonly runtime: RuntimeHandle;
      readonly expiresAtMs: number;
      /** The "expiring" event was recorded for the current expiry. */
      readonly expiringRecorded: boolean;
      readonly health: HealthWatch;
    }
  | ({
      /** No container (DESIGN §15): its state is a snapshot; the TTL keeps running. */
      readonly name: 'paused';
      readonly screening: Screening;
      readonly pausedAtMs: number;
    } & Resumption)
  | {
      readonly name: 'ending';
      readonly screening: Screening;
      /** `null` when provisioning was cut short: whatever it made is torn down all the same. */
      readonly runtime: RuntimeHandle | null;
      readonly expiresAtMs: number | null;
      readonly reason: string;
      readonly actor: string;
      /** Set when the sandbox ends because something failed (its emulator died): it ends FAILED, not DESTROYED. */
      readonly failure?: LifecycleError;
      /** The watch as it was when READY ended; absent when provisioning was cut short. */
      readonly health?: HealthWatch;
    }
  | {
      readonly name: 'ended';
      readonly state: EndState;
      readonly screening: Screening | null;
      readonly runtime: RuntimeHandle | null;
      readonly expiresAtMs: number | null;
      readonly error: LifecycleError | null;
    };

/** What a paused sandbox resumes from, and what of its READY self it keeps (its expiry moves on with `extend`). */
export interface Resumption {
  readonly snapshotId: string;
  readonly expiresAtMs: number;
  readonly expiringRecorded: boolean;
  readonly health: HealthWatch;
  /** Where it answered before the pause: a resumed sandbox may answer elsewhere. */
  readonly endpoint: string;
  /** Its key, which the resumed emulator holds again (encrypted in history, as a READY runtime's is). */
  readonly credentials?: SandboxCredentials;
}

export type PhaseName = Phase['name'];
export type PhaseNamed<N extends PhaseName> = Extract<Phase, { name: N }>;

/** Everything the lifecycle knows: `status` and the projection snapshot are both derived from it. */
export interface SandboxRecord {
  readonly workflowId: string;
  /** The first run of the workflow: the projection row's owner. */
  readonly runId: string;
  readonly request: IdentifiedRequest;
  readonly requestDigest: string;
  readonly createdAtMs: number;
  readonly phase: Phase;
  /** What the sandbox is waiting for, in plain words (also the UI's current details). */
  readonly waitingFor: string;
  readonly approval: Approval | null;
  readonly approvalAttempts: readonly ApprovalAttempt[];
  /** The docker host the sandbox was placed on; absent before placement (and in runs from before hosts). */
  readonly host?: Placement | null;
}

/** What the projection keeps of one sandbox; never credentials. */
export interface SandboxSnapshot {
  readonly id: string;
  readonly workflowId: string;
  /** The lifecycle run that owns the row (its first run id). */
  readonly runId: string;
  readonly principal: string;
  readonly capability: string;
  readonly adapter: string;
  readonly services: readonly string[];
  readonly state: SandboxState;
  readonly purpose: string | null;
  readonly labels: Readonly<Record<string, string>>;
  readonly requestDigest: string;
  readonly endpoint: string | null;
  readonly expiresAt: string | null;
  readonly createdAt: string;
}

/** One audit row. `summary` is already redacted by the caller. */
export interface OperationRecord {
  /**
   * The workflow run that wrote it (absent for the sweep's rows):
   * with the step, what makes a retried write idempotent, and a reset run's rows its own.
   */
  readonly runId?: string;
  readonly step: number;
  readonly action: string;
  readonly actor: string;
  readonly effect: string;
  readonly reason: string | null;
  readonly summary: Readonly<Record<string, unknown>>;
}

/** One audit row as read back from the store: its place in its table, the workflow and run that wrote it (`null`: written outside a run), and when. */
export interface StoredAuditRow extends Omit<OperationRecord, 'runId'> {
  readonly seq: number;
  readonly workflowId: string;
  readonly runId: string | null;
  readonly at: string;
}

const STATE_OF_PHASE: Readonly<Record<Exclude<PhaseName, 'ended'>, SandboxState>> = {
  requested: 'REQUESTED',
  awaiting_approval: 'AWAITING_APPROVAL',
  provisioning: 'PROVISIONING',
  ready: 'READY',
  paused: 'PAUSED',
  ending: 'DESTROYING',
};

export function stateOf(phase: Phase): SandboxState {
  return phase.name === 'ended' ? phase.state : STATE_OF_PHASE[phase.name];
}

function screeningOf(phase: Phase): Screening | null {
  return phase.name === 'requested' ? null : phase.screening;
}

export function runtimeOf(phase: Phase): RuntimeHandle | null {
  return phase.name === 'ready' || phase.name === 'ending' || phase.name === 'ended' ? phase.runtime : null;
}

export function expiresAtMsOf(phase: Phase): number | null {
  if (phase.name === 'provisioning') return phase.resume?.expiresAtMs ?? null;
  return phase.name === 'ready' || phase.name === 'paused' || phase.name === 'ending' || phase.name === 'ended' ? phase.expiresAtMs : null;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

const UNWATCHED: SandboxHealth = { status: 'unknown', checkedAt: null, restarts: 0 };

function healthOf(phase: Phase): SandboxHealth {
  const watch = phase.name === 'ready' || phase.name === 'ending' || phase.name === 'paused' ? phase.health : undefined;
  if (watch === undefined) return UNWATCHED;
  return { status: watch.status, checkedAt: iso(watch.checkedAtMs), restarts: watch.restarts };
}

/** The `status` query's answer. The client config (credentials) appears only while READY. */
export function statusOf(record: SandboxRecord): SandboxStatus {
  const { request, phase } = record;
  const decision = screeningOf(phase)?.decision ?? null;
  const runtime = phase.name === 'ready' ? phase.runtime : null;
  return {
    id: request.id,
    workflowId: record.workflowId,
    state: stateOf(phase),
    principal: request.principal,
    capability: request.capability,
    adapter: request.adapter,
    services: request.services,
    purpose: request.purpose ?? null,
    labels: request.labels,
    createdAt: new Date(record.createdAtMs).toISOString(),
    expiresAt: iso(expiresAtMsOf(phase)),
    timeLeftSeconds: null,
    endpoint: runtime?.endpoint ?? null,
    region: runtime?.region ?? null,
    runtimeIds: runtimeOf(phase)?.runtimeIds ?? [],
    health: healthOf(phase),
    host: record.host?.hostId ?? null,
    clientConfig: runtime === null ? null : clientConfigFor(request.adapter, runtime.endpoint, runtime.region, runtime.credentials),
    fidelity: decision?.fidelity ?? {},
    decision:
      decision === null
        ? null
        : { effect: decision.effect, reasons: decision.reasons, code: decision.code ?? null, ...(decision.details !== undefined ? { details: decision.details } : {}) },
    waitingFor: record.waitingFor,
    approval: record.approval,
    approvalAttempts: record.approvalAttempts,
    expiring: phase.name === 'ready' && phase.expiringRecorded,
    error: phase.name === 'ended' ? phase.error : null,
    requestDigest: record.requestDigest,
    parent: screeningOf(phase)?.lineage?.parent ?? null,
    root: screeningOf(phase)?.lineage?.root ?? request.id,
  };
}

/** What update results carry: they are kept in the history, so never the client config. */
export function statusWithoutCredentials(record: SandboxRecord): SandboxStatus {
  return { ...statusOf(record), clientConfig: null };
}

/** The projection row for the record, in its current state. */
export function snapshotOf(record: SandboxRecord): SandboxSnapshot {
  const { request, phase } = record;
  return {
    id: request.id,
    workflowId: record.workflowId,
    runId: record.runId,
    principal: request.principal,
    capability: request.capability,
    adapter: request.adapter,
    services: request.services,
    state: stateOf(phase),
    purpose: request.purpose ?? null,
    labels: request.labels,
    requestDigest: record.requestDigest,
    endpoint: runtimeOf(phase)?.endpoint ?? null,
    expiresAt: iso(expiresAtMsOf(phase)),
    createdAt: new Date(record.createdAtMs).toISOString(),
  };
}
