import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import type { DockerActivities, TargetActivities } from '../activities';
import { NON_RETRYABLE_ERROR_TYPES } from '../domain/error-codes';

/**
 * Where an IaC run's steps go: the queue of the docker host its sandbox runs on, or the
 * targets queue (DESIGN §10, §14). Both serve the same IaC activities.
 */

type IacSteps = TargetActivities;

const nonRetryableErrorTypes = [...NON_RETRYABLE_ERROR_TYPES];

/** How long a step may wait for a worker to take it: no docker or targets worker serving the queue is an answer, not a wait of days. */
export const STEP_PICKUP = '2 minutes';

/**
 * Planning and checking: each retried for about two minutes (a Docker, emulator or network
 * blip is ridden out); a step beats, so one whose worker died is tried again in seconds.
 */
const PLANNING_OPTIONS = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  scheduleToStartTimeout: STEP_PICKUP,
  retry: { initialInterval: '2 seconds', maximumInterval: '20 seconds', maximumAttempts: 8, nonRetryableErrorTypes },
} as const;

/** Planning and checking a change. */
export function planningSteps(taskQueue: string): IacSteps {
  return proxyActivities<IacSteps>({ taskQueue, ...PLANNING_OPTIONS });
}

/** Waiting for the stack to settle: heartbeats carry its events, the wait itself is bounded in the activity. */
export function settleStep(taskQueue: string): IacSteps {
  return proxyActivities<IacSteps>({
    taskQueue,
    startToCloseTimeout: '15 minutes',
    heartbeatTimeout: '30 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '2 seconds', maximumInterval: '20 seconds', maximumAttempts: 5, nonRetryableErrorTypes },
  });
}

/**
 * Executing the change set: an attempt first asks whether an earlier one executed it (its
 * execution status), so a retry after a lost answer never executes twice.
 */
export function executeStep(taskQueue: string): IacSteps {
  return proxyActivities<IacSteps>({
    taskQueue,
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '30 seconds',
    retry: { initialInterval: '5 seconds', maximumAttempts: 3, nonRetryableErrorTypes },
  });
}

/** A sandbox's checkpoint around an apply (DESIGN §14, §15): taken and put back by its host's docker worker. */
export type CheckpointSteps = Pick<DockerActivities, 'captureSnapshot' | 'restoreSnapshot'>;

/** Taking and putting back a checkpoint: retried like planning; a replay heartbeats as it goes. */
export function checkpointSteps(taskQueue: string): CheckpointSteps {
  return proxyActivities<CheckpointSteps>({ taskQueue, ...PLANNING_OPTIONS });
}
