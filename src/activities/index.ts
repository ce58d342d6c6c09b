import type { AdapterRegistry } from '../adapters/cloud-emulator-adapter';
import type { ContainerBroker } from '../docker';
import type { FeatureFlags } from '../domain/feature-flags';
import type { LifecycleSettings } from '../domain/lifecycle-settings';
import type { Store } from '../store';
import { createDockerActivities } from './docker-activities';
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
}

/** Builds every activity the worker registers; workflows see only the type. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createWorkerHealthActivities(deps),
    ...createLifecycleActivities(deps),
    ...createDockerActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
