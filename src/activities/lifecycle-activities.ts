import { Context, log, sleep } from '@temporalio/activity';
import type { AdapterContext, AdapterRegistry, CloudEmulatorAdapter, DestroyReport, ResourceRef } from '../adapters/cloud-emulator-adapter';
import { CloudFormationStacks } from '../adapters/cloudformation-stacks';
import { isSandboxPlaneError, SandboxPlaneError } from '../domain/errors';
import { completeResources, withStackResources, type StackResourceRow } from '../domain/resources';
import type { FeatureFlags } from '../domain/feature-flags';
import { DEFAULT_MAX_SANDBOXES, type Placement } from '../domain/hosts';
import type { Lineage, RuntimeHandle } from '../domain/lifecycle-record';
import type { LifecycleSettings } from '../domain/lifecycle-settings';
import type { PolicyEffect } from '../domain/policy';
import type { IdentifiedRequest } from '../domain/sandbox-request';
import type { SnapshotSource } from '../domain/snapshots';
import type { SandboxState } from '../domain/sandbox-states';
import { screenRequest, type Decision } from '../domain/screening';
import { ADAPTER_NAMES, type AdapterName } from '../domain/service-catalog';
import type { OperationRecord, SandboxSnapshot, Store } from '../store';
import type { SecretBox } from '../crypto/secret-box';
import { usageReportOfAudit, type ContainerUsage } from '../domain/usage';
import { withTaxonomy } from './activity-failure';
import { verifyApprovalCode, type ApprovalProof } from './approver-proof';

/** What the store role's lifecycle activities need: the projection, and who is live to place on. */
export interface ProjectionActivityDeps {
  readonly store: Store;
  /** The store's key for approvers' TOTP secrets. */
  readonly secrets: SecretBox;
  readonly flags: FeatureFlags;
  readonly lifecycle: LifecycleSettings;
  /** The docker hosts a worker serves now (Temporal's pollers, or a fresh registration). */
  readonly liveHostIds: () => Promise<ReadonlySet<string>>;
  /** The plane's cap on live sandbox containers (SANDBOXPLANE_MAX_SANDBOXES); {@link DEFAULT_MAX_SANDBOXES} when not given. */
  readonly maxSandboxes?: number;
}

/** What the docker role's lifecycle activities need: the adapters of its engine. */
export interface RuntimeActivityDeps {
  readonly adapters: AdapterRegistry;
}

/** Where placement put a sandbox, or why no host took it (the workflow waits and asks again). */
/** `roomComing`: a host that could take it is still starting or ending sandboxes, so the wait goes on (host-repository.ts). */
export type PlacementResult = { readonly placement: Placement } | { readonly refused: string; readonly roomComing?: boolean };

export interface ScreeningResult {
  readonly decision: Decision;
  readonly settings: LifecycleSettings;
  /** The state the projection now shows. */
  readonly state: SandboxState;
  /** Where an allowed sandbox was placed in the same transaction, when it was asked to be and a host had room. */
  readonly placement?: Placement;
  /** A fork's family, as the store recorded it. */
  readonly lineage?: Lineage;
}

/** What placing a sandbox records: its `placed` audit row, numbered by the workflow. */
export interface PlacementRequest {
  readonly adapter: AdapterName;
  readonly operation: OperationRecord;
}

/** How many looks it takes to call an emulator dead that still runs but does not answer, and the pause between them (one whose container stopped is dead at the first). */
const HEALTH_CONFIRMATIONS = 3;
const HEALTH_CONFIRMATION_PAUSE_MS = 2_000;

/** The health watch's answer about one sandbox, with a read of its containers' usage taken on the way (DESIGN §19). */
export interface HealthCheck {
  readonly healthy: boolean;
  readonly detail: string;
  /** Absent when the read failed: usage is never worth a health verdict. */
  readonly usage?: readonly ContainerUsage[];
}

/** What teardown reports, with its containers' usage read just before they went. */
export interface TeardownReport extends DestroyReport {
  readonly usage?: readonly ContainerUsage[];
}

