import type { Client } from '@temporalio/client';
import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import type { ContainerBroker } from '../docker';
import type { FeatureFlags } from '../domain/feature-flags';
import type { LifecycleSettings } from '../domain/lifecycle-settings';
import type { SecretBox } from '../crypto/secret-box';
import type { Store } from '../store';
import type { HostDirectory } from '../store/host-directory';
import { createCleanupActivities, createHostSweepActivities, createProjectionSweepActivities } from './cleanup-activities';
import { createStoreCommandActivities } from './store-command-activities';
import { createLifecycleActivities, createProjectionActivities, createRuntimeActivities } from './lifecycle-activities';
import { createWarmPoolActivities, type WarmPoolReporter } from './warm-pool-activities';
import { createWorkerHealthActivities } from './worker-health-activities';

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
}

/** What a docker role's activities need: its engine and the adapters on it. */
export interface DockerRoleDeps {
  readonly adapters: AdapterRegistry;
  readonly broker: ContainerBroker;
  /** This worker's plane id (SANDBOXPLANE_PLANE_ID or derived from Temporal), as its containers are labelled. */
  readonly plane: string;
  /** The host's warm pools, when it keeps any (DESIGN §13). */
  readonly warmPools?: WarmPoolReporter;
}

/** Everything the activities of all roles need, wired by the worker (real parts) or by tests. */
export type ActivityDeps = StoreRoleDeps & DockerRoleDeps;

/** The store role's activities, on `<tq>-store`. */
export function createStoreActivities(deps: StoreRoleDeps) {
  return {
    ...createWorkerHealthActivities(deps),
    ...createProjectionActivities({ ...deps, liveHostIds: () => deps.hosts.liveHostIds() }),
    ...createProjectionSweepActivities(deps),
    ...createStoreCommandActivities(deps),
  };
}

/** A docker role's activities, on `<tq>-docker-<hostId>`. */
export function createDockerActivities(deps: DockerRoleDeps) {
  return { ...createRuntimeActivities(deps), ...createHostSweepActivities(deps), ...createWarmPoolActivities(deps) };
}

/**
 * Every activity, as one worker running all roles registers them on the lifecycle queue
 * too: runs that started before worker roles schedule everything there. Workflows see
 * only the type.
 */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createWorkerHealthActivities(deps),
    ...createLifecycleActivities({ ...deps, liveHostIds: () => deps.hosts.liveHostIds() }),
    ...createCleanupActivities(deps),
    ...createStoreCommandActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
