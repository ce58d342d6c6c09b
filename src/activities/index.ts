import { createWorkerHealthActivities, type WorkerHealthDeps } from './worker-health-activities';

/** Everything the activities need, wired by the worker (real parts) or by tests. */
export type ActivityDeps = WorkerHealthDeps;

/** Builds every activity the worker registers; workflows see only the type. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createWorkerHealthActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