/** The usage of the sandbox's running containers; `undefined` when it could not be read (logged): a read never fails a look or a teardown. */
async function usageOf(adapter: CloudEmulatorAdapter, sandboxId: string, runtime: RuntimeHandle | null | undefined): Promise<readonly ContainerUsage[] | undefined> {
  try {
    return await adapter.usage(sandboxId, runtime);
  } catch (err) {
    log.warn('usage of the sandbox could not be read', { sandboxId, error: String(err) });
    return undefined;
  }
}

function adapterContext(): AdapterContext {
  const context = Context.current();
  return { heartbeat: (details) => context.heartbeat(details), cancelled: context.cancellationSignal };
}

/** The resources of the sandbox's CloudFormation stacks, when its emulator has CloudFormation; none otherwise. */
async function stackResourcesOf(adapter: CloudEmulatorAdapter, sandboxId: string, runtime: RuntimeHandle | null | undefined): Promise<StackResourceRow[]> {
  if (adapter.iacAccess === undefined) return [];
  let access;
  try {
    access = await adapter.iacAccess(sandboxId, runtime);
  } catch (err) {
    // An emulator image that cannot say which types it creates still lists its resources.
    if (isSandboxPlaneError(err) && err.code === 'ADAPTER_UNAVAILABLE') return [];
    throw err;
  }
  const stacks = new CloudFormationStacks(access);
  try {
    return await stacks.allStackResources();
  } finally {
    stacks.close();
  }
}

/** The snapshot a fork starts from, when its principal holds it. */
function sourceOf(store: Store, request: IdentifiedRequest): { source?: SnapshotSource } {
  const source = request.fromSnapshot === undefined ? undefined : store.snapshots.find(request.fromSnapshot, request.principal);
  return source === undefined ? {} : { source };
}

function adapterFor(adapters: AdapterRegistry, name: AdapterName): CloudEmulatorAdapter {
  const adapter = adapters[name];
  if (adapter === undefined) throw new SandboxPlaneError('ADAPTER_UNAVAILABLE', `this worker does not run the ${name} adapter`);
  return adapter;
}

/** Adapters some registered docker host runs: what screening may grant. */
function registeredAdapters(store: Store): AdapterName[] {
  const offered = new Set(store.hosts.list().flatMap((host) => host.adapters));
  return ADAPTER_NAMES.filter((name) => offered.has(name));
}

/**
 * The lifecycle's activities on the store role: screening, audit rows and placement.
 * Projection writes are keyed by workflow id, run and step, so a retried activity
 * records nothing twice.
 */
