import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalPayload, DestroyPayload, ExtendPayload, SandboxStatus } from '../domain/lifecycle-messages';
import type { ResourceRef } from '../domain/resources';
import type { IdentifiedRequest } from '../domain/sandbox-request';

/** Workflow type name (DESIGN §11). */
export const SANDBOX_LIFECYCLE_WORKFLOW = 'sandboxLifecycle';

/** Signals for people in the Temporal UI: the payload is checked inside the workflow. */
export const approveSignal = defineSignal<[ApprovalPayload]>('approve');
export const denySignal = defineSignal<[ApprovalPayload]>('deny');

/** Updates for programs: the caller hears accept or reject at once. */
export const extendUpdate = defineUpdate<SandboxStatus, [ExtendPayload]>('extend');
export const destroyUpdate = defineUpdate<SandboxStatus, [DestroyPayload]>('destroy');

/** Lists what the sandbox holds, through its adapter (READY only). */
export const resourcesUpdate = defineUpdate<ResourceRef[], []>('listResources');

export const statusQuery = defineQuery<SandboxStatus>('status');

export interface LifecycleInput {
  readonly request: IdentifiedRequest;
  /** sha256 of the canonical request text; a repeated id must repeat it. */
  readonly requestDigest: string;
}
