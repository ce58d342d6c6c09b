import type { Client } from '@temporalio/client';
import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import type { ContainerBroker, NetworkPoolSource } from '../docker';
import type { FeatureFlags } from '../domain/feature-flags';
import type { LifecycleSettings } from '../domain/lifecycle-settings';
import type { ParameterSeal } from '../crypto/parameter-seal';
import type { SecretBox } from '../crypto/secret-box';
import type { SnapshotQuota } from '../domain/snapshots';
import type { SnapshotContents } from './snapshot-contents';
import type { Store } from '../store';
import type { HostDirectory } from '../store/host-directory';
import { createHostSweepActivities, createProjectionSweepActivities } from './cleanup-activities';
import { createHostMemoryActivities } from './host-memory-activities';
import { createIacActivities, sandboxAccess, targetAccess } from './iac-activities';
import { createIacStoreActivities } from './iac-store-activities';
import { createSnapshotRuntimeActivities, createSnapshotStoreActivities } from './snapshot-activities';
import { createStoreCommandActivities } from './store-command-activities';
import { createUsageActivities } from './usage-activities';
import { createProjectionActivities, createRuntimeActivities } from './lifecycle-activities';
import { createWarmPoolActivities, type WarmPoolReporter } from './warm-pool-activities';
import { createWorkerHealthActivities } from './worker-health-activities';
import { createWebhookActivities } from './webhook-activities';

/** What the store role's activities need (DESIGN §10): the projection and Temporal. */
export interface StoreRoleDeps {
  readonly store: Store;
  readonly workerIdentity: string;
  readonly flags: FeatureFlags;
  readonly lifecycle: LifecycleSettings;
  /** A Temporal client, for the sweep's visibility queries. */
  readonly client: Client;
  /** The docker host registry, with Temporal's word on which hosts are live. */
  readonly hosts: HostDirectory & { liveHostIds(): Promise<ReadonlySet<string>> };
  /** The plane's cap on live sandbox containers (SANDBOXPLANE_MAX_SANDBOXES). */
  readonly maxSandboxes?: number;
  /** The store's key for approvers' TOTP secrets (SANDBOXPLANE_STORE_KEY_FILE). */
  readonly secrets: SecretBox;
  /** What each principal may keep of snapshots (SANDBOXPLANE_SNAPSHOT_QUOTA, _QUOTA_BYTES, _MAX_AGE); the defaults when left out. */
  readonly snapshotQuota?: SnapshotQuota;
  /** Snapshot content (SANDBOXPLANE_SNAPSHOT_DIR), which the store removes with the last snapshot that holds it. */
  readonly contents: SnapshotContents;
}

/** What a docker role's activities need: its engine and the adapters on it. */
export interface DockerRoleDeps {
  readonly adapters: AdapterRegistry;
  readonly broker: ContainerBroker;
  /** This worker's plane id (SANDBOXPLANE_PLANE_ID or derived from Temporal), as its containers are labelled. */
  readonly plane: string;
  /** How many orphans this host's sweep removes at once (SANDBOXPLANE_SWEEP_REMOVE_CONCURRENCY); the default when left out. */
  readonly sweepRemoveConcurrency?: number;
  /** The host's warm pools, when it keeps any (DESIGN §13). */
  readonly warmPools?: WarmPoolReporter;
  /** The host's pre-made sealed networks, when it keeps any (DESIGN §12): the sweep leaves those it holds. */
  readonly networkPool?: Pick<NetworkPoolSource, 'holds'>;
  /** Opens the NoEcho parameter values an IaC run carries sealed (the payload codec's keys). */
  readonly parameterSeal: ParameterSeal;
  /** Snapshot content (SANDBOXPLANE_SNAPSHOT_DIR), which this host writes when it captures and reads when it restores. */
  readonly contents: SnapshotContents;
  /** The most one snapshot holds, compressed (SANDBOXPLANE_SNAPSHOT_MAX_BYTES); the default when left out. */
  readonly snapshotMaxBytes?: number;
}

export type { AppliedChange, IacPlace, PlannedChange } from './iac-activities';
export type { ApprovalProof } from './approver-proof';

/** The store role's activities, on `<tq>-store`. */
export function createStoreActivities(deps: StoreRoleDeps) {
  return {
    ...createWorkerHealthActivities(deps),
    ...createProjectionActivities({ ...deps, liveHostIds: () => deps.hosts.liveHostIds() }),
    ...createProjectionSweepActivities(deps),
    ...createStoreCommandActivities(deps),
    ...createIacStoreActivities(deps),
    ...createSnapshotStoreActivities(deps),
    ...createWebhookActivities(deps),
    ...createUsageActivities(deps),
  };
}

/** A docker role's activities, on `<tq>-docker-<hostId>`. */
export function createDockerActivities(deps: DockerRoleDeps) {
  return {
    ...createRuntimeActivities(deps),
    ...createHostSweepActivities(deps),
    ...createWarmPoolActivities(deps),
    ...createHostMemoryActivities(deps),
    ...createIacActivities(sandboxAccess(deps.adapters), deps.parameterSeal),
    ...createSnapshotRuntimeActivities(deps),
  };
}

/** The targets role's activities, on `<tq>-targets`: IaC against operators' targets, with this worker's AWS credential chain. */
export function createTargetActivities(deps: { readonly parameterSeal: ParameterSeal }) {
  return createIacActivities(targetAccess, deps.parameterSeal);
}

/** The targets role's activities, as workflows schedule them on `<tq>-targets`. */
export type TargetActivities = ReturnType<typeof createTargetActivities>;

/** The store role's activities, as workflows schedule them on `<tq>-store`. */
export type StoreActivities = ReturnType<typeof createStoreActivities>;

/** A docker role's activities, as workflows schedule them on `<tq>-docker-<hostId>`. */
export type DockerActivities = ReturnType<typeof createDockerActivities>;
