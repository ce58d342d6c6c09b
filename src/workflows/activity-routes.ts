import { ActivityCancellationType, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { DockerActivities, StoreActivities } from '../activities';
import { NON_RETRYABLE_ERROR_TYPES } from '../domain/error-codes';
import type { Placement } from '../domain/hosts';
import { storeQueue } from '../domain/task-queues';

/**
 * Where a lifecycle's activities go (DESIGN §10): the projection to the store role's
 * queue, the runtime to the queue of the docker host the sandbox was placed on.
 */

const nonRetryableErrorTypes = [...NON_RETRYABLE_ERROR_TYPES];

// A bounded retry (about two minutes): a projection that stays down costs audit rows
// their timeliness, never the lifecycle — see AuditJournal.
const PROJECTION_OPTIONS = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 8, nonRetryableErrorTypes },
} as const;

const RUNTIME_OPTIONS = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  // On cancellation, wait until a provision has really stopped: tearing down while it
  // still runs would let it create a container after the teardown.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  // About two minutes of retries (2, 4, 8, 16, then 20 s apart): a Docker engine restart
  // is ridden out, not turned into a FAILED sandbox. Refusals (non-retryable) stop at once.
  retry: { initialInterval: '2 seconds', maximumInterval: '20 seconds', maximumAttempts: 10, nonRetryableErrorTypes },
} as const;

/**
 * A short look at a sandbox's runtime (the health watch, the resource listing), tried
 * twice at most: an unanswered health look is "unknown", never a death, and a caller
 * asking for resources hears in seconds, not after the runtime's two-minute budget.
 */
const BRIEF_LOOK_OPTIONS = {
  startToCloseTimeout: '45 seconds',
  // A host whose worker is gone never picks the look up: no answer is an answer ("unknown").
  scheduleToStartTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', maximumAttempts: 2, nonRetryableErrorTypes },
} as const;

export interface HostActivities {
  readonly runtime: DockerActivities;
  readonly briefLook: DockerActivities;
}

// Proxies are made per call rather than cached in module state: they are plain objects,
// and module state would live as long as the worker's workflow cache keeps the run.

/** The store role's activities, on `<tq>-store` of this workflow's queue. */
export function storeActivities(): StoreActivities {
  return proxyActivities<StoreActivities>({ ...PROJECTION_OPTIONS, taskQueue: storeQueue(workflowInfo().taskQueue) });
}

/** The activities of the docker host a sandbox was placed on: its whole runtime budget, or a brief look. */
export function hostActivities(placement: Placement): HostActivities {
  const { taskQueue } = placement;
  return {
    runtime: proxyActivities<DockerActivities>({ ...RUNTIME_OPTIONS, taskQueue }),
    briefLook: proxyActivities<DockerActivities>({ ...BRIEF_LOOK_OPTIONS, taskQueue }),
  };
}
