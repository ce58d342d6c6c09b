import type { Client } from '@temporalio/client';
import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import type { ContainerBroker } from '../docker';
import type { FeatureFlags } from '../domain/feature-flags';
import type { LifecycleSettings } from '../domain/lifecycle-settings';
import type { Store } from '../store';
import { createCleanupActivities } from './cleanup-activities';
import { createLifecycleActivities } from './lifecycle-activities';
import { createWorkerHealthActivities } from './worker-health-activities';

/** Everything the activities need, wired by the worker (real parts) or by tests. */
export interface ActivityDeps {
  readonly store: Store;
  readonly workerIdentity: string;
  readonly adapters: AdapterRegistry;
  readonly broker: ContainerBroker;
  readonly flags: FeatureFlags;
  readonly lifecycle: LifecycleSettings;
  /** A Temporal client, for the sweep's visibility queries. */
  readonly client: Client;
  /** This worker's plane id (SANDBOXPLANE_PLANE_ID or derived from Temporal), as its containers are labelled. */
  readonly plane: string;
}

/** Builds every activity the worker registers; workflows see only the type. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createWorkerHealthActivities(deps),
    ...createLifecycleActivities(deps),
    ...createCleanupActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
