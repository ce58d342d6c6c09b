import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { StoreActivities } from '../activities';
import type { RoundTripInput, RoundTripResult } from '../domain/round-trip';
import { storeQueue } from '../domain/task-queues';

/**
 * Proves end to end that a lifecycle worker polls our task queue (it runs this) and the
 * store worker polls `<tq>-store` and can reach its file (it answers the activity).
 */
export async function roundTrip(input: RoundTripInput): Promise<RoundTripResult> {
  const { reportWorkerHealth } = proxyActivities<StoreActivities>({
    taskQueue: storeQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '10 seconds',
    retry: { maximumAttempts: 3 },
  });
  const health = await reportWorkerHealth();
  return { ...health, requestedBy: input.requestedBy, workflowId: workflowInfo().workflowId };
}