export function createProjectionActivities(deps: ProjectionActivityDeps) {
  const { store } = deps;

  /** The screening verdict, recorded at `step` (or read back when a retry finds it there); call inside a transaction. */
  function screenRecorded(input: {
    snapshot: SandboxSnapshot;
    request: IdentifiedRequest;
    step: number;
    runId?: string;
    nextStates: Readonly<Record<PolicyEffect, SandboxState>>;
  }): ScreeningResult {
    const earlier = store.sandboxes.operation(input.snapshot.workflowId, input.step, input.runId);
    if (earlier !== undefined) {
      const decision = earlier.summary.decision as Decision;
      const lineage = earlier.summary.lineage as Lineage | undefined;
      return { decision, settings: deps.lifecycle, state: input.nextStates[decision.effect], ...(lineage !== undefined ? { lineage } : {}) };
    }
    const source = sourceOf(store, input.request);
    const decision = screenRequest({
      request: input.request,
      flags: deps.flags,
      policies: store.policies.list(),
      liveSandboxes: store.sandboxes.countLive(input.request.principal, input.request.id),
      dailyUsage: store.usage.today(input.request.principal),
      availableAdapters: registeredAdapters(store),
      ttl: deps.lifecycle,
      ...source,
    });
    const state = input.nextStates[decision.effect];
    // A fork's family is the store's to say (DESIGN §15): the snapshot's sandbox, and its root.
    const lineage = decision.effect !== 'deny' && source.source !== undefined ? store.sandboxes.recordLineage(input.request.id, source.source.sandboxId) : undefined;
    store.sandboxes.record(
      { ...input.snapshot, state },
      {
        runId: input.runId,
        step: input.step,
        action: 'screened',
        actor: 'policy',
        effect: decision.effect,
        reason: decision.reasons.join('; '),
        summary: { decision, ...(lineage !== undefined ? { lineage } : {}) },
      },
    );
    log.info('request screened', { sandboxId: input.request.id, effect: decision.effect, code: decision.code });
    return { decision, settings: deps.lifecycle, state, ...(lineage !== undefined ? { lineage } : {}) };
  }

  /**
   * Places a screened sandbox on the least-loaded live docker host with room for its
   * adapter and records it (the row's host and a `placed` audit row, once); call inside a
   * transaction. No room anywhere is an answer, not an error: the workflow waits and asks again.
   */
  function placeRecorded(snapshot: SandboxSnapshot, request: PlacementRequest, liveHostIds: ReadonlySet<string>): PlacementResult {
    const placed = store.hosts.place({ sandboxId: snapshot.id, adapter: request.adapter, liveHostIds, maxSandboxes: deps.maxSandboxes ?? DEFAULT_MAX_SANDBOXES });
    if ('refused' in placed) return placed;
    if (placed.fresh) {
      const { placement } = placed;
      store.sandboxes.appendAudit(snapshot.id, snapshot.workflowId, {
        ...request.operation,
        reason: `placed on docker host ${placement.hostId}`,
        summary: { ...request.operation.summary, hostId: placement.hostId, taskQueue: placement.taskQueue },
      });
      log.info('sandbox placed', { sandboxId: snapshot.id, hostId: placement.hostId });
    }
    return { placement: placed.placement };
  }

  return {
    /** A sandbox's expiry while it has not ended, `null` once it has: what caps a fork's extension by its root's (DESIGN §15). */
    async liveExpiry(input: { sandboxId: string }): Promise<string | null> {
      return withTaxonomy(() => store.sandboxes.liveExpiry(input.sandboxId));
    },

    /** Writes the snapshot and several audit rows in one transaction (a teardown's `destroying` and its outcome). */
    async recordTransitions(input: { snapshot: SandboxSnapshot; operations: readonly OperationRecord[] }): Promise<void> {
      return withTaxonomy(() =>
        store.sandboxes.atomically(() => {
          for (const operation of input.operations) {
            // A row written the first time: READY starts a live stretch, a pause or teardown ends it (DESIGN §19).
            if (!store.sandboxes.record(input.snapshot, operation)) continue;
            const usage = usageReportOfAudit(input.snapshot, operation, Date.now());
            if (usage !== undefined) store.usage.record(usage);
          }
        }),
      );
    },

    /**
     * Records a new request and screens it against flags, policy rows, the catalog,
     * TTL rules and the principal's quota — in one write transaction, so two requests
     * racing for the last quota slot cannot both win. The row is written in the state
     * the workflow chose for the verdict's effect. A retry returns the first verdict; an
     * id that belongs to an earlier sandbox is IDEMPOTENCY_CONFLICT, with nothing written.
     * With `placement`, an allowed sandbox is also placed in that transaction when a host
     * has room: one round trip less before it provisions (docs/performance.md, P2).
     */
    async screenNewRequest(input: {
      snapshot: SandboxSnapshot;
      request: IdentifiedRequest;
      requested: OperationRecord;
      step: number;
      nextStates: Readonly<Record<PolicyEffect, SandboxState>>;
      placement?: PlacementRequest;
    }): Promise<ScreeningResult> {
      // Which hosts are live is Temporal's to say; when it cannot, the workflow places the sandbox itself afterwards.
      const liveHostIds = input.placement === undefined ? undefined : await deps.liveHostIds().catch(() => undefined);
      return withTaxonomy(() =>
        store.sandboxes.atomically((): ScreeningResult => {
          store.sandboxes.record(input.snapshot, input.requested);
          const screening = screenRecorded({ ...input, runId: input.requested.runId });
          if (input.placement === undefined || liveHostIds === undefined || screening.decision.effect !== 'allow') return screening;
          const placed = placeRecorded(input.snapshot, input.placement, liveHostIds);
          return 'placement' in placed ? { ...screening, placement: placed.placement } : screening;
        }),
      );
    },

    /**
     * Whether an approval carries proof (DESIGN §12): `approver` is listed now and `code`
     * is their current TOTP code, not used before. `use` names this approval, so a retry
     * of the same check is not taken for a replayed code.
     */
    async verifyApproval(input: { approver: string; code: string | null; use: string }): Promise<ApprovalProof> {
      return withTaxonomy(() => store.sandboxes.atomically(() => verifyApprovalCode(store, deps.secrets, input)));
    },

    /** Places a screened sandbox (see placeRecorded) in a transaction of its own: after an approval, or when placing at screening found no room. */
    async placeSandbox(input: { snapshot: SandboxSnapshot; adapter: AdapterName; operation: OperationRecord }): Promise<PlacementResult> {
      const liveHostIds = await deps.liveHostIds();
      return withTaxonomy(() => store.sandboxes.atomically(() => placeRecorded(input.snapshot, input, liveHostIds)));
    },
  };
}

