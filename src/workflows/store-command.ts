import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure, workflowInfo } from '@temporalio/workflow';
import { isErrorCode, NON_RETRYABLE_ERROR_TYPES } from '../domain/error-codes';
import { MAX_EVENT_WAIT_SECONDS } from '../domain/event-query';
import { RETRY_SAFE_KINDS, type StoreCommandActivities, type StoreCommandInput } from '../domain/store-commands';
import { storeQueue } from '../domain/task-queues';

/** How long a command waits for a store worker to take it: long enough for a busy one, short enough that a caller hears why. */
const STORE_PICKUP_TIMEOUT = '15 seconds';

/** What a caller does when no store worker answers. */
const START_STORE_WORKER = 'start one (`sandboxctl worker --role store` or `sandboxctl worker`)';

/** How long a command may wait in the store for something to happen (an events read that follows), at most MAX_EVENT_WAIT_SECONDS. */
function waitSecondsOf(command: StoreCommandInput): number {
  const wait = command.kind === 'events' ? Number(command.waitSeconds ?? 0) : 0;
  return Number.isFinite(wait) ? Math.min(Math.max(Math.trunc(wait), 0), MAX_EVENT_WAIT_SECONDS) : 0;
}

function storeActivities(queue: string, retrySafe: boolean, waitSeconds: number): StoreCommandActivities {
  return proxyActivities<StoreCommandActivities>({
    taskQueue: queue,
    scheduleToStartTimeout: STORE_PICKUP_TIMEOUT,
    // A waiting read gets its wait on top (the caller's execution timeout grows by as much).
    startToCloseTimeout: `${10 + waitSeconds} seconds`,
    // Below the caller's 30 s execution timeout, so the caller hears this workflow's verdict.
    scheduleToCloseTimeout: `${25 + waitSeconds} seconds`,
    retry: retrySafe ? { maximumAttempts: 3, initialInterval: '500 milliseconds', nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES] } : { maximumAttempts: 1 },
  });
}

/**
 * One caller's read or write of the store (policy, approvers, audit, leaks, hosts), run
 * by the store role on `<tq>-store`. Each policy change is thus its own durable,
 * visible execution; a taxonomy failure of the store reaches the caller with its code.
 */
export async function storeCommand(command: StoreCommandInput): Promise<unknown> {
  const queue = storeQueue(workflowInfo().taskQueue);
  const { runStoreCommand } = storeActivities(queue, RETRY_SAFE_KINDS.has(command.kind), waitSecondsOf(command));
  try {
    return await runStoreCommand(command);
  } catch (err) {
    throw storeFailure(err, queue);
  }
}

/** The store's own failure with its code and hint, or STORE_UNAVAILABLE when no store worker took or finished the command. */
function storeFailure(err: unknown, queue: string): ApplicationFailure {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && isErrorCode(cause.type)) {
    return ApplicationFailure.create({ type: cause.type, message: cause.message, nonRetryable: true, details: cause.details ?? [] });
  }
  if (cause instanceof TimeoutFailure) {
    const message =
      cause.timeoutType === 'SCHEDULE_TO_START'
        ? `no store worker polls ${queue}; ${START_STORE_WORKER}`
        : `the store worker on ${queue} did not finish the command in time (${cause.timeoutType}); check its log, or ${START_STORE_WORKER}`;
    return ApplicationFailure.create({
      type: 'STORE_UNAVAILABLE',
      message,
      nonRetryable: true,
      details: [{ code: 'STORE_UNAVAILABLE', hint: `Start a store worker: \`sandboxctl worker --role store\` (or \`sandboxctl worker\`, all roles) polls ${queue}.` }],
    });
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  return ApplicationFailure.create({ type: 'INTERNAL', message: `the store command failed: ${message}`, nonRetryable: true });
}
