/**
 * The package entry, `cloud-sandbox-plane`: the client SDK agents and tools use to get
 * and manage sandboxes (`sandboxes.iac` for infrastructure as code in them and its
 * promotion; `sandboxes.events` and `followEvents` for what changed and why; through
 * `StoreClient`, policy, approvers, audit, leaks, hosts and targets),
 * its request schema, status and error types. Everything else in
 * `dist/` is internal and unreachable through the package's `exports`.
 *
 * @example
 * import { SandboxClient } from 'cloud-sandbox-plane';
 * const sandboxes = await SandboxClient.connect({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'sandboxplane' });
 */
import type * as base from './client/plane-client';
import type * as client from './client/sandbox-client';
import * as errorCodes from './domain/error-codes';
import type * as messages from './domain/lifecycle-messages';
import type * as request from './domain/sandbox-request';
import type * as states from './domain/sandbox-states';

// Re-exported by name: each of these carries its own JSDoc where it is declared.
export { withTimeLeft } from './client/status-view';
export { SandboxClient, generateSandboxId, requestDigest, type ApprovalOutcome, type CreateWait, type ForkRequest, type SandboxSummary } from './client/sandbox-client';
export type { FamilyOutcome, ForkResult, SandboxTree } from './client/sandbox-family';
export { StoreClient, type StoreClientOptions } from './client/store-client';
export { GatewayClient, type GatewayClientOptions } from './client/gateway-client';
export type { ApiKeyRecord, NewApiKey } from './domain/api-keys';
export { IacClient, generateIacRunId, type IacRequest, type IacRunSummary, type IacWaitOptions } from './client/iac-client';
export { synthesizeCdkApp, type SynthesizedStack } from './client/cdk-synth';
export type { IacApproval, IacProof, IacResourceRow, IacResourceStatus, IacState, IacStatus, ShownPlan } from './domain/iac/iac-run';
export type { IacPlan, PlanChange, PropertyChange, SecurityFinding, UnsupportedResource } from './domain/iac/plan';
export type { NewTargetInput, TargetRecord, TargetAuditEntry } from './domain/targets';
export { AesGcmPayloadCodec, CodecKeysMissingError, generateCodecKey, formatCodecKey, parseCodecKeys, readCodecKeysFile, type CodecKey } from './codec';
export type { ClientConfig } from './domain/client-config';
export { SandboxPlaneError, isSandboxPlaneError, type ErrorDetails } from './domain/errors';
export type { ApprovalAttempt, SandboxStatus } from './domain/lifecycle-messages';
export type { HostView } from './domain/hosts';
export type { ResourceListing, ResourceRef, UnlistedKind, UnlistedService } from './domain/resources';
export type { ApproverRecord, AuditEntry, LeakRecord, NewPolicyInput, PolicyRecord } from './domain/store-commands';
export { EVENT_KINDS, EVENT_REASONS, type EventKind, type EventReason, type PlaneEvent } from './domain/events';
export type { EventPage, EventsQuery } from './domain/event-query';
export type { FollowQuery } from './client/event-follow';
export { sandboxRequestSchema } from './domain/sandbox-request';
export { SANDBOX_STATES, TERMINAL_STATES } from './domain/sandbox-states';
export { startTracing, stopTracing, type PlaneService } from './telemetry/tracing';
export { loadTraceExportSettings, type TraceExportSettings } from './config/config';

// Declared here only to carry the JSDoc their declarations lack.

/** How `SandboxClient.create` waits (`wait`) and for how long at most (`timeoutMs`). */
export type CreateOptions = client.CreateOptions;
/** Narrows `SandboxClient.list` by state and principal, and caps the number of rows. */
export type ListFilter = client.ListFilter;
/** What `new SandboxClient(...)` takes: a connected Temporal `Client` and the workers' task queue. */
export type SandboxClientOptions = client.SandboxClientOptions;
/** What `SandboxClient.connect` takes: the Temporal address, namespace and the workers' task queue. */
export type ConnectOptions = base.ConnectOptions;
/** Every error code, with its category (CLI exit class), retry verdict and hint. */
export const ERROR_CODES: typeof errorCodes.ERROR_CODES = errorCodes.ERROR_CODES;
/** A stable error code: `SandboxPlaneError.code`, `{"error": {"code"}}` in the CLI's JSON. */
export type ErrorCode = errorCodes.ErrorCode;
/** What `SandboxClient.create` accepts (before defaults are filled in). */
export type SandboxRequestInput = request.SandboxRequestInput;
/** A lifecycle state, `REQUESTED` … `DESTROY_FAILED`; `SANDBOX_STATES` lists them in order. */
export type SandboxState = states.SandboxState;
/** Payload of the `approve` and `deny` signals (what the Temporal UI sends). */
export type ApprovalPayload = messages.ApprovalPayload;
/** Payload of the `extend` update. */
export type ExtendPayload = messages.ExtendPayload;
/** Payload of the `destroy` update. */
export type DestroyPayload = messages.DestroyPayload;
