import { log } from '@temporalio/activity';
import type { WorkerHealth } from '../domain/round-trip';
import type { Store } from '../store';

export interface WorkerHealthDeps {
  readonly store: Store;
  readonly workerIdentity: string;
}

export function createWorkerHealthActivities(deps: WorkerHealthDeps) {
  return {
    /** Answers the round-trip probe; reads the store so a broken projection shows up. */
    async reportWorkerHealth(): Promise<WorkerHealth> {
      const health: WorkerHealth = {
        workerIdentity: deps.workerIdentity,
        storeSchemaVersion: deps.store.schemaVersion,
        storeCurrent: deps.store.isCurrent,
        checkedAt: new Date().toISOString(),
      };
      log.info('worker health reported', { storeSchemaVersion: health.storeSchemaVersion });
      return health;
    },
  };
}
