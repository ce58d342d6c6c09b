import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { DockerActivities, StoreActivities } from '../activities';
import { storeQueue } from '../domain/task-queues';

/** Activities a report may ask of every docker host: short reads that take no arguments. */
type HostQuestion = 'describeWarmPools' | 'readMemoryInUse';

/**
 * Asks every live docker host one question now (`sandboxctl pools`, `sandboxctl hosts`):
 * the store role names the hosts, each host's docker worker answers for its own engine.
 * A host whose worker does not pick the question up within a few seconds, or fails it,
 * is named in `unanswered`, and the others still answer.
 */
export async function askLiveHosts<Q extends HostQuestion>(question: Q): Promise<{ answers: { hostId: string; answer: Awaited<ReturnType<DockerActivities[Q]>> }[]; unanswered: string[] }> {
  const { sweepHosts } = proxyActivities<Pick<StoreActivities, 'sweepHosts'>>({
    taskQueue: storeQueue(workflowInfo().taskQueue),
    scheduleToStartTimeout: '15 seconds',
    startToCloseTimeout: '10 seconds',
    retry: { maximumAttempts: 2 },
  });
  const live = (await sweepHosts()).filter((host) => host.live);
  const outcomes = await Promise.allSettled(
    live.map((host) =>
      (
        proxyActivities<Pick<DockerActivities, HostQuestion>>({
          taskQueue: host.taskQueue,
          scheduleToStartTimeout: '5 seconds',
          startToCloseTimeout: '10 seconds',
          retry: { maximumAttempts: 1 },
        })[question] as () => Promise<Awaited<ReturnType<DockerActivities[Q]>>>
      )(),
    ),
  );
  return {
    answers: live.flatMap((host, index) => {
      const outcome = outcomes[index];
      return outcome?.status === 'fulfilled' ? [{ hostId: host.hostId, answer: outcome.value }] : [];
    }),
    unanswered: live.filter((_, index) => outcomes[index]?.status === 'rejected').map((host) => host.hostId),
  };
}
