import { optionalTsToDate } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import type { WorkflowService } from '@temporalio/client';

/**
 * A worker long-polls its queue and comes back at least once a minute; Temporal keeps
 * the time of each poller's last poll. A queue nobody has polled for longer than this
 * has no live worker (Temporal, not our own bookkeeping, says what is alive).
 */
export const POLLER_SILENCE_LIMIT_MS = 90_000;

/** One worker polling a queue, as Temporal describes it. */
export interface QueuePoller {
  readonly identity: string;
  readonly lastAccessTime: Date | null;
  /** The Worker Versioning build it polls for (DESIGN §16); `null` for a worker without one. */
  readonly build: { readonly deployment: string; readonly buildId: string } | null;
}

/** The pollers Temporal has seen on an activity (or workflow) task queue lately. */
export async function queuePollers(service: WorkflowService, namespace: string, taskQueue: string, type: 'activity' | 'workflow' = 'activity'): Promise<QueuePoller[]> {
  const { pollers } = await service.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: type === 'activity' ? temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY : temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (pollers ?? []).map(({ identity, lastAccessTime, deploymentOptions }) => ({
    identity: identity ?? '',
    lastAccessTime: optionalTsToDate(lastAccessTime) ?? null,
    build: deploymentOptions?.buildId ? { deployment: deploymentOptions.deploymentName ?? '', buildId: deploymentOptions.buildId } : null,
  }));
}

/** The most recent poll among `pollers`, and whether it is recent enough to count as live. */
export function lastPoll(pollers: readonly QueuePoller[], nowMs: number = Date.now()): { lastSeenAt: Date | null; live: boolean } {
  const times = pollers.map((poller) => poller.lastAccessTime?.getTime() ?? 0).filter((ms) => ms > 0);
  if (times.length === 0) return { lastSeenAt: null, live: false };
  const latest = Math.max(...times);
  return { lastSeenAt: new Date(latest), live: nowMs - latest <= POLLER_SILENCE_LIMIT_MS };
}
