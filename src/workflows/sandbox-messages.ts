import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { LIFECYCLE_MESSAGES } from '../domain/contract-names';
import type { ApprovalPayload, AwaitStatePayload, DecidePayload, DecideResult, DestroyPayload, ExtendPayload, SandboxStatus } from '../domain/lifecycle-messages';
import type { ResourceRef } from '../domain/resources';
import type { ActorPayload, RestorePayload, SnapshotSummary } from '../domain/snapshots';
import type { IdentifiedRequest } from '../domain/sandbox-request';
import type { CarriedLifecycle } from './lifecycle-context';

export { SANDBOX_LIFECYCLE_WORKFLOW } from '../domain/contract-names';

/** Signals for people in the Temporal UI: the payload is checked inside the workflow. */
export const approveSignal = defineSignal<[ApprovalPayload]>(LIFECYCLE_MESSAGES.approveSignal);
export const denySignal = defineSignal<[ApprovalPayload]>(LIFECYCLE_MESSAGES.denySignal);

/** The sweep hands a mismatch it saw to the sandbox's health watch (DESIGN §8); no payload. */
export const checkHealthSignal = defineSignal<[]>(LIFECYCLE_MESSAGES.checkHealthSignal);

/** Updates for programs: the caller hears accept or reject at once. */
export const extendUpdate = defineUpdate<SandboxStatus, [ExtendPayload]>(LIFECYCLE_MESSAGES.extendUpdate);
export const destroyUpdate = defineUpdate<SandboxStatus, [DestroyPayload]>(LIFECYCLE_MESSAGES.destroyUpdate);

/** Lists what the sandbox holds, through its adapter (READY only). */
export const resourcesUpdate = defineUpdate<ResourceRef[], []>(LIFECYCLE_MESSAGES.listResourcesUpdate);

/** Waits inside the workflow until the sandbox is screened, READY or ended; `create` sends it with the start. */
export const awaitStateUpdate = defineUpdate<SandboxStatus, [AwaitStatePayload]>(LIFECYCLE_MESSAGES.awaitStateUpdate);

/** Approve or deny from a program: judged like the signals, and the verdict is the result. */
export const decideUpdate = defineUpdate<DecideResult, [DecidePayload]>(LIFECYCLE_MESSAGES.decideUpdate);

/**
 * Snapshots (DESIGN §15): `snapshot` answers with the snapshot kept; `restore`, `pause` and
 * `resume` with the status once done (PAUSED: no container; resumed: READY, maybe elsewhere).
 */
export const snapshotUpdate = defineUpdate<SnapshotSummary, [ActorPayload]>(LIFECYCLE_MESSAGES.snapshotUpdate);
export const restoreUpdate = defineUpdate<SandboxStatus, [RestorePayload]>(LIFECYCLE_MESSAGES.restoreUpdate);
export const pauseUpdate = defineUpdate<SandboxStatus, [ActorPayload]>(LIFECYCLE_MESSAGES.pauseUpdate);
export const resumeUpdate = defineUpdate<SandboxStatus, [ActorPayload]>(LIFECYCLE_MESSAGES.resumeUpdate);

export const statusQuery = defineQuery<SandboxStatus>(LIFECYCLE_MESSAGES.statusQuery);

export interface LifecycleInput {
  readonly request: IdentifiedRequest;
  /** Set only by the workflow itself when it continues as new. */
  readonly carried?: CarriedLifecycle;
}
