import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { StoreActivities } from '../activities';
import { storeQueue } from '../domain/task-queues';
import type { WarmPoolActivities, WarmPoolReport } from '../domain/warm-pool';

/**
 * Asks every live docker host about its warm pools (DESIGN §13): the store role names
 * the hosts, each host's docker worker counts its own containers. A host whose worker
 * does not pick the question up within a few seconds is named in `unanswered`.
 */
export async function warmPoolReport(): Promise<WarmPoolReport> {
  const { sweepHosts } = proxyActivities<Pick<StoreActivities, 'sweepHosts'>>({
    taskQueue: storeQueue(workflowInfo().taskQueue),
    scheduleToStartTimeout: '15 seconds',
    startToCloseTimeout: '10 seconds',
    retry: { maximumAttempts: 2 },
  });
  const live = (await sweepHosts()).filter((host) => host.live);
  const answers = await Promise.allSettled(
    live.map((host) =>
      proxyActivities<WarmPoolActivities>({
        taskQueue: host.taskQueue,
        scheduleToStartTimeout: '5 seconds',
        startToCloseTimeout: '10 seconds',
        retry: { maximumAttempts: 1 },
      }).describeWarmPools(),
    ),
  );
  return {
    pools: answers.flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : [])),
    unanswered: live.filter((_, index) => answers[index]?.status === 'rejected').map((host) => host.hostId),
  };
}