/**
 * The lifecycle's activities on a docker host: the runtime of each sandbox placed
 * there, through that engine's adapters.
 */
export function createRuntimeActivities(deps: RuntimeActivityDeps) {
  return {
    /** Provisions through the sandbox's adapter; idempotent, so a retry adopts what the first try made. */
    async provisionSandbox(input: { sandboxId: string; adapter: AdapterName; services: readonly string[]; labels: Readonly<Record<string, string>> }): Promise<RuntimeHandle> {
      return withTaxonomy(async () => {
        const adapter = adapterFor(deps.adapters, input.adapter);
        const plan = adapter.launchPlan({ sandboxId: input.sandboxId, services: input.services, labels: input.labels });
        const provisioned = await adapter.provision(plan, adapterContext());
        log.info('sandbox provisioned', { sandboxId: input.sandboxId, endpoint: provisioned.endpoint });
        return provisioned;
      });
    },

    /**
     * Whether the sandbox's emulator still serves (the health watch). An unhealthy answer
     * is confirmed by looking again a few times, so one slow probe is not a death.
     */
    async checkSandboxHealth(input: { sandboxId: string; adapter: AdapterName; runtime?: RuntimeHandle | null }): Promise<HealthCheck> {
      return withTaxonomy(async () => {
        const adapter = adapterFor(deps.adapters, input.adapter);
        let report = await adapter.health(input.sandboxId, input.runtime);
        for (let look = 1; !report.healthy && report.certain !== true && look < HEALTH_CONFIRMATIONS; look += 1) {
          await sleep(HEALTH_CONFIRMATION_PAUSE_MS);
          report = await adapter.health(input.sandboxId, input.runtime);
        }
        if (!report.healthy) log.warn('sandbox emulator unhealthy', { sandboxId: input.sandboxId, detail: report.detail });
        const usage = report.healthy ? await usageOf(adapter, input.sandboxId, input.runtime) : undefined;
        return { healthy: report.healthy, detail: report.detail, ...(usage !== undefined ? { usage } : {}) };
      });
    },

    /**
     * What the sandbox holds, asked of its emulator. A service that could not be listed
     * makes it an error carrying the partial listing (see completeResources): retried only
     * when an API call failed, never for a service that cannot be listed at all.
     */
    async listSandboxResources(input: { sandboxId: string; adapter: AdapterName; services: readonly string[]; runtime?: RuntimeHandle | null }): Promise<ResourceRef[]> {
      return withTaxonomy(async () => {
        const adapter = adapterFor(deps.adapters, input.adapter);
        const listing = await adapter.listResources(input.sandboxId, input.services, input.runtime);
        const stacks = await stackResourcesOf(adapter, input.sandboxId, input.runtime);
        return completeResources({ ...listing, resources: withStackResources(listing.resources, stacks) });
      });
    },

    /**
     * Tears down everything of the sandbox and reports what, if anything, remained, and the
     * usage of its containers read just before they went (DESIGN §19).
     */
    async destroySandbox(input: { sandboxId: string; adapter: AdapterName; runtime?: RuntimeHandle | null }): Promise<TeardownReport> {
      return withTaxonomy(async () => {
        const adapter = adapterFor(deps.adapters, input.adapter);
        const usage = await usageOf(adapter, input.sandboxId, input.runtime);
        const report = await adapter.destroy(input.sandboxId, adapterContext(), input.runtime);
        log.info('sandbox destroyed', { sandboxId: input.sandboxId, removed: report.removed.length, remaining: report.remaining.length });
        return { ...report, ...(usage !== undefined ? { usage } : {}) };
      });
    },
  };
}
